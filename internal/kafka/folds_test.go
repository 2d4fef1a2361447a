package kafka

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

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

func offsetFetchGroup(g string, code int16, topics ...kmsg.OffsetFetchResponseGroupTopic) kmsg.OffsetFetchResponseGroup {
	rg := kmsg.NewOffsetFetchResponseGroup()
	rg.Group, rg.ErrorCode, rg.Topics = g, code, topics
	return rg
}

func offsetFetchTopic(name string, id byte, parts ...kmsg.OffsetFetchResponseGroupTopicPartition) kmsg.OffsetFetchResponseGroupTopic {
	rt := kmsg.NewOffsetFetchResponseGroupTopic()
	rt.Topic, rt.TopicID, rt.Partitions = name, [16]byte{id}, parts
	return rt
}

func offsetFetchPartition(p int32, offset int64, epoch int32, code int16) kmsg.OffsetFetchResponseGroupTopicPartition {
	rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, offset, epoch, code
	return rp
}

// Seed 000's group (ledger-settle-consumer on orders 0 and 1) as
// OffsetFetch answers it, and as it fails.
func TestFoldOffsetFetch(t *testing.T) {
	const g = "ledger-settle-consumer"
	orders0, orders1 := topicPartition{Topic: "orders", Partition: 0}, topicPartition{Topic: "orders", Partition: 1}
	cases := []struct {
		name      string
		groups    []kmsg.OffsetFetchResponseGroup
		committed map[topicPartition]committedOffset
		failures  []string
	}{
		{name: "offsets and their epochs; a negative offset is none",
			groups: []kmsg.OffsetFetchResponseGroup{offsetFetchGroup(g, 0,
				offsetFetchTopic("orders", 7, offsetFetchPartition(0, 400, 3, 0), offsetFetchPartition(1, -1, -1, 0)))},
			committed: map[topicPartition]committedOffset{orders0: {400, 3}, orders1: {proof.NoOffset, -1}}},
		{name: "a topic answered by ID only (v10+) is named by its ID",
			groups: []kmsg.OffsetFetchResponseGroup{offsetFetchGroup(g, 0,
				offsetFetchTopic("", 7, offsetFetchPartition(0, 400, -1, 0), offsetFetchPartition(1, 12, -1, 0)))},
			committed: map[topicPartition]committedOffset{orders0: {400, -1}, orders1: {12, -1}}},
		{name: "GROUP_ID_NOT_FOUND: no committed offset anywhere",
			groups:    []kmsg.OffsetFetchResponseGroup{offsetFetchGroup(g, kerr.GroupIDNotFound.Code)},
			committed: map[topicPartition]committedOffset{orders0: {proof.NoOffset, -1}, orders1: {proof.NoOffset, -1}}},
		{name: "the group denied",
			groups:   []kmsg.OffsetFetchResponseGroup{offsetFetchGroup(g, kerr.GroupAuthorizationFailed.Code)},
			failures: []string{proof.ReasonAuthorizationFailed + "  -1 " + g}},
		{name: "the coordinator loading: the group fails with its reason",
			groups:   []kmsg.OffsetFetchResponseGroup{offsetFetchGroup(g, kerr.CoordinatorLoadInProgress.Code)},
			failures: []string{reasonForError(kerr.CoordinatorLoadInProgress) + "  -1 " + g}},
		{name: "a partition's error, a partition left out, an unasked partition and group ignored",
			groups: []kmsg.OffsetFetchResponseGroup{
				offsetFetchGroup(g, 0, offsetFetchTopic("orders", 7,
					offsetFetchPartition(0, 0, -1, kerr.TopicAuthorizationFailed.Code), offsetFetchPartition(5, 9, -1, 0))),
				offsetFetchGroup("someone-else", 0, offsetFetchTopic("orders", 7, offsetFetchPartition(1, 9, -1, 0))),
			},
			failures: []string{
				proof.ReasonAuthorizationFailed + " orders 0 " + g,
				proof.ReasonAuthorizationFailed + " orders 1 " + g,
			}},
		{name: "the group left out of every answer",
			failures: []string{reasonForError(errors.New("the broker's answer left the group out")) + "  -1 " + g}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			asked := map[string]map[topicPartition]bool{g: {orders0: true, orders1: true}}
			ans := newOffsetFetchAnswer(asked)
			resp := kmsg.NewPtrOffsetFetchResponse()
			resp.Groups = tc.groups
			ans.fold(map[[16]byte]string{{7}: "orders"}, resp)
			ans.leftOut(g)
			if got := failureKeys(ans.failures); !slices.Equal(got, tc.failures) {
				t.Errorf("failures = %q, want %q", got, tc.failures)
			}
			if got := ans.committed[g]; !maps.Equal(got, tc.committed) {
				t.Errorf("committed = %v, want %v", got, tc.committed)
			}
			if len(ans.committed) > 1 {
				t.Errorf("an unasked group's offsets kept: %v", ans.committed)
			}
		})
	}
}

