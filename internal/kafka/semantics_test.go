package kafka

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Tests that pin the broker behaviours the proof relies on; each is named
// in docs/kafka-semantics.md.

// A leader answers ListOffsets and a coordinator OffsetFetch at different
// instants, and a live consumer commits past a log end read a moment
// earlier. The observer reads log end only after the committed offsets, so
// a commit that lands between the two reads never looks like "committed
// beyond log end" (busy topics used to be denied for it). The control hook
// holds the observer's OffsetFetch until the observer's ListOffsets(latest)
// arrives (it would, if the two were read side by side), or half a second,
// then produces and commits past the old end before letting it through.
func TestObserveReadsLogEndAfterCommittedOffsets(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "payments", 1, nil)
	c.ProduceTo(t, "payments", 0, 10)
	c.Commit(t, "settle", "payments", 0, 10) // caught up at the end

	var sawLatest, done atomic.Bool
	c.ControlKey(int16(kmsg.ListOffsets), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		for _, rt := range kreq.(*kmsg.ListOffsetsRequest).Topics {
			for _, rp := range rt.Partitions {
				if rt.Topic == "payments" && rp.Timestamp == listLatest {
					sawLatest.Store(true)
				}
			}
		}
		return nil, nil, false
	})
	producer := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	c.ControlKey(int16(kmsg.OffsetFetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if done.Load() || !strings.Contains(kreq.(*kmsg.OffsetFetchRequest).Groups[0].Group, "settle") {
			return nil, nil, false
		}
		done.Store(true)
		c.SleepControl(func() {
			deadline := time.Now().Add(500 * time.Millisecond)
			for !sawLatest.Load() && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			// The consumer goes on: 5 more records, committed at the new end.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var recs []*kgo.Record
			for range 5 {
				recs = append(recs, &kgo.Record{Topic: "payments", Partition: 0, Value: []byte("p")})
			}
			if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Errorf("produce: %v", err)
			}
			var os kadm.Offsets
			os.Add(kadm.Offset{Topic: "payments", Partition: 0, At: 15, LeaderEpoch: -1})
			if err := kadm.NewClient(producer).CommitAllOffsets(ctx, "settle", os); err != nil {
				t.Errorf("commit: %v", err)
			}
		})
		return nil, nil, false
	})

	o, _ := newTestObserver(t)
	obs := observe(t, o, Connection{BootstrapServers: c.Addrs}, Target{Group: "settle", Topics: []string{"payments"}})[0]
	requireNoFailures(t, obs)
	p := partition(t, obs, "payments", 0)
	if !done.Load() || p.Committed != 15 {
		t.Fatalf("the commit did not land during the observation: committed %d", p.Committed)
	}
	if p.LogEnd < p.Committed {
		t.Errorf("log end %d read before committed offset %d: a live consumer reads as beyond the end", p.LogEnd, p.Committed)
	}
	r := proof.Evaluate(obs, proof.Policy{GroupID: "settle", Topics: []string{"payments"}, RecoveryWindow: time.Hour}, obs.ObservedAt)
	for _, v := range r.Violations {
		if v.Reason == proof.ReasonCommittedOffsetBeyondLogEnd {
			t.Errorf("false %s: %s", v.Reason, v.Message)
		}
	}
}

// A topic without its own retention.ms takes the broker's default, and
// every partition leader deletes by its own broker's. kfake keeps one
// broker config for all and even reports a topic's retention.ms as the
// built-in default when log.retention.ms is set on the brokers; asked of
// the brokers themselves, the observer takes the value they really apply.
func TestObserveInheritedRetentionFromTheBrokers(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithBrokerConfigs(map[string]string{"log.retention.ms": "3600000"}))
	c.CreateTopic(t, "inherits", 1, nil)
	c.CreateTopic(t, "overrides", 1, map[string]string{"retention.ms": "86400000"})

	o, _ := newTestObserver(t)
	obs := observe(t, o, Connection{BootstrapServers: c.Addrs}, Target{Group: "g", Topics: []string{"inherits", "overrides"}})[0]
	requireNoFailures(t, obs)
	if got := topicObs(t, obs, "inherits").RetentionMs; !is(got, "3600000") || got.Source != "broker default log.retention.ms" {
		t.Errorf("inherited retention.ms = %+v, want the brokers' 3600000 (log.retention.ms)", got)
	}
	if got := topicObs(t, obs, "overrides").RetentionMs; !is(got, "86400000") || got.Source != "" {
		t.Errorf("overridden retention.ms = %+v, want the topic's own 86400000", got)
	}
}

