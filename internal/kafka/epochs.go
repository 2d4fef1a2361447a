package kafka

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/groupmemory"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Where the leader epoch of a committed offset ends (issue 33 item 1). A
// KIP-320 client commits the leader epoch of the last record it read with
// the offset, and OffsetFetch v5+ returns it (-1 for an offset committed
// without one). The Java consumer validates such a position before it
// fetches: it asks the partition's leader where that epoch ends
// (OffsetsForLeaderEpoch) and, when the end is below the position, the log
// diverged under it (SubscriptionState.maybeCompleteValidation). The
// observer asks the same question, the way the consumer does: replica ID
// -1 (a consumer), current leader epoch -1 (no fencing), which Kafka
// authorizes with Describe on the topic, like ListOffsets
// (KafkaApis.handleOffsetForLeaderEpochRequest; ClusterAction on the
// cluster also passes). The leader answers the log end for its current
// epoch, the start of the next epoch it knows for an older one, and
// UNDEFINED_EPOCH (-1, -1) for an epoch above its own
// (LeaderEpochFileCache.endOffsetFor).
//
// An offset committed without an epoch is asked the same question for the
// epoch the group memory first saw it in (groupmemory.Witness: the log end
// at or past the offset, in that leader epoch), when the memory holds one
// and the leader's epoch changed since (read with the log end this pass):
// a leader whose log diverged below the offset since answers an end below
// it, even if the log grew back between two passes and no fall of the log
// end was seen. A one-shot observation (check, scan) has no memory and
// asks nothing for such an offset.
//
// Only partitions whose committed offset carries an epoch or a witness are asked, in one
// raw request sharded per partition leader; a partition asked for several
// epochs (groups that committed in different epochs) is asked once per
// round, each round at most one epoch per partition, so that the answer's
// partition says which epoch it answers. Failures never fail the proof:
// the epoch's end stays unknown (CommitEpoch.EndKnown false, nothing
// judged), logged at V(1), as for record timestamps.

// epochAt is one partition's leader epoch to ask about.
type epochAt struct {
	tp    topicPartition
	epoch int32
}

// epochEnd is the leader's answer: the epoch it knows and where it ends
// (-1, -1: undefined).
type epochEnd struct {
	epoch int32
	end   int64
}