func configsResource(typ kmsg.ConfigResourceType, name string, code int16, configs ...kmsg.DescribeConfigsResponseResourceConfig) kmsg.DescribeConfigsResponseResource {
	rr := kmsg.NewDescribeConfigsResponseResource()
	rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.Configs = typ, name, code, configs
	return rr
}

func configEntry(name string, value *string, source kmsg.ConfigSource) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name, c.Value, c.Source = name, value, source
	return c
}

// Seed 000's orders topic (retention.ms its own, cleanup.policy the
// broker's default) and its two brokers, as DescribeConfigs answers them.
func TestFoldDescribeConfigs(t *testing.T) {
	topic, broker := kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker
	week := kmsg.StringPtr("604800000")
	cases := []struct {
		name         string
		resources    []kmsg.DescribeConfigsResponseResource
		topic        map[string]proof.ConfigValue
		inherited    []string
		brokers      []int32
		brokerFailed bool
		failures     []string
	}{
		{name: "a topic's own value, a broker default, a null, one left out",
			resources: []kmsg.DescribeConfigsResponseResource{configsResource(topic, "orders", 0,
				configEntry(configRetentionMs, week, kmsg.ConfigSourceDynamicTopicConfig),
				configEntry(configCleanupPolicy, kmsg.StringPtr("delete"), kmsg.ConfigSourceStaticBrokerConfig),
				configEntry(configTimestampType, nil, kmsg.ConfigSourceDynamicTopicConfig))},
			topic: map[string]proof.ConfigValue{
				configRetentionMs:   {Present: true, Value: "604800000"},
				configCleanupPolicy: {Present: true, Value: "delete"},
				configTimestampType: {Present: true, Null: true},
			},
			inherited: []string{configCleanupPolicy}},
		{name: "the topic denied", resources: []kmsg.DescribeConfigsResponseResource{configsResource(topic, "orders", kerr.TopicAuthorizationFailed.Code)},
			failures: []string{proof.ReasonAuthorizationFailed + " orders -1 "}},
		{name: "brokers by numeric ID; one named otherwise passed over",
			resources: []kmsg.DescribeConfigsResponseResource{
				configsResource(broker, "1", 0, configEntry(configOffsetsRetentionMinutes, kmsg.StringPtr("10080"), kmsg.ConfigSourceDefaultConfig)),
				configsResource(broker, "controller", 0, configEntry(configOffsetsRetentionMinutes, kmsg.StringPtr("1"), kmsg.ConfigSourceDefaultConfig)),
			},
			brokers: []int32{1}},
		{name: "a broker denied: the cluster-wide settings are unknown",
			resources:    []kmsg.DescribeConfigsResponseResource{configsResource(broker, "2", kerr.ClusterAuthorizationFailed.Code)},
			brokerFailed: true,
			failures:     []string{proof.ReasonAuthorizationFailed + "  -1 "}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := kmsg.NewPtrDescribeConfigsResponse()
			resp.Resources = tc.resources
			ans := newConfigsAnswer()
			ans.fold(resp)
			if got := failureKeys(ans.failures); !slices.Equal(got, tc.failures) {
				t.Errorf("failures = %q, want %q", got, tc.failures)
			}
			if got := ans.topics["orders"]; !maps.Equal(got, tc.topic) {
				t.Errorf("orders' configs = %v, want %v", got, tc.topic)
			}
			var inherited []string
			for k, b := range ans.inherited["orders"] {
				if b {
					inherited = append(inherited, k)
				}
			}
			if !slices.Equal(inherited, tc.inherited) {
				t.Errorf("inherited = %v, want %v", inherited, tc.inherited)
			}
			if got := slices.Sorted(maps.Keys(ans.brokers)); !slices.Equal(got, tc.brokers) {
				t.Errorf("brokers = %v, want %v", got, tc.brokers)
			}
			if ans.brokerFailed != tc.brokerFailed {
				t.Errorf("brokerFailed = %v, want %v", ans.brokerFailed, tc.brokerFailed)
			}
			for _, rr := range tc.resources {
				if !ans.answered[configResource{rr.ResourceType, rr.ResourceName}] {
					t.Errorf("%s not marked answered", rr.ResourceName)
				}
			}
		})
	}
}

