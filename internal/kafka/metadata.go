package kafka

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// metadata asks once for the brokers and the union of the targets' topics.
// It is the pass's first request: when it fails outright (cannot connect,
// TLS, SASL, deadline) every target fails with that reason and the pass
// stops, rather than letting every later request wait out the same
// timeout. It reports whether the pass can go on.
//
// The request goes through the client, which caches the answer: the
// requests sharded per partition leader (ListOffsets) and the topic IDs of
// OffsetFetch reuse it instead of asking again.
func (p *pass) metadata(ctx context.Context) bool {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false
	req.Topics = []kmsg.MetadataRequestTopic{} // brokers only when no topics
	names := make([]string, 0, len(p.topics))
	for name := range p.topics {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}

	sent := time.Now()
	resp, err := req.RequestWith(ctx, p.cl)
	if err != nil {
		reason := reasonForError(err)
		msg := fmt.Sprintf("cannot reach the cluster at %s: %s", p.conn.String(), describeError(err))
		switch {
		case p.conn.SASL == nil:
		case reason == proof.ReasonAuthenticationFailed:
			msg = fmt.Sprintf("SASL authentication as %s with %s failed at %s: %s",
				p.conn.SASL.identity(), strings.ToUpper(p.conn.SASL.Mechanism), strings.Join(p.conn.BootstrapServers, ","), describeError(err))
		case reason == proof.ReasonBrokerUnreachable && p.sasl.failedSince(sent):
			reason = proof.ReasonAuthenticationFailed
			msg = fmt.Sprintf("SASL authentication as %s with %s failed at %s: the broker closed the connection during the exchange (wrong credentials or mechanism?)",
				p.conn.SASL.identity(), strings.ToUpper(p.conn.SASL.Mechanism), strings.Join(p.conn.BootstrapServers, ","))
		}
		p.fail(failure{global: true, Failure: proof.Failure{
			Reason:    reason,
			API:       apiMetadata,
			Partition: -1,
			Message:   msg,
		}})
		return false
	}
	ans := foldMetadata(p.topics, p.topicIDs, names, resp)
	for _, f := range ans.failures {
		p.fail(f)
	}
	if !ans.ok {
		return false
	}
	p.clusterID = ans.clusterID
	p.brokers = append(p.brokers, ans.brokers...)
	slices.Sort(p.brokers)
	return true
}

// metadataAnswer is what a Metadata answer says beyond the topics' states.
type metadataAnswer struct {
	ok        bool // false: the whole request failed (a top-level error code)
	clusterID string
	brokers   []int32
	failures  []failure
}

// foldMetadata folds a Metadata answer for the topics asked (names) into
// their states: answered, ID (also into topicIDs), partitions with their
// leaders, usable when led and without error (REPLICA_NOT_AVAILABLE is
// no error: the leader answers). A topic's error fails that topic, a
// partition's or a missing leader that partition, a topic left out of the
// answer that topic. No I/O: the request is metadata's.
func foldMetadata(topics map[string]*topicState, topicIDs map[[16]byte]string, names []string, resp *kmsg.MetadataResponse) metadataAnswer {
	var ans metadataAnswer
	if resp.ErrorCode != 0 {
		// Only newer brokers set a top-level code; treat as the whole
		// request failing.
		err := kerr.ErrorForCode(resp.ErrorCode)
		ans.failures = append(ans.failures, failure{global: true, Failure: proof.Failure{
			Reason:    reasonForError(err),
			API:       apiMetadata,
			Partition: -1,
			Message:   "metadata request failed: " + describeError(err),
		}})
		return ans
	}
	ans.ok = true
	if resp.ClusterID != nil {
		ans.clusterID = *resp.ClusterID
	}
	for _, b := range resp.Brokers {
		ans.brokers = append(ans.brokers, b.NodeID)
	}
	answered := make(map[string]bool)
	for _, rt := range resp.Topics {
		if rt.Topic == nil || topics[*rt.Topic] == nil {
			continue // not asked for
		}
		ts := topics[*rt.Topic]
		answered[ts.name] = true
		if rt.ErrorCode != 0 {
			ans.failures = append(ans.failures, metadataTopicFailure(ts.name, kerr.ErrorForCode(rt.ErrorCode)))
			continue
		}
		ts.answered = true
		ts.id = rt.TopicID
		if rt.TopicID != ([16]byte{}) {
			topicIDs[rt.TopicID] = ts.name
		}
		ans.failures = append(ans.failures, foldMetadataPartitions(ts, rt.Partitions)...)
	}
	for _, name := range names {
		if !answered[name] {
			ans.failures = append(ans.failures, failure{Failure: proof.Failure{
				Reason:    proof.ReasonBrokerUnreachable,
				API:       apiMetadata,
				Topic:     name,
				Partition: -1,
				Message:   fmt.Sprintf("the metadata answer left out topic %s", name),
			}})
		}
	}
	return ans
}

func metadataTopicFailure(topic string, err error) failure {
	msg := fmt.Sprintf("metadata for topic %s: %s", topic, describeError(err))
	switch reasonForError(err) {
	case proof.ReasonTopicNotFound:
		msg = fmt.Sprintf("topic %s does not exist", topic)
	case proof.ReasonAuthorizationFailed:
		msg = fmt.Sprintf("Metadata for topic %s denied (%s): the principal needs Describe on the topic", topic, kerrName(err))
	}
	return failure{Failure: proof.Failure{
		Reason:    reasonForError(err),
		API:       apiMetadata,
		Topic:     topic,
		Partition: -1,
		Message:   msg,
	}}
}

func foldMetadataPartitions(ts *topicState, parts []kmsg.MetadataResponseTopicPartition) []failure {
	var out []failure
	for _, rp := range parts {
		ps := &partitionState{leader: rp.Leader, logStart: -1, logEnd: -1, endEpoch: -1}
		ts.partitions[rp.Partition] = ps
		if rp.ErrorCode != 0 && rp.ErrorCode != kerr.ReplicaNotAvailable.Code {
			out = append(out, errFailure(apiMetadata, "", ts.name, rp.Partition,
				fmt.Sprintf("metadata for partition %s/%d", ts.name, rp.Partition), kerr.ErrorForCode(rp.ErrorCode)))
			continue
		}
		if rp.Leader < 0 {
			out = append(out, failure{Failure: proof.Failure{
				Reason:    proof.ReasonBrokerUnreachable,
				API:       apiMetadata,
				Topic:     ts.name,
				Partition: rp.Partition,
				Message:   fmt.Sprintf("partition %s/%d has no leader", ts.name, rp.Partition),
			}})
			continue
		}
		ps.usable = true
	}
	return out
}
