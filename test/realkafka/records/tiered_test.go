package records

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Tiered storage (KIP-405) on a real broker: Kafka's own LocalTieredStorage
// as the remote tier (apachekafka.WithTieredStorage says which broker
// defaults it changes). Each topic here sets what makes its segments move
// in seconds instead of days, and says so: segment.ms 1000 (default 7
// days) so that a segment closes on the next append a second later, and
// local.retention.ms 1000 (default -2: retention.ms) so that a segment,
// once copied to the remote tier, leaves the local disk at once.

// tieredBroker is the one-node tiered broker of the records tests.
func tieredBroker(t *testing.T, d apachekafka.Dist) (*apachekafka.Broker, *kafkatest.Cluster) {
	return sharedCluster(t, d, "tiered", apachekafka.WithTieredStorage())
}

// tieredTopic is the configs of a tiered topic whose closed segments move
// to the remote tier within seconds, with extra on top.
func tieredTopic(extra map[string]string) map[string]string {
	cfg := map[string]string{
		"remote.storage.enable": "true",
		"segment.ms":            "1000",
		"local.retention.ms":    "1000",
	}
	for k, v := range extra {
		cfg[k] = v
	}
	return cfg
}

// ListOffsets timestamps (KIP-405/KIP-1005): EARLIEST is the log start of
// the whole log, remote tier included; EARLIEST_LOCAL (-4, ListOffsets v8+)
// the first offset still on the leader's disk.
const (
	listEarliest      int64 = -2
	listEarliestLocal int64 = -4
)

// listOffsetAt asks topic/p's leader ListOffsets for timestamp at (a
// record time in milliseconds, or one of the special values) and returns
// the offset answered (-1: none) and the record timestamp answered.
func listOffsetAt(t *testing.T, c *kafkatest.Cluster, topic string, p int32, at int64) (int64, int64) {
	t.Helper()
	ctx, cancel := contextFor(30 * time.Second)
	defer cancel()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = p, at
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, c.Client(t))
	if err != nil {
		t.Fatalf("ListOffsets %d of %s/%d: %v", at, topic, p, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("ListOffsets %d of %s/%d: answered %+v", at, topic, p, resp.Topics)
	}
	ap := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(ap.ErrorCode); err != nil {
		t.Fatalf("ListOffsets %d of %s/%d: %v", at, topic, p, err)
	}
	return ap.Offset, ap.Timestamp
}

// offload writes n records to topic/0 (one batch, stamped ts when not
// zero), waits a second so the segment is older than segment.ms, and
// appends one record that rolls it (Kafka rolls only on append): the n
// records' segment is closed and the remote log manager may copy it.
func offload(t *testing.T, c *kafkatest.Cluster, topic string, n int, ts time.Time) {
	t.Helper()
	c.ProduceRecords(t, stamped(topic, n, ts, "")...)
	time.Sleep(1500 * time.Millisecond)
	tick(t, c, topic)
}