// One leader's catch-up of __consumer_offsets (seed 003: an Empty classic
// group, its commit time read from the log), folded from Fetch answers as
// a broker sends them: the goal is the first answer's last stable offset
// (the high watermark before Fetch v4), a moved log start asks a rewind,
// errors and undecodable batches end the read with their problem.
func TestFoldCatchUp(t *testing.T) {
	const group = "ledger-settle-consumer"
	commit := fetched{batches: []logBatch{batchOf(0, commitAt(group, "orders", 0, 400, commitTime0))}}
	answer := func(code int16, parts ...*kmsg.FetchResponseTopicPartition) *kmsg.FetchResponse {
		resp := kmsg.NewPtrFetchResponse()
		resp.ErrorCode = code
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = offsetsTopicName
		for _, rp := range parts {
			rt.Partitions = append(rt.Partitions, *rp)
		}
		resp.Topics = append(resp.Topics, rt)
		return resp
	}
	ends := func(rp *kmsg.FetchResponseTopicPartition, hw, lso int64, code int16) *kmsg.FetchResponseTopicPartition {
		rp.HighWatermark, rp.LastStableOffset, rp.ErrorCode = hw, lso, code
		return rp
	}
	empty := func(pt int32) *kmsg.FetchResponseTopicPartition { return fetched{}.partition(pt) }
	badMagic := func(pt int32) *kmsg.FetchResponseTopicPartition {
		rp := empty(pt)
		rp.RecordBatches = make([]byte, 20)
		rp.RecordBatches[11], rp.RecordBatches[16] = 8, 7 // a whole 20-byte batch of magic 7
		return rp
	}
	cases := []struct {
		name       string
		resp       *kmsg.FetchResponse
		progressed bool
		outOfRange []int32
		reason     string // the problem's; "" for none
		goal       map[int32]int64
		next       int64 // partition 0's
		ahead      time.Duration
	}{
		{name: "records to the goal; the newest commit 2s past the answer",
			resp:       answer(0, ends(commit.partition(0), 1, 1, 0), ends(empty(1), 0, 0, 0), ends(empty(9), 5, 5, 0)),
			progressed: true, goal: map[int32]int64{0: 1, 1: 0}, next: 1, ahead: 2 * time.Second},
		{name: "before Fetch v4 the high watermark is the goal",
			resp: answer(0, ends(empty(0), 7, -1, 0)), goal: map[int32]int64{0: 7}},
		{name: "the log start moved past the next offset: a rewind, progress",
			resp:       answer(0, ends(empty(0), 0, 0, kerr.OffsetOutOfRange.Code)),
			progressed: true, outOfRange: []int32{0}, goal: map[int32]int64{}},
		{name: "Read on __consumer_offsets denied",
			resp: answer(kerr.TopicAuthorizationFailed.Code), reason: proof.OffsetsTopicDenied, goal: map[int32]int64{}},
		{name: "a partition's error",
			resp: answer(0, ends(empty(0), 0, 0, kerr.TopicAuthorizationFailed.Code)), reason: proof.OffsetsTopicDenied, goal: map[int32]int64{}},
		{name: "a batch that does not decode",
			resp: answer(0, ends(badMagic(0), 30, 30, 0)), reason: proof.OffsetsTopicUndecodable, goal: map[int32]int64{0: 30}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newOffsetsLogState()
			lps := []*offsetsLogPartition{s.follow(0, []string{group}), s.follow(1, []string{group})}
			lps[0].startAt(0)
			lps[1].startAt(0)
			c := newCatchUp(lps)
			var ahead time.Duration
			progressed, outOfRange, problem := c.fold(tc.resp, commitTime0.Add(-2*time.Second), &ahead)
			if progressed != tc.progressed || !slices.Equal(outOfRange, tc.outOfRange) || problem.reason != tc.reason {
				t.Errorf("fold = %v, %v, %q (%s); want %v, %v, %q", progressed, outOfRange, problem.reason, problem.text,
					tc.progressed, tc.outOfRange, tc.reason)
			}
			if !maps.Equal(c.goal, tc.goal) || lps[0].next != tc.next || ahead != tc.ahead {
				t.Errorf("goal %v, next %d, ahead %v; want %v, %d, %v", c.goal, lps[0].next, ahead, tc.goal, tc.next, tc.ahead)
			}
			// The next request asks only the partitions below their goal.
			var asked []int32
			if req := c.request([16]byte{1}); req != nil {
				for _, fp := range req.Topics[0].Partitions {
					asked = append(asked, fp.Partition)
				}
			}
			var want []int32
			for _, lp := range lps {
				if g, ok := tc.goal[lp.partition]; !ok || lp.next < g {
					want = append(want, lp.partition)
				}
			}
			if !slices.Equal(asked, want) {
				t.Errorf("next request asks %v, want %v", asked, want)
			}
		})
	}
}