// Brokers configured differently (static server.properties per broker):
// the strictest default governs. kfake has one config for all brokers, so
// broker 2 answers DescribeConfigs here through a control hook, as a
// broker with log.retention.hours=24 would.
func TestObserveStrictestBrokerDefault(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithBrokers(3))
	c.CreateTopic(t, "orders", 3, nil)
	c.ControlKey(int16(kmsg.DescribeConfigs), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.DescribeConfigsRequest)
		if len(req.Resources) != 1 || req.Resources[0].ResourceType != kmsg.ConfigResourceTypeBroker || req.Resources[0].ResourceName != "2" {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "2"
		static := map[string]*string{
			"offsets.retention.minutes":  kmsg.StringPtr("10080"),
			"log.retention.ms":           nil, // unset: minutes, then hours decide
			"log.retention.hours":        kmsg.StringPtr("24"),
			"log.retention.bytes":        kmsg.StringPtr("-1"),
			"log.message.timestamp.type": kmsg.StringPtr("CreateTime"),
		}
		for _, name := range req.Resources[0].ConfigNames {
			v, ok := static[name]
			if !ok {
				continue
			}
			rc := kmsg.NewDescribeConfigsResponseResourceConfig()
			rc.Name, rc.Value, rc.Source = name, v, kmsg.ConfigSourceStaticBrokerConfig
			rr.Configs = append(rr.Configs, rc)
		}
		resp.Resources = append(resp.Resources, rr)
		return resp, nil, true
	})

	o, _ := newTestObserver(t)
	obs := observe(t, o, Connection{BootstrapServers: c.Addrs}, Target{Group: "g", Topics: []string{"orders"}})[0]
	requireNoFailures(t, obs)
	got := topicObs(t, obs, "orders").RetentionMs
	if !is(got, "86400000") || got.Source != "broker default log.retention.hours, the strictest of 3 brokers that disagree" {
		t.Errorf("retention.ms = %+v, want broker 2's 24h (86400000), the strictest, saying so", got)
	}
	r := proof.Evaluate(obs, proof.Policy{GroupID: "g", Topics: []string{"orders"}, RecoveryWindow: 72 * time.Hour}, obs.ObservedAt)
	if v := findViolation(r, proof.ReasonRetentionShorterThanWindow); v == nil ||
		!strings.Contains(v.Message, "(broker default log.retention.hours, the strictest of 3 brokers that disagree)") {
		t.Errorf("violations = %+v, want RetentionShorterThanWindow naming where 24h comes from", r.Violations)
	}
}

func findViolation(r proof.Result, reason string) *proof.Violation {
	for i := range r.Violations {
		if r.Violations[i].Reason == reason {
			return &r.Violations[i]
		}
	}
	return nil
}

// A compacting topic's tombstones live delete.retention.ms: the observer
// reads it (and the timestamp settings) for every topic.
func TestObserveCompactedTopicTombstoneRetention(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "accounts-changelog", 1, map[string]string{"cleanup.policy": "compact", "delete.retention.ms": "86400000"})
	c.CreateTopic(t, "accounts-cdc", 1, map[string]string{"cleanup.policy": "compact", "delete.retention.ms": "1209600000"})
	o, _ := newTestObserver(t)
	obs := observe(t, o, Connection{BootstrapServers: c.Addrs}, Target{Group: "g", Topics: []string{"accounts-cdc", "accounts-changelog"}})[0]
	requireNoFailures(t, obs)
	if got := topicObs(t, obs, "accounts-changelog"); !is(got.DeleteRetentionMs, "86400000") || !is(got.CleanupPolicy, "compact") {
		t.Fatalf("changelog configs = %+v", got)
	}
	r := proof.Evaluate(obs, proof.Policy{GroupID: "g", Topics: []string{"accounts-cdc", "accounts-changelog"}, RecoveryWindow: 7 * 24 * time.Hour}, obs.ObservedAt)
	var got []string
	for _, v := range r.Violations {
		got = append(got, v.Topic+"/"+v.Reason)
	}
	if want := "accounts-changelog/" + proof.ReasonTombstoneRetentionShorterThanWindow; strings.Join(got, ",") != want {
		t.Errorf("violations = %v, want only %s (14 days of tombstones cover the 7-day window)", got, want)
	}
}