// On a tiered topic the leader's disk holds only the tail of the log:
// ListOffsets EARLIEST answers the log start of the whole log (the remote
// tier's), EARLIEST_LOCAL the first offset still local, and once a segment
// is copied and leaves the disk they differ. The observer reads EARLIEST,
// so a group committed into the remote part is judged against the true
// log start (not CommittedOffsetExpired): a consumer resuming there reads
// its records back from the remote tier. Seed 000's outbox topic, tiered:
// the records the fanout has not read are offloaded, not deleted.
func TestTieredEarliestIsTheRemoteLogStart(t *testing.T) {
	t.Parallel()
	eachLine(t, func(t *testing.T, d apachekafka.Dist) {
		_, c := tieredBroker(t, d)
		const topic, group = "tiered-outbox", "tiered-fanout"
		// retention.ms stays Kafka's default (7 days): nothing expires.
		createTopic(t, c, topic, 1, tieredTopic(nil))
		offload(t, c, topic, 5, time.Time{}) // offsets 0–4 in the first segment, 5 rolls
		c.Commit(t, group, topic, 0, 2)

		waitFor(t, 120*time.Second, "the first segment is copied to the remote tier and leaves the disk", func() bool {
			local, _ := listOffsetAt(t, c, topic, 0, listEarliestLocal)
			return local >= 5
		})
		earliest, _ := listOffsetAt(t, c, topic, 0, listEarliest)
		local, _ := listOffsetAt(t, c, topic, 0, listEarliestLocal)
		if earliest != 0 || local != 5 {
			t.Fatalf("Apache Kafka %s: EARLIEST %d, EARLIEST_LOCAL %d; want 0 (the remote tier's) and 5 (the rolled segment's base)", d.Version, earliest, local)
		}

		obs := observe(t, observer(t), conn(c), kafka.Target{Group: group, Topics: []string{topic}, RecoveryWindow: time.Hour, ReadOffsetsTopic: true})
		requireNoFailures(t, obs)
		p := partitionObs(t, obs, topic, 0)
		if p.LogStart != 0 || p.LogEnd != 6 || p.Committed != 2 {
			t.Fatalf("observed %+v; want log start 0 (the whole log's, not the local 5), end 6, committed 2", p)
		}
		if to := topicObs(t, obs, topic); !is(to.RemoteStorageEnable, "true") {
			t.Errorf("remote.storage.enable read %+v, want true", to.RemoteStorageEnable)
		}
		// The record at the committed offset is only in the remote tier:
		// dated by a Fetch the broker serves from there, or (when the
		// remote read did not finish in remote.fetch.max.wait.ms) by
		// ListOffsets by timestamp. Either way the verdict is the same.
		t.Logf("Apache Kafka %s: committed record dated %v (unread: %q), ListOffsets by timestamp read %v: %d",
			d.Version, p.CommittedTimestamp, p.TimestampUnread, p.OffsetForTimestampRead, p.OffsetForTimestamp)
		res := evaluate(obs, group, topic, time.Hour)
		if res.Verdict != proof.Proven || hasViolation(res, proof.ReasonCommittedOffsetExpired) {
			t.Errorf("verdict %s %s; want Proven: offset 2 is in the log (remote), 7 days of retention, a 1 h window", res.Verdict, describeViolations(res))
		}

		// What the verdict relies on: a consumer at the committed offset
		// reads it, served from the remote tier.
		cl := c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(2)}}),
			kgo.FetchMaxWait(200*time.Millisecond))
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var first int64 = -1
		for first < 0 && ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				if first < 0 {
					first = r.Offset
				}
			})
		}
		if first != 2 {
			t.Errorf("Apache Kafka %s: a consumer at offset 2 read first %d (%v), want 2 from the remote tier", d.Version, first, ctx.Err())
		}
	})
}

