// Package proof pins, on real Apache Kafka brokers, the Kafka 4.x semantics
// of issue 22 the proof relies on: share groups (KIP-932) judged on their
// own terms, and an explicit offset retention time (OffsetCommit v2–v4)
// beating the Empty clock of a classic group; and issue 33's tombstone
// headroom (tombstone_test.go) and logs that diverged below a commit
// (epoch_test.go). Each test drives the real
// observer (internal/kafka) and the real proof (internal/proof) against the
// broker, and checks the broker's own behaviour where it can show it.
package proof

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// wait bounds every poll: the machine is loaded.
const wait = 90 * time.Second

func observe(t *testing.T, b *apachekafka.Broker, target kafka.Target, opts ...kafka.Option) proof.Observation {
	t.Helper()
	o := kafka.NewObserver(opts...)
	defer o.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return o.Observe(ctx, kafka.Connection{BootstrapServers: b.Addrs()}, []kafka.Target{target})[0]
}

func reasons(r proof.Result) []string {
	var out []string
	for _, v := range r.Violations {
		out = append(out, v.Clause+"/"+v.Reason+": "+v.Message)
	}
	return out
}

// setShareEarliest sets share.auto.offset.reset=earliest on a share group,
// so that it starts at log start.
func setShareEarliest(t *testing.T, b *apachekafka.Broker, group string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{cfg}
	alter.Resources = []kmsg.IncrementalAlterConfigsRequestResource{res}
	ar, err := alter.RequestWith(ctx, b.Client(t))
	if err != nil || ar.Resources[0].ErrorCode != 0 {
		t.Fatalf("setting share.auto.offset.reset on %s: %v %+v", group, err, ar)
	}
}

// shareConsume reads n records of topic in a share group with kgo's share
// consumer, acknowledging them (AckAccept, flushed) when ack, else closing
// without: the broker releases what a closed session held.
func shareConsume(t *testing.T, b *apachekafka.Broker, group, topic string, n int, ack bool) {
	t.Helper()
	setShareEarliest(t, b, group)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	sc := b.Client(t, kgo.ConsumeTopics(topic), kgo.ShareGroup(group))
	defer sc.Close()
	got := 0
	for got < n && ctx.Err() == nil {
		f := sc.PollFetches(ctx)
		got += f.NumRecords()
		if ack {
			sc.MarkAcks(kgo.AckAccept)
		}
	}
	if got < n {
		t.Fatalf("the share consumer of %s read %d of %d records", group, got, n)
	}
	if ack {
		if err := sc.FlushAcks(ctx); err != nil {
			t.Fatalf("flushing acknowledgements: %v", err)
		}
	}
}

// observeUntil observes target until done says the observation shows what
// the test waits for, or the bound passes.
func observeUntil(t *testing.T, b *apachekafka.Broker, target kafka.Target, done func(proof.PartitionObservation) bool) proof.Observation {
	t.Helper()
	return observeUntilWith(t, b, target, nil, done)
}