// KIP-496: a Stable classic consumer group expires the offsets of topics
// no member subscribes to per commit. The observer reads the members'
// subscriptions from DescribeGroups.
//
// The broker serves only classic groups (the consumer protocol off): one
// that may convert the group would date all its commits (MigrationPossible).
func TestObserveClassicGroupSubscriptions(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithBrokerConfigs(map[string]string{configRebalanceProtocols: "classic"}))
	c.CreateTopic(t, "orders", 1, nil)
	c.CreateTopic(t, "refunds", 1, nil)
	c.Produce(t, "orders", 5)
	c.Produce(t, "refunds", 5)
	c.Commit(t, "billing", "refunds", 0, 5) // committed earlier, no longer subscribed
	c.JoinGroup(t, "billing", kafkatest.Classic, "orders")

	o, _ := newTestObserver(t)
	obs := observe(t, o, Connection{BootstrapServers: c.Addrs}, Target{Group: "billing", Topics: []string{"orders", "refunds"}})[0]
	requireNoFailures(t, obs)
	g := obs.Group
	if g.Protocol != proof.ProtocolClassic || g.ProtocolType != proof.ProtocolTypeConsumer || g.State != proof.GroupStateStable ||
		!g.SubscriptionKnown || strings.Join(g.Subscribed, ",") != "orders" {
		t.Fatalf("group = %+v, want a Stable classic consumer group subscribed to orders", g)
	}
	if !proof.ExpiresPerCommit(g, "refunds") || proof.ExpiresPerCommit(g, "orders") {
		t.Errorf("per-commit expiry: refunds %v, orders %v; want refunds only", proof.ExpiresPerCommit(g, "refunds"), proof.ExpiresPerCommit(g, "orders"))
	}
	// The unsubscribed topic's commit is dated by the record before it.
	if p := partition(t, obs, "refunds", 0); p.PrecedingTimestamp.IsZero() {
		t.Errorf("refunds/0 commit not dated: %+v", p)
	}
}

// advertise makes the brokers list an API kfake does not serve (a newer
// broker's), so the client sends it and a control hook answers it.
func advertise(t *testing.T, c *kafkatest.Cluster, key, maxVersion int16) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	base, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, c.Client(t))
	if err != nil {
		t.Fatal(err)
	}
	c.ControlKey(int16(kmsg.ApiVersions), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.ApiVersionsRequest)
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		resp.ApiKeys = append(append(resp.ApiKeys, base.ApiKeys...), kmsg.ApiVersionsResponseApiKey{ApiKey: key, MaxVersion: maxVersion})
		resp.SupportedFeatures, resp.FinalizedFeatures, resp.FinalizedFeaturesEpoch = base.SupportedFeatures, base.FinalizedFeatures, base.FinalizedFeaturesEpoch
		return resp, nil, true
	})
}

// notClassic answers DescribeGroups for group as Kafka 4.x does for a
// group that is not classic: Dead, GROUP_ID_NOT_FOUND (kfake describes
// KIP-848 and simple groups it holds as live).
func notClassic(c *kafkatest.Cluster, group string) {
	c.ControlKey(int16(kmsg.DescribeGroups), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.DescribeGroupsRequest)
		if len(req.Groups) != 1 || req.Groups[0] != group {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group, rg.State, rg.ErrorCode = group, "Dead", kerr.GroupIDNotFound.Code
		resp.Groups = append(resp.Groups, rg)
		return resp, nil, true
	})
}