// The remote tier expires by retention.ms too: the remote log manager
// deletes a copied segment once its newest record is older than
// retention.ms and moves the log start past it (RLMExpirationTask). The
// product sees the new log start, and a group committed below it has lost
// the records between (seed 000 on a tiered topic: CommittedOffsetExpired,
// with the count).
func TestTieredRemoteExpiryMovesLogStart(t *testing.T) {
	t.Parallel()
	eachLine(t, func(t *testing.T, d apachekafka.Dist) {
		_, c := tieredBroker(t, d)
		const topic, group = "tiered-expiry-outbox", "tiered-expiry-fanout"
		// retention.ms 30 s (default 7 days): room, on a loaded machine,
		// to see the segment offloaded before it expires.
		createTopic(t, c, topic, 1, tieredTopic(map[string]string{"retention.ms": "30000"}))
		offload(t, c, topic, 10, time.Time{}) // offsets 0–9, 10 rolls
		c.Commit(t, group, topic, 0, 3)

		waitFor(t, 120*time.Second, "the first segment leaves the disk, copied to the remote tier", func() bool {
			local, _ := listOffsetAt(t, c, topic, 0, listEarliestLocal)
			return local >= 10
		})
		if earliest, _ := listOffsetAt(t, c, topic, 0, listEarliest); earliest != 0 {
			t.Fatalf("Apache Kafka %s: EARLIEST %d once offloaded, before retention.ms; want 0", d.Version, earliest)
		}
		waitFor(t, 120*time.Second, "the remote tier expires the segment and the log start moves", func() bool {
			earliest, _ := listOffsetAt(t, c, topic, 0, listEarliest)
			return earliest >= 10
		})
		start, end := offsets(t, c, topic, 0)
		if start != 10 || end != 11 {
			t.Fatalf("Apache Kafka %s: log start %d, end %d; want 10 (after the expired remote segment) and 11", d.Version, start, end)
		}

		obs := observe(t, observer(t), conn(c), kafka.Target{Group: group, Topics: []string{topic}})
		requireNoFailures(t, obs)
		p := partitionObs(t, obs, topic, 0)
		if p.LogStart != 10 || p.Committed != 3 {
			t.Fatalf("observed %+v; want log start 10, committed 3", p)
		}
		res := evaluate(obs, group, topic, time.Second)
		v := violation(t, res, proof.ReasonCommittedOffsetExpired, topic, 0)
		if res.Verdict != proof.Violated || v.ExpiredRecords != 7 {
			t.Errorf("verdict %s, %d records expired; want Violated with 7", res.Verdict, v.ExpiredRecords)
		}
		code, out := check(t, c, group, topic, "1s")
		if code != exitViolated || out.ExpiredRecords != 7 || !hasCheckReason(out, proof.ReasonCommittedOffsetExpired) {
			t.Errorf("check: exit %d, expiredRecords %d, reasons %v; want exit 1, 7, CommittedOffsetExpired", code, out.ExpiredRecords, checkReasons(out))
		}
	})
}

// An empty cleanup.policy keeps a local topic's records forever
// (TestEmptyCleanupPolicyKeepsRecords), but on a tiered topic the remote
// log manager expires the remote tier by retention.ms whatever the policy
// (RLMExpirationTask reads retention.ms only), moving the log start: the
// product judges such a topic like `delete`, never as infinite retention.
// Both 3.9.2 and 4.4.0 accept the empty policy on a tiered topic (3.9's
// LogConfig refuses only `compact`; 4.4's
// validateRemoteStorageRequiresDeleteCleanupPolicy allows `delete` or
// empty; 4.1 refused it). Seed 000 with an empty policy: the topic's
// owner believed nothing would be deleted.
func TestTieredEmptyCleanupPolicyStillExpires(t *testing.T) {
	t.Parallel()
	eachLine(t, func(t *testing.T, d apachekafka.Dist) {
		_, c := tieredBroker(t, d)
		const topic, group = "tiered-emptypolicy", "tiered-emptypolicy-reader"
		// retention.ms 20 s (default 7 days): the remote tier's expiry in
		// seconds.
		createTopic(t, c, topic, 1, tieredTopic(map[string]string{"cleanup.policy": "", "retention.ms": "20000"}))
		if got := describeConfigsOn(t, c, 1, kmsg.ConfigResourceTypeTopic, topic)["cleanup.policy"]; got.Value == nil || *got.Value != "" {
			t.Fatalf("Apache Kafka %s: cleanup.policy %v, want the empty list it was created with", d.Version, got.Value)
		}
		offload(t, c, topic, 5, time.Time{}) // offsets 0–4, 5 rolls
		c.Commit(t, group, topic, 0, 2)

		// Before it expires: the proof judges retention.ms, not infinity.
		obs := observe(t, observer(t), conn(c), kafka.Target{Group: group, Topics: []string{topic}})
		requireNoFailures(t, obs)
		to := topicObs(t, obs, topic)
		if !to.CleanupPolicy.Present || to.CleanupPolicy.Null || to.CleanupPolicy.Value != "" || !is(to.RemoteStorageEnable, "true") {
			t.Fatalf("read cleanup.policy %+v, remote.storage.enable %+v; want empty and true", to.CleanupPolicy, to.RemoteStorageEnable)
		}
		res := evaluate(obs, group, topic, time.Hour)
		violation(t, res, proof.ReasonRetentionShorterThanWindow, topic, -1)
		if hasViolation(res, proof.ReasonInfiniteRetentionNotAllowed) {
			t.Errorf("a tiered topic with an empty policy judged as infinite retention: %s", describeViolations(res))
		}

		waitFor(t, 120*time.Second, "the remote tier expires the first segment and the log start moves", func() bool {
			start, _ := listOffsetAt(t, c, topic, 0, listEarliest)
			return start >= 5
		})
		if start, end := offsets(t, c, topic, 0); start != 5 || end != 6 {
			t.Fatalf("Apache Kafka %s: log start %d, end %d; want 5 and 6", d.Version, start, end)
		}
		obs = observe(t, observer(t), conn(c), kafka.Target{Group: group, Topics: []string{topic}})
		requireNoFailures(t, obs)
		res = evaluate(obs, group, topic, time.Second)
		if v := violation(t, res, proof.ReasonCommittedOffsetExpired, topic, 0); res.Verdict != proof.Violated || v.ExpiredRecords != 3 {
			t.Errorf("verdict %s, %d records expired; want Violated with 3", res.Verdict, v.ExpiredRecords)
		}
	})
}