// A share group's start offsets (Kafka 4.1+, KIP-932; seed 002's share
// consumers) as DescribeShareGroupOffsets answers them, v0 without lag and
// v1 with it.
func TestFoldShareOffsets(t *testing.T) {
	const g = "ledger-share"
	orders0, orders1 := topicPartition{Topic: "orders", Partition: 0}, topicPartition{Topic: "orders", Partition: 1}
	part := func(p int32, start, lag int64, code int16) kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition {
		rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
		rp.Partition, rp.StartOffset, rp.Lag, rp.ErrorCode = p, start, lag, code
		return rp
	}
	group := func(code int16, topic string, parts ...kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition) kmsg.DescribeShareGroupOffsetsResponseGroup {
		rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		rg.GroupID, rg.ErrorCode = g, code
		rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		rt.Topic, rt.TopicID, rt.Partitions = topic, [16]byte{7}, parts
		rg.Topics = append(rg.Topics, rt)
		return rg
	}
	cases := []struct {
		name     string
		version  int16
		group    kmsg.DescribeShareGroupOffsetsResponseGroup
		starts   map[topicPartition]int64
		lags     map[topicPartition]int64
		failures []string
	}{
		{name: "v1: start offsets and lags; a negative start is none, a negative lag unknown", version: 1,
			group:  group(0, "orders", part(0, 400, 12, 0), part(1, -1, -1, 0)),
			starts: map[topicPartition]int64{orders0: 400, orders1: proof.NoOffset}, lags: map[topicPartition]int64{orders0: 12}},
		{name: "v0: no lag even when the field is set; a topic by ID only", version: 0,
			group:  group(0, "", part(0, 400, 12, 0), part(1, 3, 0, 0)),
			starts: map[topicPartition]int64{orders0: 400, orders1: 3}},
		{name: "a partition denied, one left out", version: 1,
			group: group(0, "orders", part(0, 0, 0, kerr.TopicAuthorizationFailed.Code)),
			failures: []string{
				proof.ReasonAuthorizationFailed + " orders 0 " + g,
				reasonForError(errors.New("left out")) + " orders 1 " + g,
			}},
		{name: "the group denied: its partitions are not also left out", version: 1,
			group:    group(kerr.GroupAuthorizationFailed.Code, "orders"),
			failures: []string{proof.ReasonAuthorizationFailed + "  -1 " + g}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ans := newShareOffsetsAnswer(map[string][]topicPartition{g: {orders0, orders1}})
			resp := kmsg.NewPtrDescribeShareGroupOffsetsResponse()
			resp.Version = tc.version
			resp.Groups = append(resp.Groups, tc.group)
			ans.fold(map[[16]byte]string{{7}: "orders"}, resp)
			ans.leftOut()
			if got := failureKeys(ans.failures); !slices.Equal(got, tc.failures) {
				t.Errorf("failures = %q, want %q", got, tc.failures)
			}
			if !maps.Equal(ans.startOffsets[g], tc.starts) || !maps.Equal(ans.lags[g], tc.lags) {
				t.Errorf("starts %v lags %v; want %v, %v", ans.startOffsets[g], ans.lags[g], tc.starts, tc.lags)
			}
		})
	}
}