// Streams groups (Kafka 4.1+, KIP-1071) answer not-found to DescribeGroups
// and ConsumerGroupDescribe; StreamsGroupDescribe knows them. kfake serves
// no streams group: broker answers of a 4.1 broker come through control
// hooks, the committed offsets from kfake.
func TestObserveStreamsGroup(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "orders", 1, nil)
	c.Produce(t, "orders", 5)
	c.Commit(t, "orders-app", "orders", 0, 5)
	advertise(t, c, int16(kmsg.StreamsGroupDescribe), 0)
	notClassic(c, "orders-app")
	c.ControlKey(int16(kmsg.StreamsGroupDescribe), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.StreamsGroupDescribeRequest)
		resp := req.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
		for _, g := range req.Groups {
			rg := kmsg.NewStreamsGroupDescribeResponseGroup()
			rg.Group = g
			if g == "orders-app" {
				rg.State = "Empty"
			} else {
				rg.ErrorCode = kerr.GroupIDNotFound.Code
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil, true
	})

	o, _ := newTestObserver(t)
	obs := observe(t, o, Connection{BootstrapServers: c.Addrs}, Target{Group: "orders-app", Topics: []string{"orders"}})[0]
	requireNoFailures(t, obs)
	if g := obs.Group; g.Protocol != proof.ProtocolStreams || g.State != proof.GroupStateEmpty {
		t.Fatalf("group = %+v, want an Empty streams group", g)
	}
	if !proof.ExpiresPerCommit(obs.Group, "orders") || partition(t, obs, "orders", 0).PrecedingTimestamp.IsZero() {
		t.Errorf("a streams group's offsets expire per commit and are dated: %+v", partition(t, obs, "orders", 0))
	}
}

// A group with committed offsets that no describe call knows (a streams
// group on a broker that was not asked) is never read as "Dead, nothing
// expires": the proof says it cannot tell.
func TestObserveUnclassifiedGroupIsNotDead(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "orders", 1, nil)
	c.Produce(t, "orders", 5)
	c.Commit(t, "orders-app", "orders", 0, 5)
	notClassic(c, "orders-app")

	o, _ := newTestObserver(t)
	obs := observe(t, o, Connection{BootstrapServers: c.Addrs}, Target{Group: "orders-app", Topics: []string{"orders"}})[0]
	requireNoFailures(t, obs)
	if g := obs.Group; g.State != proof.GroupStateDead || g.Protocol != "" {
		t.Fatalf("group = %+v, want Dead with no protocol", g)
	}
	r := proof.Evaluate(obs, proof.Policy{GroupID: "orders-app", Topics: []string{"orders"}, RecoveryWindow: time.Hour}, obs.ObservedAt)
	if r.Verdict != proof.Unknown || findViolation(r, proof.ReasonGroupTypeUnknown) == nil {
		t.Errorf("verdict %s, violations %+v: want Unknown, GroupTypeUnknown", r.Verdict, r.Violations)
	}
}

// Kafka 4.0 (KAFKA-18813) answers ConsumerGroupDescribe with
// TOPIC_AUTHORIZATION_FAILED when the principal may not Describe a topic
// the group subscribes to: the failure names the topic ACL, not the group.
func TestObserveConsumerGroupDescribeTopicDenied(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "jobs", 1, nil)
	c.JoinGroup(t, "workers", kafkatest.Consumer, "jobs")
	notClassic(c, "workers")
	h := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.ConsumerGroupDescribe}, Group: "workers", Err: kerr.TopicAuthorizationFailed, Count: -1})
	defer h.Remove()

	o, _ := newTestObserver(t)
	obs := observe(t, o, Connection{BootstrapServers: c.Addrs}, Target{Group: "workers", Topics: []string{"jobs"}})[0]
	f := requireFailure(t, obs, proof.ReasonAuthorizationFailed, proof.APIConsumerGroupDescribe, "")
	if !strings.Contains(f.Message, "grant Describe on those topics (the policy names jobs") || strings.Contains(f.Message, "needs Describe on the group") {
		t.Errorf("message = %q, want it to name the topic ACL", f.Message)
	}
}