// ListOffsets by timestamp searches the remote tier first on a tiered
// topic (RemoteLogManager.findOffsetByTimestamp), then the local log: the
// observer's fallback for an undated lagging record (undated.go) holds
// when the segments it asks about are offloaded. Records stamped 5 days
// ago then records stamped now, both segments in the remote tier only:
// ListOffsets for now − 4 days answers the first record stamped now. A
// group lagging in the 5-day-old segment of a 7-day topic cannot be down
// for 3 days (Violated); one lagging in the fresh segment can (Proven) —
// whether its record is dated by a Fetch the broker serves from the
// remote tier or by ListOffsets. Seed 000's outbox, tiered, with the
// fanout behind.
func TestTieredListOffsetsByTimestampReadsTheRemoteTier(t *testing.T) {
	t.Parallel()
	eachLine(t, func(t *testing.T, d apachekafka.Dist) {
		_, c := tieredBroker(t, d)
		const topic, old, fresh = "tiered-settle", "tiered-settle-behind", "tiered-settle-today"
		// retention.ms stays Kafka's default, 7 days.
		createTopic(t, c, topic, 1, tieredTopic(nil))
		// 0–9 stamped 5 days ago: their segment is rolled by the next
		// append at once (its first timestamp is past segment.ms).
		c.ProduceRecords(t, stamped(topic, 10, time.Now().Add(-5*24*time.Hour), "")...)
		offload(t, c, topic, 10, time.Time{}) // 10–19 now, 20 rolls
		c.Commit(t, old, topic, 0, 5)
		c.Commit(t, fresh, topic, 0, 15)
		waitFor(t, 120*time.Second, "both segments leave the disk, copied to the remote tier", func() bool {
			local, _ := listOffsetAt(t, c, topic, 0, listEarliestLocal)
			return local >= 20
		})
		if earliest, _ := listOffsetAt(t, c, topic, 0, listEarliest); earliest != 0 {
			t.Fatalf("Apache Kafka %s: EARLIEST %d; want 0", d.Version, earliest)
		}
		at := time.Now().Add(-4 * 24 * time.Hour).UnixMilli()
		if o, _ := listOffsetAt(t, c, topic, 0, at); o != 10 {
			t.Fatalf("Apache Kafka %s: ListOffsets for now − 4 days answered %d; want 10, the first record stamped now (in the remote tier)", d.Version, o)
		}

		window := 72 * time.Hour
		for _, tc := range []struct {
			group   string
			verdict proof.Verdict
		}{{old, proof.Violated}, {fresh, proof.Proven}} {
			obs := observe(t, observer(t), conn(c), kafka.Target{Group: tc.group, Topics: []string{topic}, RecoveryWindow: window, ReadOffsetsTopic: true})
			requireNoFailures(t, obs)
			p := partitionObs(t, obs, topic, 0)
			t.Logf("Apache Kafka %s %s: committed record dated %v (unread: %q), ListOffsets by timestamp read %v: %d",
				d.Version, tc.group, p.CommittedTimestamp, p.TimestampUnread, p.OffsetForTimestampRead, p.OffsetForTimestamp)
			if p.CommittedTimestamp.IsZero() && (!p.OffsetForTimestampRead || p.OffsetForTimestamp != 10) {
				t.Errorf("%s: the record at %d is neither dated nor placed by ListOffsets by timestamp (%+v)", tc.group, p.Committed, p)
			}
			res := evaluate(obs, tc.group, topic, window)
			if res.Verdict != tc.verdict {
				t.Errorf("%s (committed %d): verdict %s %s; want %s", tc.group, p.Committed, res.Verdict, describeViolations(res), tc.verdict)
			}
			if tc.verdict == proof.Violated {
				violation(t, res, proof.ReasonRecoveryHeadroomShorterThanWindow, topic, 0)
			}
			code, out := check(t, c, tc.group, topic, window.String())
			if want := map[proof.Verdict]int{proof.Violated: exitViolated, proof.Proven: 0}[tc.verdict]; code != want {
				t.Errorf("check %s: exit %d %s %v; want %d", tc.group, code, out.Verdict, checkReasons(out), want)
			}
		}
	})
}

