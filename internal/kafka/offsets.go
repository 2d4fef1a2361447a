package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// ListOffsets timestamps for the log start and the log end (high watermark).
const (
	listEarliest int64 = -2
	listLatest   int64 = -1
)

func (p *pass) listStartOffsets(ctx context.Context) { p.listOffsets(ctx, listEarliest) }
func (p *pass) listEndOffsets(ctx context.Context)   { p.listOffsets(ctx, listLatest) }

// listOffsets reads log start or log end offsets of every usable partition
// in one raw ListOffsets request, which the client splits into one request
// per partition leader (what kadm.ListStartOffsets does too, but kadm turns
// an authorization error on any partition into an error for the leader's
// whole shard; the raw answer keeps a code per partition). A shard that
// failed is a failure of exactly the partitions it carried.
func (p *pass) listOffsets(ctx context.Context, at int64) {
	what := "log start offset"
	if at == listLatest {
		what = "log end offset"
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = 0 // read_uncommitted: the high watermark
	parts := p.usablePartitions()
	for _, name := range sortedKeys(parts) {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = name
		for _, id := range parts[name] {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition = id
			rp.Timestamp = at
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	if len(req.Topics) == 0 {
		return
	}

	answered := make(map[topicPartition]bool)
	set := func(tp topicPartition, v int64, epoch int32) {
		p.mu.Lock()
		defer p.mu.Unlock()
		ps := p.topics[tp.Topic].partitions[tp.Partition]
		if at == listEarliest {
			ps.logStart = v
		} else {
			// The leader's current epoch with the high watermark
			// (Partition.fetchOffsetForTimestamp, LATEST_TIMESTAMP).
			ps.logEnd, ps.endEpoch = v, epoch
		}
	}
	partitionFailed := func(tp topicPartition, err error) {
		if isAuthorization(err) {
			p.fail(failure{Failure: proof.Failure{
				Reason:    proof.ReasonAuthorizationFailed,
				API:       apiListOffsets,
				Topic:     tp.Topic,
				Partition: tp.Partition,
				Message: fmt.Sprintf("ListOffsets (%s) on %s/%d denied (%s): the principal needs Describe on the topic",
					what, tp.Topic, tp.Partition, kerrName(err)),
			}})
			return
		}
		p.failErr(apiListOffsets, "", tp.Topic, tp.Partition,
			fmt.Sprintf("%s of %s/%d", what, tp.Topic, tp.Partition), err)
	}

	for _, shard := range p.cl.RequestSharded(ctx, req) {
		sreq := shard.Req.(*kmsg.ListOffsetsRequest)
		if shard.Err != nil {
			for _, rt := range sreq.Topics {
				for _, rp := range rt.Partitions {
					tp := topicPartition{Topic: rt.Topic, Partition: rp.Partition}
					answered[tp] = true
					partitionFailed(tp, shard.Err)
				}
			}
			continue
		}
		resp := shard.Resp.(*kmsg.ListOffsetsResponse)
		for _, rt := range resp.Topics {
			if p.topics[rt.Topic] == nil {
				continue
			}
			for _, rp := range rt.Partitions {
				tp := topicPartition{Topic: rt.Topic, Partition: rp.Partition}
				if p.topics[tp.Topic].partitions[tp.Partition] == nil {
					continue
				}
				answered[tp] = true
				if rp.ErrorCode != 0 {
					partitionFailed(tp, kerr.ErrorForCode(rp.ErrorCode))
					continue
				}
				set(tp, rp.Offset, rp.LeaderEpoch)
			}
		}
	}
	for _, name := range sortedKeys(parts) {
		for _, id := range parts[name] {
			tp := topicPartition{Topic: name, Partition: id}
			if !answered[tp] {
				partitionFailed(tp, errors.New("the broker's answer left the partition out"))
			}
		}
	}
}

// fetchCommittedOffsets reads every group's committed offsets for its
// topics' partitions in one raw OffsetFetch request, which the client
// splits into one request per group coordinator, several groups per
// request where the broker allows it (OffsetFetch v8+).
//
// The committed offset is reported raw: never through kadm's lag helpers,
// which clamp a committed offset below the log start up to the log start
// and so hide exactly the loss the proof looks for.
//
// Partitions are named explicitly, and the answer is compared against what
// was asked: a broker answers OffsetFetch only for partitions the principal
// may describe, so a partition missing from the answer is not "no committed
// offset" (which would wave a group through that really lost its offsets)
// but an authorization failure.
func (p *pass) fetchCommittedOffsets(ctx context.Context) {
	req, asked := p.offsetFetchRequest()
	if len(req.Groups) == 0 {
		return
	}
	ans := newOffsetFetchAnswer(asked)
	foldCoordinated(ctx, p, req, offsetFetchGroups, ans.groupFailed,
		func(resp *kmsg.OffsetFetchResponse) { ans.fold(p.topicIDs, resp) })
	for _, rg := range req.Groups {
		ans.leftOut(rg.Group)
	}
	p.mu.Lock()
	for g, offsets := range ans.committed {
		gs := p.groupInfo[g]
		for tp, c := range offsets {
			gs.committed[tp] = c.offset
			if c.offset >= 0 && c.epoch >= 0 {
				gs.epochs[tp] = c.epoch
			}
		}
	}
	p.mu.Unlock()
	for _, f := range ans.failures {
		p.fail(f)
	}
}

// offsetFetchRequest asks every group's committed offsets on the usable
// (or leaderless) partitions of its topics; asked is what it asks.
func (p *pass) offsetFetchRequest() (*kmsg.OffsetFetchRequest, map[string]map[topicPartition]bool) {
	parts := p.usableOrLeaderless()
	req := kmsg.NewPtrOffsetFetchRequest()
	asked := make(map[string]map[topicPartition]bool)
	for _, g := range p.groups {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		asked[g] = make(map[topicPartition]bool)
		topics, tps := p.askedOf(g, parts)
		for _, name := range topics {
			rt := kmsg.NewOffsetFetchRequestGroupTopic()
			rt.Topic, rt.TopicID, rt.Partitions = name, p.topics[name].id, parts[name]
			rg.Topics = append(rg.Topics, rt)
		}
		for _, tp := range tps {
			asked[g][tp] = true
		}
		if len(rg.Topics) > 0 {
			req.Groups = append(req.Groups, rg)
		}
	}
	return req, asked
}

// askedOf is what a per-group request asks of group g: those of its topics
// parts names, and their partitions.
func (p *pass) askedOf(g string, parts map[string][]int32) (topics []string, tps []topicPartition) {
	for _, name := range p.groupTopics[g] {
		ids, ok := parts[name]
		if !ok {
			continue
		}
		topics = append(topics, name)
		for _, id := range ids {
			tps = append(tps, topicPartition{Topic: name, Partition: id})
		}
	}
	return topics, tps
}

func offsetFetchGroups(req *kmsg.OffsetFetchRequest) []string {
	return groupIDs(req.Groups, func(rg kmsg.OffsetFetchRequestGroup) string { return rg.Group })
}

// committedOffset is one partition's committed offset as OffsetFetch
// answered it: proof.NoOffset for none, and the commit's leader epoch
// (v5+; -1 for none, and before v5): the epoch.go step asks where it ends.
type committedOffset struct {
	offset int64
	epoch  int32
}

// offsetFetchAnswer folds OffsetFetch answers: the committed offsets of
// the partitions asked, and the failures of what was not answered. No I/O.
type offsetFetchAnswer struct {
	asked         map[string]map[topicPartition]bool
	committed     map[string]map[topicPartition]committedOffset
	answered      map[string]map[topicPartition]bool
	groupAnswered map[string]bool
	failures      []failure
}

func newOffsetFetchAnswer(asked map[string]map[topicPartition]bool) *offsetFetchAnswer {
	return &offsetFetchAnswer{
		asked:         asked,
		committed:     make(map[string]map[topicPartition]committedOffset),
		answered:      make(map[string]map[topicPartition]bool),
		groupAnswered: make(map[string]bool),
	}
}

// groupFailed fails a whole group's answer: denied (Describe on the
// group), or err otherwise.
func (a *offsetFetchAnswer) groupFailed(g string, err error) {
	a.groupAnswered[g] = true
	if isAuthorization(err) {
		a.failures = append(a.failures, failure{group: g, Failure: proof.Failure{
			Reason:    proof.ReasonAuthorizationFailed,
			API:       apiOffsetFetch,
			Partition: -1,
			Message: fmt.Sprintf("OffsetFetch for group %s denied (%s): the principal needs Describe on the group; its committed offsets are unknown",
				g, kerrName(err)),
		}})
		return
	}
	a.failures = append(a.failures, errFailure(apiOffsetFetch, g, "", -1, fmt.Sprintf("committed offsets of group %s", g), err))
}

// fold reads one OffsetFetch answer. Kafka answers offsets -1 for a group
// it does not know; some brokers answer GROUP_ID_NOT_FOUND. Either way: no
// committed offset, for every partition asked. A negative offset is none.
// Topics answered by ID only (v10+) are named by topicIDs.
func (a *offsetFetchAnswer) fold(topicIDs map[[16]byte]string, resp *kmsg.OffsetFetchResponse) {
	for _, rg := range resp.Groups {
		asked := a.asked[rg.Group]
		if asked == nil {
			continue
		}
		switch {
		case rg.ErrorCode == kerr.GroupIDNotFound.Code:
			a.groupAnswered[rg.Group] = true
			for tp := range asked {
				setIn(a.committed, rg.Group, tp, committedOffset{proof.NoOffset, -1})
			}
			a.answered[rg.Group] = asked
			continue
		case rg.ErrorCode != 0:
			a.groupFailed(rg.Group, kerr.ErrorForCode(rg.ErrorCode))
			continue
		}
		a.groupAnswered[rg.Group] = true
		if a.answered[rg.Group] == nil {
			a.answered[rg.Group] = make(map[topicPartition]bool)
		}
		for _, rt := range rg.Topics {
			name := rt.Topic
			if name == "" {
				name = topicIDs[rt.TopicID]
			}
			for _, rp := range rt.Partitions {
				tp := topicPartition{Topic: name, Partition: rp.Partition}
				if !asked[tp] {
					continue
				}
				a.answered[rg.Group][tp] = true
				if rp.ErrorCode != 0 {
					a.failures = append(a.failures, offsetFetchPartitionFailure(rg.Group, tp, kerr.ErrorForCode(rp.ErrorCode)))
					continue
				}
				setIn(a.committed, rg.Group, tp, committedOffset{max(rp.Offset, proof.NoOffset), rp.LeaderEpoch})
			}
		}
	}
}

func offsetFetchPartitionFailure(g string, tp topicPartition, err error) failure {
	msg := fmt.Sprintf("committed offset of group %s on %s/%d: %s", g, tp.Topic, tp.Partition, describeError(err))
	if isAuthorization(err) {
		msg = fmt.Sprintf("OffsetFetch for group %s on %s/%d denied (%s): the principal needs Describe on the topic",
			g, tp.Topic, tp.Partition, kerrName(err))
	}
	return failure{group: g, Failure: proof.Failure{
		Reason:    reasonForError(err),
		API:       apiOffsetFetch,
		Topic:     tp.Topic,
		Partition: tp.Partition,
		Message:   msg,
	}}
}

// leftOut fails group g when no answer named it, and each partition asked
// of it that an answer left out: brokers leave out partitions the
// principal may not describe.
func (a *offsetFetchAnswer) leftOut(g string) {
	if !a.groupAnswered[g] {
		a.groupFailed(g, errors.New("the broker's answer left the group out"))
		return
	}
	for tp := range a.asked[g] {
		if a.answered[g] == nil || a.answered[g][tp] {
			continue
		}
		a.failures = append(a.failures, failure{group: g, Failure: proof.Failure{
			Reason:    proof.ReasonAuthorizationFailed,
			API:       apiOffsetFetch,
			Topic:     tp.Topic,
			Partition: tp.Partition,
			Message: fmt.Sprintf("OffsetFetch for group %s did not answer for %s/%d: brokers leave out partitions the principal may not describe, so its committed offset is unknown (not absent)",
				g, tp.Topic, tp.Partition),
		}})
	}
}

// usableOrLeaderless lists every partition metadata named, leader or not:
// committed offsets live on the group coordinator, not the leader.
func (p *pass) usableOrLeaderless() map[string][]int32 {
	out := make(map[string][]int32)
	for name, ts := range p.topics {
		if !ts.answered {
			continue
		}
		ids := make([]int32, 0, len(ts.partitions))
		for id := range ts.partitions {
			ids = append(ids, id)
		}
		sortInt32s(ids)
		out[name] = ids
	}
	return out
}

// topicByID names a topic answers carry by ID only (OffsetFetch v10+,
// Fetch v13+).
func (p *pass) topicByID(id [16]byte) string {
	return p.topicIDs[id]
}