// ListOffsets by timestamp for seed 000's undated lagging partitions: the
// request asks each partition at one timestamp a round, the answer gives
// an offset (-1: no record at or after it), an error, or nothing for a
// partition not asked.
func TestFoldTimestampOffsets(t *testing.T) {
	orders0, orders1 := topicPartition{Topic: "orders", Partition: 0}, topicPartition{Topic: "orders", Partition: 1}
	payments0 := topicPartition{Topic: "payments", Partition: 0}
	byPartition := map[topicPartition][]int64{orders0: {1000, 2000}, orders1: {1000}, payments0: {5000}}
	req, asked := timestampRequest(byPartition, 0)
	if want := []timestampTarget{{orders0, 1000}, {orders1, 1000}, {payments0, 5000}}; !slices.Equal(asked, want) {
		t.Fatalf("round 0 asks %v, want %v", asked, want)
	}
	if len(req.Topics) != 2 || req.Topics[0].Topic != "orders" || len(req.Topics[0].Partitions) != 2 || req.IsolationLevel != 0 {
		t.Fatalf("round 0 request %+v: want orders (2 partitions) and payments, read_uncommitted", req.Topics)
	}
	if _, asked := timestampRequest(byPartition, 1); !slices.Equal(asked, []timestampTarget{{orders0, 2000}}) {
		t.Errorf("round 1 asks %v, want orders/0 at 2000 only", asked)
	}
	if req, _ := timestampRequest(byPartition, 2); req != nil {
		t.Errorf("round 2 asks %+v, want nothing", req.Topics)
	}

	resp := kmsg.NewPtrListOffsetsResponse()
	answerTopic := func(topic string, parts ...kmsg.ListOffsetsResponseTopicPartition) {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic, rt.Partitions = topic, parts
		resp.Topics = append(resp.Topics, rt)
	}
	part := func(p int32, offset int64, code int16) kmsg.ListOffsetsResponseTopicPartition {
		rp := kmsg.NewListOffsetsResponseTopicPartition()
		rp.Partition, rp.Offset, rp.ErrorCode = p, offset, code
		return rp
	}
	answerTopic("orders", part(0, 412, 0), part(1, -1, 0), part(7, 3, 0))
	answerTopic("payments", part(0, 0, kerr.NotLeaderForPartition.Code))
	answers := make(map[timestampTarget]offsetForTimestamp)
	foldTimestampOffsets(answers, asked, resp)
	want := map[timestampTarget]offsetForTimestamp{
		{orders0, 1000}:   {offset: 412, read: true},
		{orders1, 1000}:   {offset: -1, read: true},
		{payments0, 5000}: {problem: "ListOffsets by timestamp failed: " + describeError(kerr.NotLeaderForPartition)},
	}
	if !maps.Equal(answers, want) {
		t.Errorf("answers = %v, want %v", answers, want)
	}
}

