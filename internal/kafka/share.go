package kafka

import (
	"context"
	"fmt"
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
	parts := p.usableOrLeaderless()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	asked := make(map[string][]topicPartition)
	for _, g := range p.groups {
		gs := p.groupInfo[g]
		if !gs.stateKnown || gs.protocol != proof.ProtocolShare {
			continue
		}
		rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		rg.GroupID = g
		for _, name := range p.groupTopics[g] {
			ids, ok := parts[name]
			if !ok {
				continue
			}
			rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
			rt.Topic, rt.Partitions = name, ids
			rg.Topics = append(rg.Topics, rt)
			for _, id := range ids {
				asked[g] = append(asked[g], topicPartition{Topic: name, Partition: id})
			}
		}
		if len(rg.Topics) > 0 {
			req.Groups = append(req.Groups, rg)
		}
	}
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

	failed := func(g, topic string, partition int32, err error) {
		what := fmt.Sprintf("share-partition start offsets of share group %s", g)
		if isAuthorization(err) {
			p.fail(failure{group: g, Failure: proof.Failure{
				Reason: proof.ReasonAuthorizationFailed, API: apiDescribeShareOffsets, Topic: topic, Partition: partition,
				Message: fmt.Sprintf("DescribeShareGroupOffsets for group %s denied (%s): the principal needs Describe on the group "+
					"and on its topics; its share-partition start offsets are unknown", g, kerrName(err)),
			}})
			return
		}
		p.failErr(apiDescribeShareOffsets, g, topic, partition, what, err)
	}
	answered := make(map[string]map[topicPartition]bool)
	for _, shard := range p.requestCoordinated(ctx, req) {
		sreq := shard.Req.(*kmsg.DescribeShareGroupOffsetsRequest)
		if shard.Err != nil {
			for _, rg := range sreq.Groups {
				failed(rg.GroupID, "", -1, shard.Err)
				answered[rg.GroupID] = map[topicPartition]bool{}
				for _, tp := range asked[rg.GroupID] {
					answered[rg.GroupID][tp] = true
				}
			}
			continue
		}
		for _, rg := range shard.Resp.(*kmsg.DescribeShareGroupOffsetsResponse).Groups {
			if answered[rg.GroupID] == nil {
				answered[rg.GroupID] = map[topicPartition]bool{}
			}
			if rg.ErrorCode != 0 {
				failed(rg.GroupID, "", -1, errorWithMessage(rg.ErrorCode, rg.ErrorMessage))
				for _, tp := range asked[rg.GroupID] {
					answered[rg.GroupID][tp] = true
				}
				continue
			}
			for _, rt := range rg.Topics {
				name := rt.Topic
				if n, ok := p.topicIDs[rt.TopicID]; ok && name == "" {
					name = n
				}
				for _, rp := range rt.Partitions {
					tp := topicPartition{Topic: name, Partition: rp.Partition}
					answered[rg.GroupID][tp] = true
					if rp.ErrorCode != 0 {
						failed(rg.GroupID, name, rp.Partition, errorWithMessage(rp.ErrorCode, rp.ErrorMessage))
						continue
					}
					offset := rp.StartOffset
					if offset < 0 {
						offset = proof.NoOffset
					}
					p.mu.Lock()
					gs := p.groupInfo[rg.GroupID]
					gs.committed[tp] = offset
					if shard.Resp.GetVersion() >= 1 && rp.Lag >= 0 {
						gs.shareLag[tp] = rp.Lag
					}
					p.mu.Unlock()
				}
			}
		}
	}
	for g, tps := range asked {
		for _, tp := range tps {
			if !answered[g][tp] {
				failed(g, tp.Topic, tp.Partition, fmt.Errorf("the broker's answer left the partition out"))
			}
		}
	}
}