func (p *pass) fetchEpochEnds(ctx context.Context) {
	want := make(map[topicPartition][]int32)
	ask := func(tp topicPartition, epoch int32) {
		ps := p.topics[tp.Topic].partitions[tp.Partition]
		if ps == nil || !ps.usable || slices.Contains(want[tp], epoch) {
			return
		}
		want[tp] = append(want[tp], epoch)
	}
	for _, g := range p.groups {
		gs := p.groupInfo[g]
		for tp, epoch := range gs.epochs {
			ask(tp, epoch)
		}
		for tp, c := range gs.committed {
			if _, has := gs.epochs[tp]; has || c <= 0 {
				continue
			}
			w, ok := p.o.memory.Witness(p.conn.clusterKey(), g, tp, c)
			if ps := p.topics[tp.Topic].partitions[tp.Partition]; !ok || ps == nil || ps.endEpoch == w.Epoch {
				// The leader's epoch has not changed since the sighting:
				// no election, nothing to ask (a steady pass asks nothing).
				continue
			}
			if gs.witnesses == nil {
				gs.witnesses = make(map[topicPartition]groupmemory.Witness)
			}
			gs.witnesses[tp] = w
			ask(tp, w.Epoch)
		}
	}
	for round := 0; len(want) > 0; round++ {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.ReplicaID = -1 // a consumer: answered by the leader only
		asked := make(map[topicPartition]int32)
		byTopic := make(map[string][]kmsg.OffsetForLeaderEpochRequestTopicPartition)
		for tp, epochs := range want {
			slices.Sort(epochs)
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = tp.Partition, -1, epochs[0]
			byTopic[tp.Topic] = append(byTopic[tp.Topic], rp)
			asked[tp] = epochs[0]
			if len(epochs) == 1 {
				delete(want, tp)
			} else {
				want[tp] = epochs[1:]
			}
		}
		for _, name := range sortedKeys(byTopic) {
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic, rt.Partitions = name, byTopic[name]
			req.Topics = append(req.Topics, rt)
		}
		var failed []string
		for _, shard := range p.cl.RequestSharded(ctx, req) {
			if shard.Err != nil {
				failed = append(failed, describeError(shard.Err))
				continue
			}
			for _, rt := range shard.Resp.(*kmsg.OffsetForLeaderEpochResponse).Topics {
				for _, rp := range rt.Partitions {
					tp := topicPartition{Topic: rt.Topic, Partition: rp.Partition}
					epoch, ok := asked[tp]
					if !ok {
						continue
					}
					if rp.ErrorCode != 0 {
						failed = append(failed, fmt.Sprintf("%s/%d: %s", tp.Topic, tp.Partition, describeError(kerr.ErrorForCode(rp.ErrorCode))))
						continue
					}
					p.mu.Lock()
					p.epochEnds[epochAt{tp, epoch}] = epochEnd{epoch: rp.LeaderEpoch, end: rp.EndOffset}
					p.mu.Unlock()
				}
			}
		}
		if len(failed) > 0 {
			p.o.opts.logger.V(1).Info("OffsetsForLeaderEpoch failed: where the committed offsets' leader epochs end is unknown for these partitions (not judged)",
				"connection", p.conn.String(), "round", round, "problems", p.conn.redact(strings.Join(failed[:min(len(failed), 5)], "; ")), "failed", len(failed))
		}
	}
}

// commitEpoch is what the pass knows of the leader epoch of the group's
// committed offset on tp.
func (p *pass) commitEpoch(gs *groupState, tp topicPartition) proof.CommitEpoch {
	epoch, ok := gs.epochs[tp]
	if !ok {
		return proof.CommitEpoch{}
	}
	ce := proof.CommitEpoch{HasEpoch: true, Epoch: epoch}
	p.mu.Lock()
	end, known := p.epochEnds[epochAt{tp, epoch}]
	p.mu.Unlock()
	if known {
		ce.EndKnown, ce.EndEpoch, ce.EndOffset = true, end.epoch, end.end
	}
	return ce
}

// commitWitness is what the pass knows of the leader epoch the group
// memory first saw an epoch-less committed offset in, and where the
// partition's leader says it ends.
func (p *pass) commitWitness(gs *groupState, tp topicPartition) proof.CommitWitness {
	w, ok := gs.witnesses[tp]
	if !ok {
		return proof.CommitWitness{}
	}
	cw := proof.CommitWitness{Known: true, Epoch: w.Epoch, SeenAt: w.SeenAt}
	p.mu.Lock()
	end, known := p.epochEnds[epochAt{tp, w.Epoch}]
	p.mu.Unlock()
	if known {
		cw.EndKnown, cw.EndEpoch, cw.EndOffset = true, end.epoch, end.end
	}
	return cw
}

// logEnds are the log ends read for the group's topics, for the group
// memory to witness a log end that went down, and the leader epochs read
// with them, for it to witness the epoch a commit was first seen in.
func (p *pass) logEnds(g string) (ends map[topicPartition]int64, epochs map[topicPartition]int32) {
	ends, epochs = make(map[topicPartition]int64), make(map[topicPartition]int32)
	for _, name := range p.groupTopics[g] {
		ts := p.topics[name]
		if ts == nil {
			continue
		}
		for id, ps := range ts.partitions {
			if ps.logEnd < 0 {
				continue
			}
			tp := topicPartition{Topic: name, Partition: id}
			ends[tp] = ps.logEnd
			if ps.endEpoch >= 0 {
				epochs[tp] = ps.endEpoch
			}
		}
	}
	return ends, epochs
}
