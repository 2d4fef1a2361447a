package kafka

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// A lagging partition whose committed record could not be dated (Fetch
// needs Read on the topic, where the rest of the observation needs
// Describe; a tiered broker may answer a remote read with no records and
// no error, DelayedRemoteFetch.onComplete; or the Fetch failed) is asked
// instead, with Describe only, ListOffsets for timestamp T = now +
// recoveryWindow − retention.ms: the first offset whose record is stamped
// at or after T (UnifiedLog.fetchOffsetByTimestamp). The proof reads the
// answer and T (proof.setUnreadHeadroom says why it decides): the
// observer only asks. T depends on the target's window (Target.
// RecoveryWindow) and the topic's retention.ms as read in this pass; a
// target without a window, or a topic without a finite retention.ms, asks
// nothing.

// timestampTarget is one ListOffsets question: a partition at a timestamp
// (milliseconds).
type timestampTarget struct {
	tp topicPartition
	at int64
}

// offsetForTimestamp is the leader's answer.
type offsetForTimestamp struct {
	offset  int64 // -1: no record at or after the timestamp below the high watermark
	read    bool
	problem string // why it was not read
}

// markUnread records, for every group that needed the record at its
// committed offset to measure headroom (it lags) and did not get it, why
// (proof.Timestamp…). Called with p.mu held, after the needers were
// served.
func (p *pass) markUnread(needers map[timestampWant][]commitNeeds, found map[timestampWant]fetchedRecords,
	emptied map[timestampWant]bool, denied map[string]bool) {
	for w, needs := range needers {
		ps := p.topics[w.tp.Topic].partitions[w.tp.Partition]
		for _, n := range needs {
			if n.target >= 0 || n.committed >= ps.logEnd {
				continue
			}
			gs := p.groupInfo[n.group]
			if !gs.timestamps[w.tp].IsZero() {
				continue
			}
			_, answered := found[w]
			cause := proof.TimestampFetchFailed
			switch {
			case denied[w.tp.Topic]:
				cause = proof.TimestampReadDenied
			case answered || emptied[w]:
				cause = proof.TimestampNoRecords
			}
			if gs.unread == nil {
				gs.unread = make(map[topicPartition]string)
			}
			gs.unread[w.tp] = cause
		}
	}
}

// unreadTimestamp is the timestamp a target asks its undated partitions of
// a topic at: now + window − retention.ms (not before the epoch: a
// retention longer than that keeps every record the window needs); false
// when the target has no window or the topic no finite retention.ms.
func (p *pass) unreadTimestamp(t Target, ts *topicState) (int64, bool) {
	if t.RecoveryWindow <= 0 || ts == nil {
		return 0, false
	}
	ms, ok := ts.retentionMs.Int()
	if !ok || ms <= 0 {
		return 0, false
	}
	at := p.now.Add(t.RecoveryWindow).UnixMilli() - ms
	return max(at, 0), true
}

// listOffsetsForUnread asks ListOffsets by timestamp for every lagging
// partition a target's group could not date, at the target's timestamp;
// partitions asked at several timestamps (targets with other windows) take
// one round each.
func (p *pass) listOffsetsForUnread(ctx context.Context) {
	byPartition := p.unreadTimestamps()
	if len(byPartition) == 0 {
		return
	}
	answers := make(map[timestampTarget]offsetForTimestamp)
	for round := 0; ctx.Err() == nil; round++ {
		req, asked := timestampRequest(byPartition, round)
		if req == nil {
			break
		}
		for _, a := range asked {
			answers[a] = offsetForTimestamp{problem: "ListOffsets by timestamp was not answered"}
		}
		for _, shard := range p.cl.RequestSharded(ctx, req) {
			if shard.Err != nil {
				for _, rt := range shard.Req.(*kmsg.ListOffsetsRequest).Topics {
					for _, rp := range rt.Partitions {
						k := timestampTarget{topicPartition{Topic: rt.Topic, Partition: rp.Partition}, rp.Timestamp}
						answers[k] = offsetForTimestamp{problem: "ListOffsets by timestamp failed: " + p.conn.redact(describeError(shard.Err))}
					}
				}
				continue
			}
			foldTimestampOffsets(answers, asked, shard.Resp.(*kmsg.ListOffsetsResponse))
		}
	}
	p.mu.Lock()
	p.byTimestamp = answers
	p.mu.Unlock()
	failed := 0
	for _, a := range answers {
		if !a.read {
			failed++
		}
	}
	if failed > 0 {
		p.o.opts.logger.V(1).Info("ListOffsets by timestamp for undated committed records not answered",
			"connection", p.conn.String(), "partitions", failed)
	}
}

