package kafka

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// Share groups (KIP-932; Kafka 4.1 preview, 4.2 GA) share the group ID
// namespace with consumer groups, but their progress is no committed
// offset: OffsetFetch answers -1 for every partition without an error, and
// DescribeGroups, ConsumerGroupDescribe and StreamsGroupDescribe answer
// not found. ShareGroupDescribe finds them; DescribeShareGroupOffsets
// reads each partition's share-partition start offset (SPSO), which the
// observer reports as the partition's committed offset for the proof to
// judge on a share group's own terms (proof.ProtocolShare).

// describeShare asks ShareGroupDescribe. A broker without the API (3.x,
// or 4.0 without share groups on) has no share group.
func (p *pass) describeShare(ctx context.Context, groups []string) map[string]groupAnswer {
	out := make(map[string]groupAnswer, len(groups))
	if len(groups) == 0 {
		return out
	}
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = slices.Clone(groups)
	for _, shard := range p.requestCoordinated(ctx, req) {
		sreq := shard.Req.(*kmsg.ShareGroupDescribeRequest)
		if shard.Err != nil {
			for _, g := range sreq.GroupIDs {
				out[g] = notFoundIfTooOld(shard.Err)
			}
			continue
		}
		for _, rg := range shard.Resp.(*kmsg.ShareGroupDescribeResponse).Groups {
			a := modernAnswer(rg.ErrorCode, rg.ErrorMessage, rg.GroupState)
			if ke, ok := asKerr(a.err); ok && ke == kerr.GroupIDNotFound {
				a = groupAnswer{}
			}
			out[rg.GroupID] = a
		}
	}
	fillMissing(out, groups)
	return out
}

// readShareStartOffsets replaces, for every share group, the committed
// offsets OffsetFetch answered (-1) by the share-partition start offsets.
// It runs after the group kinds are known and before the log end is read,
// so an SPSO never reads as beyond a log end read before it. A partition
// without share state answers -1: no offset. A failed request leaves the
// partitions without an offset and a failure naming the API: the proof does
// not evaluate them.
func (p *pass) readShareStartOffsets(ctx context.Context) {
	req, asked := p.shareOffsetsRequest()
	if len(req.Groups) == 0 {
		return
	}
	// The OffsetFetch answer (-1 for a share group) says nothing: forget it.
	p.mu.Lock()
	for g, tps := range asked {
		for _, tp := range tps {
			delete(p.groupInfo[g].committed, tp)
		}
	}
	p.mu.Unlock()
	ans := newShareOffsetsAnswer(asked)
	foldCoordinated(ctx, p, req, shareOffsetsGroups, ans.groupFailed,
		func(resp *kmsg.DescribeShareGroupOffsetsResponse) { ans.fold(p.topicIDs, resp) })
	ans.leftOut()
	p.mu.Lock()
	for g, offsets := range ans.startOffsets {
		if gs := p.groupInfo[g]; gs != nil {
			maps.Copy(gs.committed, offsets)
			maps.Copy(gs.shareLag, ans.lags[g])
		}
	}
	p.mu.Unlock()
	for _, f := range ans.failures {
		p.fail(f)
	}
}

// shareOffsetsRequest asks every share group's start offsets on the
// usable (or leaderless) partitions of its topics; asked is what it asks.
func (p *pass) shareOffsetsRequest() (*kmsg.DescribeShareGroupOffsetsRequest, map[string][]topicPartition) {
	parts := p.usableOrLeaderless()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	asked := make(map[string][]topicPartition)
	for _, g := range p.groups {
		gs := p.groupInfo[g]
		if !gs.stateKnown || gs.protocol != proof.ProtocolShare {
			continue
		}
		topics, tps := p.askedOf(g, parts)
		if len(topics) == 0 {
			continue
		}
		rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		rg.GroupID = g
		for _, name := range topics {
			rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
			rt.Topic, rt.Partitions = name, parts[name]
			rg.Topics = append(rg.Topics, rt)
		}
		req.Groups = append(req.Groups, rg)
		asked[g] = tps
	}
	return req, asked
}