// fetchOnce sends one Fetch for topic/0 at offset (read_uncommitted, no
// wait) and returns the partition's answer.
func fetchOnce(t *testing.T, c *kafkatest.Cluster, topic string, offset int64) kmsg.FetchResponseTopicPartition {
	t.Helper()
	ctx, cancel := contextFor(30 * time.Second)
	defer cancel()
	tds, err := c.Admin(t).ListTopics(ctx, topic)
	if err != nil {
		t.Fatalf("metadata of %s: %v", topic, err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.SessionEpoch, req.MaxBytes = 0, 0, -1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, tds[topic].ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, c.Client(t))
	if err != nil {
		t.Fatalf("Fetch %s/0 at %d: %v", topic, offset, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("Fetch %s/0 at %d: %v", topic, offset, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("Fetch %s/0 at %d: answered %+v", topic, offset, resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// A tiered broker answers a Fetch whose remote read is throttled by the
// remote fetch quota with no records and no error for that partition
// (4.x ReplicaManager.readFromLog: getFetchThrottleTimeMs > 0 →
// MemoryRecords.EMPTY; 3.9 has no remote fetch quota on the fetch path,
// only the remote.fetch.max.wait.ms timeout, which no test here can make
// certain). The observer takes such an answer as undated (NoRecords), never
// as a record's age, and decides by ListOffsets by timestamp (issue 33,
// item 3: taken as fine, such a partition read Proven with no headroom,
// then Violated). Seed 000's outbox, tiered, its fanout behind, on a
// broker that caps remote reads.
func TestTieredThrottledRemoteFetchIsUndatedOn4(t *testing.T) {
	t.Parallel()
	d := apachekafka.Newest(t)
	if !d.AtLeast(4, 0) {
		t.Fatalf("the remote fetch quota applies to fetches from Kafka 4.0; the newest line assembled is %s", d.Version)
	}
	// remote.log.manager.fetch.max.bytes.per.second 1 (default unbounded):
	// after the first remote read, every remote read is throttled, for as
	// long as that read stays in the quota's samples: 11 windows of
	// remote.log.manager.fetch.quota.window.size.seconds, 10 here (default
	// 1: 11 s, shorter than a loaded machine may take to observe twice).
	_, c := sharedCluster(t, d, "tiered-throttled", apachekafka.WithTieredStorage(),
		apachekafka.WithBrokerConfig("remote.log.manager.fetch.max.bytes.per.second", "1"),
		apachekafka.WithBrokerConfig("remote.log.manager.fetch.quota.window.size.seconds", "10"))
	const topic, old, fresh = "throttled-settle", "throttled-settle-behind", "throttled-settle-today"
	createTopic(t, c, topic, 1, tieredTopic(nil)) // retention.ms: the default 7 days
	c.ProduceRecords(t, stamped(topic, 10, time.Now().Add(-5*24*time.Hour), "")...)
	offload(t, c, topic, 10, time.Time{}) // 10–19 now, 20 rolls
	c.Commit(t, old, topic, 0, 5)
	c.Commit(t, fresh, topic, 0, 15)
	waitFor(t, 120*time.Second, "both segments leave the disk, copied to the remote tier", func() bool {
		local, _ := listOffsetAt(t, c, topic, 0, listEarliestLocal)
		return local >= 20
	})

	// The first remote read spends the quota (it may itself come back
	// empty when the read outlasts remote.fetch.max.wait.ms: ask again).
	waitFor(t, 60*time.Second, "a first remote read returns records", func() bool {
		return len(fetchOnce(t, c, topic, 0).RecordBatches) > 0
	})
	rp := fetchOnce(t, c, topic, 15)
	if rp.ErrorCode != 0 || len(rp.RecordBatches) != 0 || rp.HighWatermark != 21 {
		t.Fatalf("Apache Kafka %s: a throttled remote Fetch at 15 answered error %d, %d bytes, high watermark %d; want no error, no records, 21",
			d.Version, rp.ErrorCode, len(rp.RecordBatches), rp.HighWatermark)
	}

	window := 72 * time.Hour
	for _, tc := range []struct {
		group   string
		verdict proof.Verdict
	}{{old, proof.Violated}, {fresh, proof.Proven}} {
		obs := observe(t, observer(t), conn(c), kafka.Target{Group: tc.group, Topics: []string{topic}, RecoveryWindow: window, ReadOffsetsTopic: true})
		requireDecidedByListOffsets(t, obs, tc.group, topic, window, proof.TimestampNoRecords, tc.verdict)
		code, out := check(t, c, tc.group, topic, window.String())
		if want := map[proof.Verdict]int{proof.Violated: exitViolated, proof.Proven: 0}[tc.verdict]; code != want {
			t.Errorf("check %s: exit %d %s %v; want %d", tc.group, code, out.Verdict, checkReasons(out), want)
		}
	}
}

// A principal with Describe but not Read on a tiered topic (a guard given
// the least it needs) cannot date the record at a lagging committed offset:
// Fetch needs Read. The observer asks ListOffsets by timestamp instead
// (Describe only), answered from the remote tier: a group in 5-day-old
// offloaded records of a 7-day topic is Violated for a 3-day window, one
// in today's is Proven. The tiered broker's metadata manager reaches it
// over the SASL listener as the admin (apachekafka.WithTieredStorage).
// Seed 000's outbox, tiered, judged by a least-privilege guard.
func TestTieredUndatedWithoutReadDecidedByListOffsets(t *testing.T) {
	t.Parallel()
	const guardPassword = "Gu4rd-tiered-never-logged"
	eachLine(t, func(t *testing.T, d apachekafka.Dist) {
		_, c := sharedCluster(t, d, "tiered-sasl", apachekafka.WithTieredStorage(), apachekafka.WithSASL(apachekafka.SASL{
			AdminUser: "admin", AdminPassword: saslAdminPassword, Users: map[string]string{"guard": guardPassword},
		}))
		const topic, old, fresh = "acl-settle", "acl-settle-behind", "acl-settle-today"
		createTopic(t, c, topic, 1, tieredTopic(nil)) // retention.ms: the default 7 days
		c.ProduceRecords(t, stamped(topic, 10, time.Now().Add(-5*24*time.Hour), "")...)
		offload(t, c, topic, 10, time.Time{}) // 10–19 now, 20 rolls
		c.Commit(t, old, topic, 0, 5)
		c.Commit(t, fresh, topic, 0, 15)
		waitFor(t, 120*time.Second, "both segments leave the disk, copied to the remote tier", func() bool {
			local, _ := listOffsetAt(t, c, topic, 0, listEarliestLocal)
			return local >= 20
		})

		ctx, cancel := contextFor(30 * time.Second)
		defer cancel()
		for _, b := range []*kadm.ACLBuilder{
			kadm.NewACLs().Allow("User:guard").Topics(topic).Operations(kadm.OpDescribe, kadm.OpDescribeConfigs),
			// Read on __consumer_offsets: the exact commit times of a group
			// that commits without joining (nothing else dates them here).
			kadm.NewACLs().Allow("User:guard").Topics("__consumer_offsets").Operations(kadm.OpDescribe, kadm.OpRead),
			kadm.NewACLs().Allow("User:guard").Groups("acl-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpDescribe),
			kadm.NewACLs().Allow("User:guard").Clusters().Operations(kadm.OpDescribeConfigs),
		} {
			res, err := c.Admin(t).CreateACLs(ctx, b)
			if err == nil {
				for _, r := range res {
					err = errors.Join(err, r.Err)
				}
			}
			if err != nil {
				t.Fatalf("CreateACLs: %v", err)
			}
		}
		guard := kafka.Connection{BootstrapServers: c.Addrs, SASL: &kafka.SASL{Mechanism: "PLAIN", Username: "guard", Password: guardPassword}}
		window := 72 * time.Hour
		var obs proof.Observation
		waitFor(t, 60*time.Second, "the guard's ACLs apply", func() bool {
			obs = observe(t, observer(t), guard, kafka.Target{Group: old, Topics: []string{topic}, RecoveryWindow: window, ReadOffsetsTopic: true})
			return len(obs.Failures) == 0 && obs.OffsetsTopic.Reason == "" && len(obs.Topics) == 1 && len(obs.Topics[0].Partitions) == 1
		})
		for _, tc := range []struct {
			group   string
			verdict proof.Verdict
		}{{old, proof.Violated}, {fresh, proof.Proven}} {
			obs = observe(t, observer(t), guard, kafka.Target{Group: tc.group, Topics: []string{topic}, RecoveryWindow: window, ReadOffsetsTopic: true})
			requireDecidedByListOffsets(t, obs, tc.group, topic, window, proof.TimestampReadDenied, tc.verdict)
		}
	})
}

// requireDecidedByListOffsets holds one observation of group on partition 0
// of topic, where offsets 0–9 are five days old and 10–19 are today's: the
// record at the committed offset is undated for the reason unread, placed
// by ListOffsets by timestamp at 10 instead, and the proof, judged at the
// observation's time as the product does (the ListOffsets answer is for
// now + window − retention.ms of then), is want; a Violated one for the
// recovery headroom of that partition.
func requireDecidedByListOffsets(t *testing.T, obs proof.Observation, group, topic string, window time.Duration, unread string, want proof.Verdict) {
	t.Helper()
	requireNoFailures(t, obs)
	p := partitionObs(t, obs, topic, 0)
	if !p.CommittedTimestamp.IsZero() || p.TimestampUnread != unread || !p.OffsetForTimestampRead || p.OffsetForTimestamp != 10 {
		t.Errorf("%s: committed record dated %v (unread %q), ListOffsets by timestamp read %v: %d; want undated (%s) and 10 from ListOffsets",
			group, p.CommittedTimestamp, p.TimestampUnread, p.OffsetForTimestampRead, p.OffsetForTimestamp, unread)
	}
	res := proof.Evaluate(obs, proof.Policy{UID: "uid", GroupID: group, Topics: []string{topic}, RecoveryWindow: window}, obs.ObservedAt)
	if res.Verdict != want {
		t.Errorf("%s (committed %d): verdict %s %s; want %s", group, p.Committed, res.Verdict, describeViolations(res), want)
	}
	if want == proof.Violated {
		violation(t, res, proof.ReasonRecoveryHeadroomShorterThanWindow, topic, 0)
	}
}