// Exact commit times from __consumer_offsets (opt-in). The records are
// what Kafka's coordinator writes for the commits kfake holds, with kfake's
// own commit times. The committed records are 6 days old, so without the
// log the commit can only be bounded by their timestamp; with it, it is
// known to be recent.
func TestObserveOffsetsTopicExactCommitTimes(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t, kafkatest.WithSASL("SCRAM-SHA-256", "admin", adminPassword),
		kafkatest.WithKfake(
			kfake.User("SCRAM-SHA-512", "reader", readerPassword, readerACLs()...),
			kfake.User("SCRAM-SHA-512", "no-offsets-topic", readerPassword,
				append(without(readerACLs(), kmsg.ACLResourceTypeTopic, kmsg.ACLOperationRead),
					allow(kmsg.ACLResourceTypeTopic, "clicks", kmsg.ACLOperationRead))...),
		))
	c.CreateOffsetsTopic(t, 5)
	// 30 days of retention: the 6-day-old records the group lags on
	// outlive the window (issue 22 item 6 makes a shorter headroom fail).
	c.CreateTopic(t, "clicks", 2, map[string]string{"retention.ms": "2592000000"})
	old := time.Now().Add(-6 * 24 * time.Hour).Truncate(time.Millisecond)
	var recs []*kgo.Record
	for p := range int32(2) {
		for range 4 {
			recs = append(recs, &kgo.Record{Topic: "clicks", Partition: p, Timestamp: old, Value: []byte("c")})
		}
	}
	c.ProduceRecords(t, recs...)
	c.CommitOffsets(t, "flink-clicks", "clicks", map[int32]int64{0: 4, 1: 2})
	c.Commit(t, "other-job", "clicks", 0, 1)
	c.LogCommits(t, "flink-clicks", "other-job")
	at := c.GroupInfo("flink-clicks").Commits["clicks"][0].At.Truncate(time.Millisecond)

	o, _ := newTestObserver(t)
	conn := saslConn(c, "SCRAM-SHA-512", "reader", readerPassword)
	target := Target{Group: "flink-clicks", Topics: []string{"clicks"}, ReadOffsetsTopic: true}
	obs := observe(t, o, conn, target)[0]
	requireNoFailures(t, obs)
	if obs.OffsetsTopic != (proof.OffsetsTopicRead{Requested: true}) {
		t.Fatalf("offsets topic read = %+v, want read without a problem", obs.OffsetsTopic)
	}
	p0 := partition(t, obs, "clicks", 0)
	if !p0.LastCommit.Equal(at) || !p0.PrecedingTimestamp.Equal(old) {
		t.Errorf("clicks/0: last commit %v, preceding record %v; want %v exact, %v", p0.LastCommit, p0.PrecedingTimestamp, at, old)
	}
	policy := proof.Policy{GroupID: "flink-clicks", Topics: []string{"clicks"}, RecoveryWindow: 72 * time.Hour}
	if r := proof.Evaluate(obs, policy, obs.ObservedAt); r.Verdict != proof.Proven {
		t.Errorf("with exact commit times: %s %+v, want Proven", r.Verdict, r.Violations)
	}

	// Without the log the same group is bounded by the 6-day-old records:
	// under 7 days of offsets retention it cannot be proven for 3 days.
	bounded := observe(t, o, conn, Target{Group: "flink-clicks", Topics: []string{"clicks"}})[0]
	if r := proof.Evaluate(bounded, policy, bounded.ObservedAt); r.Verdict != proof.Unknown ||
		findViolation(r, proof.ReasonOffsetsMayExpireBeforeWindow) == nil {
		t.Errorf("bounded: %s %+v, want Unknown, OffsetsMayExpireBeforeWindow", r.Verdict, r.Violations)
	}

	// A new commit is read incrementally on the next pass.
	c.CommitOffsets(t, "flink-clicks", "clicks", map[int32]int64{0: 5 - 1 + 0})
	c.LogCommits(t, "flink-clicks")
	again := partition(t, observe(t, o, conn, target)[0], "clicks", 0)
	if want := c.GroupInfo("flink-clicks").Commits["clicks"][0].At.Truncate(time.Millisecond); !again.LastCommit.Equal(want) {
		t.Errorf("after a new commit: last commit %v, want %v", again.LastCommit, want)
	}

	// A group asked for the first time whose records were read already
	// (same partition or not): the partition is read again for it.
	other := observe(t, o, conn, Target{Group: "other-job", Topics: []string{"clicks"}, ReadOffsetsTopic: true})[0]
	if p := partition(t, other, "clicks", 0); p.LastCommit.IsZero() {
		t.Errorf("other-job: no exact commit time: %+v (problem %q)", p, other.OffsetsTopic.Problem)
	}

	// A principal that may not read __consumer_offsets: bounded, and says why.
	denied := observe(t, o, saslConn(c, "SCRAM-SHA-512", "no-offsets-topic", readerPassword), target)[0]
	requireNoFailures(t, denied)
	if denied.OffsetsTopic.Reason != proof.OffsetsTopicDenied || !strings.Contains(denied.OffsetsTopic.Problem, "denied") ||
		!strings.Contains(denied.OffsetsTopic.Problem, "Read on topic __consumer_offsets") {
		t.Errorf("reason %q, problem = %q, want Denied and the missing ACL named", denied.OffsetsTopic.Reason, denied.OffsetsTopic.Problem)
	}
	if p := partition(t, denied, "clicks", 0); !p.LastCommit.IsZero() {
		t.Errorf("denied, yet exact: %+v", p)
	}
}