// Which records the pass fetches around committed offsets, per leader:
// seed 000's lagging consumer group (KIP-848: its offsets expire per
// commit, so the record before the commit dates it), a share group beside
// it (its start offset is not dated, only read for headroom), and the
// commits nothing is read for (at the log end with nothing before it,
// below the log start, on a partition without a leader).
func TestTimestampWants(t *testing.T) {
	orders := func(p int32) topicPartition { return topicPartition{Topic: "orders", Partition: p} }
	ts := &topicState{name: "orders", partitions: map[int32]*partitionState{
		0: {leader: 1, usable: true, logStart: 100, logEnd: 500},
		1: {leader: 2, usable: true, logStart: 0, logEnd: 0},
		2: {leader: 2, usable: true, logStart: 100, logEnd: 500},
		3: {leader: 3, logStart: 0, logEnd: 500}, // no leader: not usable
		4: {leader: 3, usable: true, logStart: 0, logEnd: 500},
	}}
	p := &pass{
		topics: map[string]*topicState{"orders": ts},
		groups: []string{"ledger-settle-consumer", "ledger-share"},
		groupInfo: map[string]*groupState{
			"ledger-settle-consumer": {stateKnown: true, protocol: proof.ProtocolConsumer, committed: map[topicPartition]int64{
				orders(0): 400, orders(1): 0, orders(2): 50, orders(3): 7, orders(4): 500}},
			"ledger-share": {stateKnown: true, protocol: proof.ProtocolShare, committed: map[topicPartition]int64{
				orders(0): 400, orders(4): proof.NoOffset}},
		},
	}
	byLeader, needers := p.timestampWants()
	wantLeaders := map[int32]map[topicPartition][]int64{
		1: {orders(0): {399, 400}},
		3: {orders(4): {499}},
	}
	if len(byLeader) != len(wantLeaders) {
		t.Errorf("leaders asked %v, want %v", byLeader, wantLeaders)
	}
	for leader, want := range wantLeaders {
		got := byLeader[leader]
		for tp := range got {
			slices.Sort(got[tp])
		}
		if !maps.EqualFunc(got, want, slices.Equal) {
			t.Errorf("leader %d asked %v, want %v", leader, got, want)
		}
	}
	wantNeeders := map[timestampWant][]commitNeeds{
		{orders(0), 399}: {{group: "ledger-settle-consumer", committed: 400, target: -1}},
		{orders(0), 400}: {{group: "ledger-share", committed: 400, target: -1}},
		{orders(4), 499}: {{group: "ledger-settle-consumer", committed: 500, target: -1}},
	}
	if !maps.EqualFunc(needers, wantNeeders, slices.Equal) {
		t.Errorf("needers = %v, want %v", needers, wantNeeders)
	}
}