// unreadTimestamps is, per lagging partition a target's group could not
// date, the timestamps its targets ask it at (unreadTimestamp); discovered
// groups count as targets with the discovery's window.
func (p *pass) unreadTimestamps() map[topicPartition][]int64 {
	byPartition := make(map[topicPartition][]int64)
	targets := p.targets
	if p.discover != nil && p.discover.RecoveryWindow > 0 {
		targets = slices.Clone(targets)
		for _, d := range p.discovered {
			targets = append(targets, Target{Group: d.group, Topics: d.topics, RecoveryWindow: p.discover.RecoveryWindow})
		}
	}
	for _, t := range targets {
		gs := p.groupInfo[t.Group]
		if gs == nil || len(gs.unread) == 0 {
			continue
		}
		for tp := range gs.unread {
			if !slices.Contains(t.Topics, tp.Topic) {
				continue
			}
			at, ok := p.unreadTimestamp(t, p.topics[tp.Topic])
			if ok && !slices.Contains(byPartition[tp], at) {
				byPartition[tp] = append(byPartition[tp], at)
			}
		}
	}
	return byPartition
}

// timestampRequest asks ListOffsets, read_uncommitted (answers below the
// high watermark), each partition at its round-th timestamp; nil when no
// partition has one. asked is what it asks, by topic and partition.
func timestampRequest(byPartition map[topicPartition][]int64, round int) (*kmsg.ListOffsetsRequest, []timestampTarget) {
	var asked []timestampTarget
	for tp, ats := range byPartition {
		if round < len(ats) {
			asked = append(asked, timestampTarget{tp, ats[round]})
		}
	}
	if len(asked) == 0 {
		return nil, nil
	}
	slices.SortFunc(asked, func(a, b timestampTarget) int {
		return cmp.Or(cmp.Compare(a.tp.Topic, b.tp.Topic), cmp.Compare(a.tp.Partition, b.tp.Partition))
	})
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = 0
	for _, a := range asked {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != a.tp.Topic {
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = a.tp.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = a.tp.Partition
		rp.Timestamp = a.at
		rt := &req.Topics[len(req.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	return req, asked
}

// foldTimestampOffsets reads a ListOffsets answer to the timestamps asked:
// the offset of the first record at or after each (-1 when none), or why
// not. Partitions not asked are passed over. No I/O.
func foldTimestampOffsets(answers map[timestampTarget]offsetForTimestamp, asked []timestampTarget, resp *kmsg.ListOffsetsResponse) {
	at := make(map[topicPartition]int64, len(asked))
	for _, a := range asked {
		at[a.tp] = a.at
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			tp := topicPartition{Topic: rt.Topic, Partition: rp.Partition}
			ts, ok := at[tp]
			if !ok {
				continue
			}
			k := timestampTarget{tp, ts}
			if rp.ErrorCode != 0 {
				answers[k] = offsetForTimestamp{problem: "ListOffsets by timestamp failed: " + describeError(kerr.ErrorForCode(rp.ErrorCode))}
				continue
			}
			answers[k] = offsetForTimestamp{offset: rp.Offset, read: true}
		}
	}
}

// unreadObservation fills what a target's partition reports about an
// undated committed record: why, and ListOffsets' answer at the target's
// timestamp.
func (p *pass) unreadObservation(po *proof.PartitionObservation, t Target, gs *groupState, tp topicPartition) {
	if gs == nil || gs.unread[tp] == "" {
		return
	}
	po.TimestampUnread = gs.unread[tp]
	at, ok := p.unreadTimestamp(t, p.topics[tp.Topic])
	if !ok {
		return
	}
	a, asked := p.byTimestamp[timestampTarget{tp, at}]
	if !asked {
		return
	}
	po.OffsetForTimestampAt = time.UnixMilli(at)
	po.OffsetForTimestamp, po.OffsetForTimestampRead, po.OffsetForTimestampProblem = a.offset, a.read, a.problem
	if !a.read {
		po.OffsetForTimestamp = -1
	}
}