// Kafka's partition of a group in __consumer_offsets:
// Utils.abs(groupId.hashCode()) % partitions. Java hash codes computed
// apart (Java's String.hashCode over UTF-16 code units).
func TestPartitionForGroupIsKafkas(t *testing.T) {
	for _, c := range []struct {
		group string
		want  int32 // of 50 partitions
	}{
		{"hello", 22},                  // hashCode 99162322
		{"polygenelubricants", 0},      // hashCode Integer.MIN_VALUE: Utils.abs gives 0
		{"ledger-settle-consumer", 40}, // 1022621140
		{"fanout-outbox", 7},           // -1099335057
		{"订单-消费者", 38},                 // -568507238, non-ASCII
	} {
		if got := partitionForGroup(c.group, 50); got != c.want {
			t.Errorf("partitionForGroup(%q) = %d, want %d", c.group, got, c.want)
		}
	}
}

// Kafka 3.9's ConsumerGroupDescribe asked for several groups answers each
// group once per __consumer_offsets partition the request's groups fall in
// (GroupCoordinatorService.consumerGroupDescribe hands every partition's
// shard all the groups, not its own): only the owning shard's answer is
// true, the others say GROUP_ID_NOT_FOUND, in no fixed order. Seen on
// 3.9.2 (test/realkafka/groups TestDescribeCallsPerGroupType). The control
// hook answers as 3.9 does, the true answer first; a group found by one
// entry is found.
func TestObserveConsumerGroupDescribeDuplicateAnswers(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "jobs", 1, nil)
	c.Produce(t, "jobs", 5)
	c.JoinGroup(t, "workers", kafkatest.Consumer, "jobs")
	c.Commit(t, "reports", "jobs", 0, 2)
	// DescribeGroups as Kafka answers it: reports is a simple group,
	// workers not classic.
	c.ControlKey(int16(kmsg.DescribeGroups), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.DescribeGroupsRequest)
		resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for _, g := range req.Groups {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.State = g, "Empty"
			if g == "workers" {
				rg.State, rg.ErrorCode = "Dead", kerr.GroupIDNotFound.Code
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil, true
	})
	c.ControlKey(int16(kmsg.ConsumerGroupDescribe), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.ConsumerGroupDescribeRequest)
		resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
		for range req.Groups { // one shard per group here: each describes all
			for _, g := range req.Groups {
				rg := kmsg.NewConsumerGroupDescribeResponseGroup()
				rg.Group = g
				if g == "workers" && len(resp.Groups) < len(req.Groups) {
					rg.State = "Stable" // the owning shard's answer, first
				} else {
					rg.ErrorCode = kerr.GroupIDNotFound.Code
				}
				resp.Groups = append(resp.Groups, rg)
			}
		}
		return resp, nil, true
	})

	o, _ := newTestObserver(t)
	obs := observe(t, o, Connection{BootstrapServers: c.Addrs},
		Target{Group: "reports", Topics: []string{"jobs"}}, Target{Group: "workers", Topics: []string{"jobs"}})
	for _, ob := range obs {
		requireNoFailures(t, ob)
	}
	if g := obs[1].Group; g.Protocol != proof.ProtocolConsumer || g.State != proof.GroupStateStable {
		t.Errorf("workers = %+v, want consumer Stable (one entry of the answer found it)", g)
	}
	if g := obs[0].Group; g.Protocol != proof.ProtocolClassic || g.State != proof.GroupStateEmpty {
		t.Errorf("reports = %+v, want a simple classic group", g)
	}
}