// Which records the pass reads for diverged consumers, and what it keeps:
// seed 000's lagging group after an unclean election, its commits on
// orders carrying leader epochs whose ends the leaders answered. Only a
// commit whose epoch ends inside the log and below it is asked about
// (the consumer rewinds there); one record is kept per group, the first
// at or after the end, and an unread one leaves nothing.
func TestRewindWants(t *testing.T) {
	orders := func(p int32) topicPartition { return topicPartition{Topic: "orders", Partition: p} }
	ts := &topicState{name: "orders", partitions: map[int32]*partitionState{
		0: {leader: 1, usable: true, logStart: 0, logEnd: 500},   // diverged: ends at 300 < 400
		1: {leader: 2, usable: true, logStart: 100, logEnd: 500}, // ends at 50, below the log start: expired, not asked
		2: {leader: 2, usable: true, logStart: 0, logEnd: 500},   // ends at the committed offset: not diverged
		3: {leader: 3, logStart: 0, logEnd: 500},                 // no leader
		4: {leader: 3, usable: true, logStart: 0, logEnd: 500},   // no epoch
		5: {leader: 2, usable: true, logStart: 0, logEnd: 500},   // diverged: ends at 10
		6: {leader: 2, usable: true, logStart: 0, logEnd: 500},   // epoch unknown to the leader
	}}
	p := &pass{
		topics: map[string]*topicState{"orders": ts},
		groups: []string{"ledger-settle-consumer"},
		groupInfo: map[string]*groupState{
			"ledger-settle-consumer": {
				committed: map[topicPartition]int64{orders(0): 400, orders(1): 400, orders(2): 400, orders(3): 400, orders(4): 400, orders(5): 20, orders(6): 400},
				epochs:    map[topicPartition]int32{orders(0): 3, orders(1): 3, orders(2): 3, orders(3): 3, orders(5): 1, orders(6): 9},
			},
		},
		epochEnds: map[epochAt]epochEnd{
			{orders(0), 3}: {3, 300}, {orders(1), 3}: {3, 50}, {orders(2), 3}: {3, 400}, {orders(3), 3}: {3, 300},
			{orders(5), 1}: {1, 10}, {orders(6), 9}: {-1, -1},
		},
	}
	byLeader, needers := p.rewindWants()
	want := map[int32]map[topicPartition][]int64{1: {orders(0): {300}}, 2: {orders(5): {10}}}
	if !maps.EqualFunc(byLeader, want, func(a, b map[topicPartition][]int64) bool { return maps.EqualFunc(a, b, slices.Equal) }) {
		t.Errorf("asked %v, want %v", byLeader, want)
	}
	wantNeeders := map[timestampWant][]commitNeeds{
		{orders(0), 300}: {{group: "ledger-settle-consumer", committed: 400, target: -1}},
		{orders(5), 10}:  {{group: "ledger-settle-consumer", committed: 20, target: -1}},
	}
	if !maps.EqualFunc(needers, wantNeeders, slices.Equal) {
		t.Errorf("needers = %v, want %v", needers, wantNeeders)
	}

	at300 := time.UnixMilli(1_700_000_000_000)
	found := map[timestampWant]fetchedRecords{
		// The batch holding 300 starts at 298.
		{orders(0), 300}: {records: []recordStamp{{298, at300.Add(-time.Second)}, {300, at300}, {301, at300.Add(time.Second)}}, through: 302},
	}
	missing := foldRewindTimestamps(p.groupInfo, needers, found)
	got := p.groupInfo["ledger-settle-consumer"].rewind
	if missing != 1 || len(got) != 1 || !got[orders(0)].Equal(at300) {
		t.Errorf("kept %v (%d missing), want orders/0 at %v and orders/5 missing", got, missing, at300)
	}
}

// Seed 003's group while its coordinator moves: OffsetFetch answered no
// committed offset, but the reader of __consumer_offsets holds the
// group's commit of 6 with no tombstone after it. The observation carries
// it (LoggedOffset) so the proof tells neither a fresh group nor offsets
// gone; an answered offset the log holds is dated as before, and one the
// log does not hold carries nothing.
func TestExactTimesKeepACommitTheCoordinatorDidNotAnswer(t *testing.T) {
	committedAt := time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)
	tp := func(p int32) topicPartition { return topicPartition{Topic: "settle-task", Partition: p} }
	r := offsetsTopicResult{groups: map[string]groupRecords{"ledger-settle-consumer": {commits: map[topicPartition]commitRecord{
		tp(0): {offset: 6, commitMs: committedAt.UnixMilli()},
		tp(1): {offset: 4, commitMs: committedAt.UnixMilli()},
	}}}}
	obs := proof.Observation{Group: proof.GroupObservation{ID: "ledger-settle-consumer"}, Topics: []proof.TopicObservation{{
		Name: "settle-task", Partitions: []proof.PartitionObservation{
			{Partition: 0, Committed: proof.NoOffset},
			{Partition: 1, Committed: 4},
			{Partition: 2, Committed: proof.NoOffset},
		}}}}
	r.exactTimes(&obs)
	ps := obs.Topics[0].Partitions
	if !ps[0].LoggedOffsetKnown || ps[0].LoggedOffset != 6 || !ps[0].LastCommit.IsZero() {
		t.Errorf("partition 0: logged %d (%v), last commit %v; want the log's 6 and no commit time", ps[0].LoggedOffset, ps[0].LoggedOffsetKnown, ps[0].LastCommit)
	}
	if ps[1].LoggedOffsetKnown || !ps[1].LastCommit.Equal(committedAt) {
		t.Errorf("partition 1: logged %v, last commit %v; want dated %v", ps[1].LoggedOffsetKnown, ps[1].LastCommit, committedAt)
	}
	if ps[2].LoggedOffsetKnown {
		t.Error("partition 2: the log holds no commit, none carried")
	}
}