func shareOffsetsGroups(req *kmsg.DescribeShareGroupOffsetsRequest) []string {
	return groupIDs(req.Groups, func(rg kmsg.DescribeShareGroupOffsetsRequestGroup) string { return rg.GroupID })
}

// shareOffsetsAnswer folds DescribeShareGroupOffsets answers: the
// share-partition start offsets (proof.NoOffset for none) and, from v1,
// the lags, and the failures of what was not answered. No I/O.
type shareOffsetsAnswer struct {
	asked        map[string][]topicPartition
	answered     map[string]map[topicPartition]bool
	startOffsets map[string]map[topicPartition]int64
	lags         map[string]map[topicPartition]int64
	failures     []failure
}

func newShareOffsetsAnswer(asked map[string][]topicPartition) *shareOffsetsAnswer {
	return &shareOffsetsAnswer{asked: asked, answered: make(map[string]map[topicPartition]bool),
		startOffsets: make(map[string]map[topicPartition]int64), lags: make(map[string]map[topicPartition]int64)}
}

func (a *shareOffsetsAnswer) failed(g, topic string, partition int32, err error) {
	if isAuthorization(err) {
		a.failures = append(a.failures, failure{group: g, Failure: proof.Failure{
			Reason: proof.ReasonAuthorizationFailed, API: apiDescribeShareOffsets, Topic: topic, Partition: partition,
			Message: fmt.Sprintf("DescribeShareGroupOffsets for group %s denied (%s): the principal needs Describe on the group "+
				"and on its topics; its share-partition start offsets are unknown", g, kerrName(err)),
		}})
		return
	}
	a.failures = append(a.failures, errFailure(apiDescribeShareOffsets, g, topic, partition,
		fmt.Sprintf("share-partition start offsets of share group %s", g), err))
}

// groupFailed fails group g as a whole; its partitions count as answered.
func (a *shareOffsetsAnswer) groupFailed(g string, err error) {
	a.failed(g, "", -1, err)
	a.answered[g] = map[topicPartition]bool{}
	for _, tp := range a.asked[g] {
		a.answered[g][tp] = true
	}
}

// fold reads one answer; topics answered by ID only are named by topicIDs.
func (a *shareOffsetsAnswer) fold(topicIDs map[[16]byte]string, resp *kmsg.DescribeShareGroupOffsetsResponse) {
	for _, rg := range resp.Groups {
		g := rg.GroupID
		if rg.ErrorCode != 0 {
			a.groupFailed(g, errorWithMessage(rg.ErrorCode, rg.ErrorMessage))
			continue
		}
		if a.answered[g] == nil {
			a.answered[g] = map[topicPartition]bool{}
		}
		for _, rt := range rg.Topics {
			name := rt.Topic
			if n, ok := topicIDs[rt.TopicID]; ok && name == "" {
				name = n
			}
			for _, rp := range rt.Partitions {
				tp := topicPartition{Topic: name, Partition: rp.Partition}
				a.answered[g][tp] = true
				if rp.ErrorCode != 0 {
					a.failed(g, name, rp.Partition, errorWithMessage(rp.ErrorCode, rp.ErrorMessage))
					continue
				}
				setIn(a.startOffsets, g, tp, max(rp.StartOffset, proof.NoOffset))
				if resp.GetVersion() >= 1 && rp.Lag >= 0 {
					setIn(a.lags, g, tp, rp.Lag)
				}
			}
		}
	}
}

// leftOut fails each partition asked that no answer named.
func (a *shareOffsetsAnswer) leftOut() {
	for g, tps := range a.asked {
		for _, tp := range tps {
			if !a.answered[g][tp] {
				a.failed(g, tp.Topic, tp.Partition, fmt.Errorf("the broker's answer left the partition out"))
			}
		}
	}
}

func setIn[V any](m map[string]map[topicPartition]V, g string, tp topicPartition, v V) {
	if m[g] == nil {
		m[g] = make(map[topicPartition]V)
	}
	m[g][tp] = v
}
