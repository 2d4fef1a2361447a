package kafka

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// The folds of the pass's requests, on answers constructed as a broker
// sends them: the rules that turn an answer into the observation's facts
// (and its failures), pinned without a broker. The topics are seed 000's
// (orders, its group's topic) and one the brokers do not know.

func askedTopics(names ...string) map[string]*topicState {
	topics := make(map[string]*topicState)
	for _, n := range names {
		topics[n] = &topicState{name: n, partitions: make(map[int32]*partitionState)}
	}
	return topics
}

// failureKeys renders failures as reason/topic/partition for comparison.
func failureKeys(fs []failure) []string {
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s %s %d %s", f.Reason, f.Topic, f.Partition, f.group))
	}
	slices.Sort(out)
	return out
}

func metadataTopic(name string, code int16, id byte, parts ...kmsg.MetadataResponseTopicPartition) kmsg.MetadataResponseTopic {
	rt := kmsg.NewMetadataResponseTopic()
	rt.Topic = kmsg.StringPtr(name)
	rt.ErrorCode = code
	rt.TopicID = [16]byte{id}
	rt.Partitions = parts
	return rt
}

func metadataPartition(p, leader int32, code int16) kmsg.MetadataResponseTopicPartition {
	rp := kmsg.NewMetadataResponseTopicPartition()
	rp.Partition, rp.Leader, rp.ErrorCode = p, leader, code
	return rp
}

func TestFoldMetadata(t *testing.T) {
	cases := []struct {
		name     string
		asked    []string
		resp     func(*kmsg.MetadataResponse)
		ok       bool
		usable   map[string][]int32 // topic → usable partitions
		known    map[string][]int32 // topic → every partition the answer named
		failures []string
	}{
		{name: "a top-level error fails the whole request", asked: []string{"orders"},
			resp:     func(r *kmsg.MetadataResponse) { r.ErrorCode = kerr.ClusterAuthorizationFailed.Code },
			failures: []string{proof.ReasonAuthorizationFailed + "  -1 "}},
		{name: "every partition led: all usable", asked: []string{"orders"}, ok: true,
			resp: func(r *kmsg.MetadataResponse) {
				r.Topics = append(r.Topics, metadataTopic("orders", 0, 7, metadataPartition(0, 1, 0), metadataPartition(1, 2, 0)))
			},
			usable: map[string][]int32{"orders": {0, 1}}, known: map[string][]int32{"orders": {0, 1}}},
		{name: "REPLICA_NOT_AVAILABLE is no error; no leader and a partition error are", asked: []string{"orders"}, ok: true,
			resp: func(r *kmsg.MetadataResponse) {
				r.Topics = append(r.Topics, metadataTopic("orders", 0, 7,
					metadataPartition(0, 1, kerr.ReplicaNotAvailable.Code),
					metadataPartition(1, -1, 0),
					metadataPartition(2, 1, kerr.LeaderNotAvailable.Code)))
			},
			usable: map[string][]int32{"orders": {0}}, known: map[string][]int32{"orders": {0, 1, 2}},
			failures: []string{
				proof.ReasonBrokerUnreachable + " orders 1 ",
				reasonForError(kerr.LeaderNotAvailable) + " orders 2 ",
			}},
		{name: "an unknown topic, a denied one, one left out, one not asked", asked: []string{"gone", "secret", "orders", "quiet"}, ok: true,
			resp: func(r *kmsg.MetadataResponse) {
				r.Topics = append(r.Topics,
					metadataTopic("gone", kerr.UnknownTopicOrPartition.Code, 0),
					metadataTopic("secret", kerr.TopicAuthorizationFailed.Code, 0),
					metadataTopic("orders", 0, 7, metadataPartition(0, 1, 0)),
					metadataTopic("unasked", 0, 9, metadataPartition(0, 1, 0)))
			},
			usable: map[string][]int32{"orders": {0}}, known: map[string][]int32{"orders": {0}},
			failures: []string{
				proof.ReasonAuthorizationFailed + " secret -1 ",
				proof.ReasonBrokerUnreachable + " quiet -1 ",
				proof.ReasonTopicNotFound + " gone -1 ",
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := kmsg.NewPtrMetadataResponse()
			resp.ClusterID = kmsg.StringPtr("seed-000")
			b := kmsg.NewMetadataResponseBroker()
			b.NodeID = 2
			resp.Brokers = append(resp.Brokers, b)
			tc.resp(resp)
			topics, ids := askedTopics(tc.asked...), make(map[[16]byte]string)
			ans := foldMetadata(topics, ids, tc.asked, resp)
			if ans.ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ans.ok, tc.ok)
			}
			if got := failureKeys(ans.failures); !slices.Equal(got, tc.failures) {
				t.Errorf("failures = %q, want %q", got, tc.failures)
			}
			if !tc.ok {
				return
			}
			if ans.clusterID != "seed-000" || !slices.Equal(ans.brokers, []int32{2}) {
				t.Errorf("cluster %q brokers %v, want seed-000 [2]", ans.clusterID, ans.brokers)
			}
			for name, ts := range topics {
				var usable, known []int32
				for id, ps := range ts.partitions {
					known = append(known, id)
					if ps.usable {
						usable = append(usable, id)
					}
					if ps.logStart != -1 || ps.logEnd != -1 || ps.endEpoch != -1 {
						t.Errorf("%s/%d: offsets set before they were read: %+v", name, id, ps)
					}
				}
				slices.Sort(usable)
				slices.Sort(known)
				if !slices.Equal(usable, tc.usable[name]) || !slices.Equal(known, tc.known[name]) {
					t.Errorf("%s: usable %v of %v, want %v of %v", name, usable, known, tc.usable[name], tc.known[name])
				}
				if ts.answered != (tc.known[name] != nil) {
					t.Errorf("%s: answered = %v", name, ts.answered)
				}
			}
			if _, ok := ids[[16]byte{7}]; tc.known["orders"] != nil && !ok {
				t.Errorf("orders' topic ID not recorded: %v", ids)
			}
			if _, ok := ids[[16]byte{9}]; ok {
				t.Errorf("an unasked topic's ID recorded: %v", ids)
			}
		})
	}
}