// observeUntilWith is observeUntil with an observer built with opts.
func observeUntilWith(t *testing.T, b *apachekafka.Broker, target kafka.Target, opts []kafka.Option, done func(proof.PartitionObservation) bool) proof.Observation {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		obs := observe(t, b, target, opts...)
		// An Empty classic group's Empty time is read from its metadata
		// record, which the coordinator appends after the state changed:
		// an observation between the two does not have it yet.
		g := obs.Group
		emptyTimeRead := !target.ReadOffsetsTopic || g.State != proof.GroupStateEmpty || g.Protocol != proof.ProtocolClassic ||
			g.ProtocolType == "" || g.EmptySinceExact
		if len(obs.Topics) == 1 && len(obs.Topics[0].Partitions) == 1 && done(obs.Topics[0].Partitions[0]) && emptyTimeRead ||
			time.Now().After(deadline) {
			return obs
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// Issue 22 item 1 (Kafka 4.1 preview, 4.2 GA; 4.4 here): a share group
// shares the group ID namespace, OffsetFetch answers -1 for it without an
// error and the consumer-group describe calls say not found: today's main
// read it as a consumer group without committed offsets ("no committed
// offset while log start is 8", whatever the group did). Its progress is
// the share-partition start offset (SPSO) and the count of unacknowledged
// records (DescribeShareGroupOffsets v1). Apache Kafka 4.4 keeps the
// persisted SPSO at 0 after every record is acknowledged (it is not moved
// when the acknowledgements are written), so the SPSO alone cannot tell
// acknowledged records from lost ones; the lag can.
//
//   - "acked" read and acknowledged all 10 records; retention
//     (DeleteRecords) moved the log start to 8: nothing is unacknowledged,
//     nothing was lost: Proven;
//   - "released" read the same records without acknowledging them (the
//     broker released them when the session closed): 10 unacknowledged
//     records, 2 left in the log: at least 8 expired before the group
//     acknowledged them, ShareRecordsExpired (seed 000's silent loss, on a
//     share group).
func TestShareGroupJudgedOnItsShareStartOffset(t *testing.T) {
	d := apachekafka.Newest(t)
	if !d.AtLeast(4, 2) {
		t.Fatalf("share groups are on by default from Kafka 4.2; the newest line assembled is %s", d.Version)
	}
	b := apachekafka.Start(t, d)
	b.CreateTopic(t, "tasks", 1, nil)
	b.ProduceTo(t, "tasks", 0, 10)
	shareConsume(t, b, "acked", "tasks", 10, true)
	shareConsume(t, b, "released", "tasks", 10, false)
	b.DeleteRecords(t, "tasks", 0, 8)
	policy := func(g string) proof.Policy {
		return proof.Policy{GroupID: g, Topics: []string{"tasks"}, RecoveryWindow: 72 * time.Hour}
	}

	obs := observeUntil(t, b, kafka.Target{Group: "acked", Topics: []string{"tasks"}}, func(po proof.PartitionObservation) bool {
		return po.ShareLagKnown && po.ShareLag == 0
	})
	if obs.Group.Protocol != proof.ProtocolShare {
		t.Fatalf("group %+v: want protocol %q (ShareGroupDescribe)", obs.Group, proof.ProtocolShare)
	}
	po := obs.Topics[0].Partitions[0]
	if po.LogStart != 8 || !po.ShareLagKnown || po.ShareLag != 0 || po.Committed < 0 {
		t.Fatalf("acked: partition %+v, want a share-partition start offset, log start 8, nothing unacknowledged", po)
	}
	t.Logf("acked: Apache Kafka %s reports share-partition start offset %d after all 10 records were acknowledged", d.Version, po.Committed)
	r := proof.Evaluate(obs, policy("acked"), obs.ObservedAt)
	if r.Verdict != proof.Proven {
		t.Fatalf("acked share group: %s %v, want Proven", r.Verdict, reasons(r))
	}
	for _, c := range r.Conditions {
		if c.Type == proof.ClauseGroupOffsetsRetained && c.Reason != proof.ReasonShareGroupOffsetsRetained {
			t.Errorf("GroupOffsetsRetained %+v: a share group is not judged on offsets.retention.minutes", c)
		}
	}

	obs = observeUntil(t, b, kafka.Target{Group: "released", Topics: []string{"tasks"}}, func(po proof.PartitionObservation) bool {
		return po.ShareLagKnown && po.ShareLag == 10
	})
	po = obs.Topics[0].Partitions[0]
	if obs.Group.Protocol != proof.ProtocolShare || po.Committed != 0 || po.LogStart != 8 || po.ShareLag != 10 {
		t.Fatalf("released: group %+v, partition %+v, want a share group at SPSO 0 below log start 8, 10 unacknowledged", obs.Group, po)
	}
	r = proof.Evaluate(obs, policy("released"), obs.ObservedAt)
	if r.Verdict != proof.Violated || len(r.Violations) != 1 || r.Violations[0].Reason != proof.ReasonShareRecordsExpired ||
		r.ExpiredRecords != 8 {
		t.Fatalf("released share group: %s %v (%d expired), want Violated %s, 8 records",
			r.Verdict, reasons(r), r.ExpiredRecords, proof.ReasonShareRecordsExpired)
	}
}

// commitWithRetention commits offset on topic/0 for group with OffsetCommit
// v2 and an explicit retention time (Sarama's Offsets.Retention on old
// protocol versions, older kafka-go), as an admin commit (generation -1).
func commitWithRetention(t *testing.T, b *apachekafka.Broker, group, topic string, offset int64, retention time.Duration) {
	t.Helper()
	v := kversion.Stable()
	v.SetMaxKeyVersion(kmsg.OffsetCommit.Int16(), 2)
	cl := b.Client(t, kgo.MaxVersions(v))
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.RetentionTimeMillis = group, -1, retention.Milliseconds()
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, offset
	rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{rp}
	req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	for {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("OffsetCommit v2 with retention %s on Apache Kafka %s: %v", retention, b.Dist.Version, err)
		}
		code := resp.Topics[0].Partitions[0].ErrorCode
		if code == 0 {
			return
		}
		if !kerr.IsRetriable(kerr.ErrorForCode(code)) || ctx.Err() != nil {
			t.Fatalf("OffsetCommit v2 on Apache Kafka %s: %v", b.Dist.Version, kerr.ErrorForCode(code))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func committed(t *testing.T, b *apachekafka.Broker, group, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	offs, err := b.Admin(t).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("OffsetFetch: %v", err)
	}
	if o, ok := offs.Lookup(topic, 0); ok && o.Err == nil {
		return o.At
	}
	return -1
}

// Issue 22 item 3, seed 003's line (classic groups): an offset committed
// with an explicit retention time expires at commit + that time once the
// group is Empty, whatever offsets.retention.minutes (7 days here) says
// (OffsetExpirationConditionImpl.isOffsetExpired tests expireTimestampMs
// first). Both lines still accept OffsetCommit v2. The proof, reading
// __consumer_offsets, says the offset expires before the window; today's
// main judged the Empty classic group on its Empty clock alone: Proven.
func TestExplicitRetentionTimeBeatsTheEmptyClock(t *testing.T) {
	for _, d := range apachekafka.Dists(t) {
		t.Run(d.Line(), func(t *testing.T) {
			b := apachekafka.Start(t, d)
			b.CreateTopic(t, "ledger", 1, map[string]string{"retention.ms": "2592000000"})
			b.ProduceTo(t, "ledger", 0, 3)
			// A classic consumer group with a protocol type, now Empty.
			b.CommitAsMember(t, "ledger-batch", "ledger", map[int32]int64{0: 1})
			commitWithRetention(t, b, "ledger-batch", "ledger", 3, time.Hour)

			target := kafka.Target{Group: "ledger-batch", Topics: []string{"ledger"}, ReadOffsetsTopic: true}
			policy := proof.Policy{GroupID: "ledger-batch", Topics: []string{"ledger"}, RecoveryWindow: 72 * time.Hour}
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			var obs proof.Observation
			for ctx.Err() == nil {
				obs = observe(t, b, target)
				if len(obs.Topics) == 1 && len(obs.Topics[0].Partitions) == 1 && !obs.Topics[0].Partitions[0].ExpireAt.IsZero() {
					break
				}
				time.Sleep(500 * time.Millisecond)
			}
			if obs.Group.Protocol != proof.ProtocolClassic || obs.Group.ProtocolType != proof.ProtocolTypeConsumer || obs.Group.State != proof.GroupStateEmpty {
				t.Fatalf("group %+v: want an Empty classic consumer group", obs.Group)
			}
			po := obs.Topics[0].Partitions[0]
			if po.ExpireAt.IsZero() || po.ExpireAt.Sub(po.LastCommit) != time.Hour {
				t.Fatalf("partition %+v: want the explicit expiry an hour after the commit, from __consumer_offsets", po)
			}
			r := proof.Evaluate(obs, policy, obs.ObservedAt)
			if r.Verdict != proof.Violated || len(r.Violations) != 1 || r.Violations[0].Reason != proof.ReasonExplicitOffsetExpiryBeforeWindow {
				t.Fatalf("explicit expiry in an hour, 3-day window: %s %v, want Violated %s", r.Verdict, reasons(r), proof.ReasonExplicitOffsetExpiryBeforeWindow)
			}

			// The broker itself: a retention time of 2 s removes the offset
			// of the Empty group within seconds (the expiry check runs
			// every second), 7 days of offsets.retention.minutes
			// notwithstanding.
			commitWithRetention(t, b, "ledger-batch", "ledger", 3, 2*time.Second)
			for committed(t, b, "ledger-batch", "ledger") >= 0 {
				if ctx.Err() != nil {
					t.Fatalf("Apache Kafka %s kept an offset committed with a 2 s retention time for %s", d.Version, wait)
				}
				time.Sleep(500 * time.Millisecond)
			}
		})
	}
}

// Issue 22 item 5: a commit is dated from the record before it, less how
// far ahead of the broker its producer's clock may be. Apache Kafka 3.9
// accepts any future CreateTime (message.timestamp.after.max.ms Long.MAX):
// the record does not date the commit, and a simple group's offset there is
// Unknown without readOffsetsTopic; 4.x refuses stamps more than an hour
// ahead (3600000) and the bound is an hour earlier: Proven. Today's main
// dated the commit by the record's own timestamp on both lines.
func TestProducerClockBoundDatesCommits(t *testing.T) {
	for _, d := range apachekafka.Dists(t) {
		t.Run(d.Line(), func(t *testing.T) {
			b := apachekafka.Start(t, d)
			b.CreateTopic(t, "clicks", 1, map[string]string{"retention.ms": "2592000000"})
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			// A record stamped 10 hours ahead: 3.9 takes it, 4.x refuses it.
			future := &kgo.Record{Topic: "clicks", Partition: 0, Timestamp: time.Now().Add(10 * time.Hour), Value: []byte("f")}
			err := b.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner())).ProduceSync(ctx, future).FirstErr()
			if d.AtLeast(4, 0) != (err != nil) {
				t.Fatalf("Apache Kafka %s: a record stamped 10 h ahead: %v (want refused from 4.0 only)", d.Version, err)
			}
			b.ProduceTo(t, "clicks", 0, 3)
			b.Commit(t, "flink-clicks", "clicks", 0, 2) // a simple group: expires per commit

			obs := observe(t, b, kafka.Target{Group: "flink-clicks", Topics: []string{"clicks"}})
			to := obs.Topics[0]
			wantBound := "9223372036854775807"
			if d.AtLeast(4, 0) {
				wantBound = "3600000"
			}
			if !to.TimestampAfterMaxMs.Present || to.TimestampAfterMaxMs.Value != wantBound {
				t.Fatalf("message.timestamp.after.max.ms %+v, want %s", to.TimestampAfterMaxMs, wantBound)
			}
			r := proof.Evaluate(obs, proof.Policy{GroupID: "flink-clicks", Topics: []string{"clicks"}, RecoveryWindow: 72 * time.Hour}, obs.ObservedAt)
			want, reason := proof.Unknown, proof.ReasonOffsetsMayExpireBeforeWindow
			if d.AtLeast(4, 0) {
				want, reason = proof.Proven, ""
			}
			if r.Verdict != want || (reason != "" && (len(r.Violations) != 1 || r.Violations[0].Reason != reason)) {
				t.Fatalf("a simple group dated by a fresh record on %s: %s %v, want %s %s", d.Version, r.Verdict, reasons(r), want, reason)
			}
		})
	}
}

// Issue 22 item 6, seed 000: a lagging group whose oldest unconsumed
// record (stamped 25 days ago, CreateTime backdated as a mirror writes it)
// expires under 30 days of retention before its 10-day window ends. The
// group cannot be down for its window: Violated, where today's main said
// Proven with a warning.
func TestHeadroomBelowTheWindowIsViolated(t *testing.T) {
	for _, d := range apachekafka.Dists(t) {
		t.Run(d.Line(), func(t *testing.T) {
			b := apachekafka.Start(t, d, apachekafka.WithOffsetsRetention(30*24*time.Hour))
			b.CreateTopic(t, "settle-task", 1, map[string]string{"retention.ms": "2592000000"})
			old := time.Now().Add(-25 * 24 * time.Hour)
			var recs []*kgo.Record
			for range 5 {
				recs = append(recs, &kgo.Record{Topic: "settle-task", Partition: 0, Timestamp: old, Value: []byte("s")})
			}
			b.ProduceRecords(t, recs...)
			b.ProduceTo(t, "settle-task", 0, 5)
			b.CommitAsMember(t, "ledger-settle", "settle-task", map[int32]int64{0: 2})

			// Exact commit times: on brokers that may migrate the classic
			// group its commits are dated (item 2), and the backdated
			// records would only bound them.
			target := kafka.Target{Group: "ledger-settle", Topics: []string{"settle-task"}, ReadOffsetsTopic: true}
			obs := observeUntil(t, b, target, func(po proof.PartitionObservation) bool { return !po.LastCommit.IsZero() })
			r := proof.Evaluate(obs, proof.Policy{GroupID: "ledger-settle", Topics: []string{"settle-task"}, RecoveryWindow: 240 * time.Hour}, obs.ObservedAt)
			if r.Verdict != proof.Violated || len(r.Violations) != 1 || r.Violations[0].Reason != proof.ReasonRecoveryHeadroomShorterThanWindow {
				t.Fatalf("headroom ~5 days, window 10 days on %s: %s %v, want Violated %s", d.Version, r.Verdict, reasons(r), proof.ReasonRecoveryHeadroomShorterThanWindow)
			}
			// Caught up, the same group can be down for its window.
			b.CommitAsMember(t, "ledger-settle", "settle-task", map[int32]int64{0: 10})
			obs = observeUntil(t, b, target, func(po proof.PartitionObservation) bool { return po.Committed == 10 && !po.LastCommit.IsZero() })
			if r := proof.Evaluate(obs, proof.Policy{GroupID: "ledger-settle", Topics: []string{"settle-task"}, RecoveryWindow: 240 * time.Hour}, obs.ObservedAt); r.Verdict != proof.Proven {
				t.Fatalf("caught up on %s: %s %v, want Proven", d.Version, r.Verdict, reasons(r))
			}
		})
	}
}

// Issue 22 item 10 (Kafka 4.1+, OffsetCommitValue v4): the commit record
// carries the topic ID, which the observer reads from __consumer_offsets
// and the proof compares with the topic's. On 4.4 a commit names this
// topic's ID (the healthy case: in range, Proven); a commit that survived
// a delete-and-recreate names the old ID (kafka4_test.go). 3.9 writes no
// topic ID: nothing to compare.
func TestCommitTopicIDIsTheTopics(t *testing.T) {
	for _, d := range apachekafka.Dists(t) {
		t.Run(d.Line(), func(t *testing.T) {
			b := apachekafka.Start(t, d)
			b.CreateTopic(t, "orders", 1, map[string]string{"retention.ms": "2592000000"})
			b.ProduceTo(t, "orders", 0, 3)
			b.CommitAsMember(t, "orders-app", "orders", map[int32]int64{0: 3})
			target := kafka.Target{Group: "orders-app", Topics: []string{"orders"}, ReadOffsetsTopic: true}
			obs := observeUntil(t, b, target, func(po proof.PartitionObservation) bool { return !po.LastCommit.IsZero() })
			to := obs.Topics[0]
			po := to.Partitions[0]
			if po.LastCommit.IsZero() || to.TopicID == "" {
				t.Fatalf("topic %s (ID %q), partition %+v: want the commit read from __consumer_offsets", to.Name, to.TopicID, po)
			}
			t.Logf("Apache Kafka %s: commit record topic ID %q, topic ID %q", d.Version, po.CommitTopicID, to.TopicID)
			if d.AtLeast(4, 1) && po.CommitTopicID != to.TopicID {
				t.Fatalf("Apache Kafka %s wrote topic ID %q in the commit record, want the topic's %q", d.Version, po.CommitTopicID, to.TopicID)
			}
			if !d.AtLeast(4, 1) && po.CommitTopicID != "" {
				t.Fatalf("Apache Kafka %s wrote a topic ID %q in the commit record", d.Version, po.CommitTopicID)
			}
			r := proof.Evaluate(obs, proof.Policy{GroupID: "orders-app", Topics: []string{"orders"}, RecoveryWindow: 72 * time.Hour}, obs.ObservedAt)
			if r.Verdict != proof.Proven {
				t.Fatalf("on %s: %s %v, want Proven", d.Version, r.Verdict, reasons(r))
			}
		})
	}
}

// Issue 22 item 2: a broker serving the consumer protocol (4.x by default;
// the harness turns it on for 3.9, a preview there) may convert a classic
// group whose members switch to group.protocol=consumer. On 4.4 the Empty
// classic group is converted on the first such join and its offsets keep
// their old commit times (read from __consumer_offsets): from then on they
// expire per commit. So on such a broker the proof dates a classic group's
// commits too (the LastCommit clock, the earlier expiry), where today's main
// judged it on its Empty clock alone. On 3.9 the proof side is pinned (the
// brokers report the consumer protocol); its conversion is not asserted:
// 3.9's coordinator deletes an Empty classic group instead of converting it
// (GroupMetadataManager.maybeDeleteEmptyClassicGroup), and kgo's join here
// stayed classic.
func TestProtocolMigrationKeepsCommitTimes(t *testing.T) {
	type line struct {
		name      string
		d         apachekafka.Dist
		opts      []apachekafka.Option
		migration bool
	}
	var lines []line
	for _, d := range apachekafka.Dists(t) {
		lines = append(lines, line{d.Line(), d, nil, true})
	}
	for _, l := range lines {
		t.Run(l.name, func(t *testing.T) {
			b := apachekafka.Start(t, l.d, l.opts...)
			b.CreateTopic(t, "ledger", 1, map[string]string{"retention.ms": "2592000000"})
			b.ProduceTo(t, "ledger", 0, 5)
			b.CommitAsMember(t, "ledger-app", "ledger", map[int32]int64{0: 5})
			target := kafka.Target{Group: "ledger-app", Topics: []string{"ledger"}, ReadOffsetsTopic: true}
			obs := observeUntil(t, b, target, func(po proof.PartitionObservation) bool { return !po.LastCommit.IsZero() })
			if obs.Group.Protocol != proof.ProtocolClassic || obs.Group.MigrationPossible != l.migration {
				t.Fatalf("group %+v: want classic, migration possible %v", obs.Group, l.migration)
			}
			committedAt := obs.Topics[0].Partitions[0].LastCommit
			policy := proof.Policy{GroupID: "ledger-app", Topics: []string{"ledger"}, RecoveryWindow: 72 * time.Hour}
			r := proof.Evaluate(obs, policy, obs.ObservedAt)
			wantClock := proof.ExpiryClockGroupEmpty
			if l.migration {
				wantClock = proof.ExpiryClockLastCommit
			}
			if r.Verdict != proof.Proven || r.OffsetExpiry.Clock != wantClock {
				t.Fatalf("classic group, migration possible %v: %s %v clock %q, want Proven on %s", l.migration, r.Verdict, reasons(r), r.OffsetExpiry.Clock, wantClock)
			}
			if !l.d.AtLeast(4, 0) {
				return
			}

			// A rollout switches the consumer to group.protocol=consumer:
			// the Empty classic group is converted on the first join.
			time.Sleep(1100 * time.Millisecond) // commit times are in ms: a later join is told apart
			cl := b.JoinGroup(t, "ledger-app", kafkatest.Consumer, "ledger")
			cl.Close()
			obs = observeUntil(t, b, target, func(proof.PartitionObservation) bool { return true })
			deadline := time.Now().Add(wait)
			for obs.Group.Protocol != proof.ProtocolConsumer && time.Now().Before(deadline) {
				time.Sleep(500 * time.Millisecond)
				obs = observe(t, b, target)
			}
			if obs.Group.Protocol != proof.ProtocolConsumer {
				t.Fatalf("group %+v after a consumer-protocol member joined: want converted to %q", obs.Group, proof.ProtocolConsumer)
			}
			if got := obs.Topics[0].Partitions[0].LastCommit; !got.Equal(committedAt) {
				t.Fatalf("converted group's commit time %v, want the classic commit's %v kept", got, committedAt)
			}
		})
	}
}
