package proof

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Issue 33 item 5, seed 000: the fanout reads its Outbox on statically
// assigned partitions (a simple group: its offsets expire per commit) and
// publishes what it read in a transaction that carries its offsets
// (sendOffsetsToTransaction: AddOffsetsToTxn, TxnOffsetCommit). The
// coordinator stamps the offset with its time when TxnOffsetCommit arrives
// (3.9 GroupCoordinatorAdapter.commitTransactionalOffsets, 4.x
// OffsetMetadataManager.commitTransactionalOffset) and keeps that stamp
// when the transaction commits (GroupMetadata.completePendingTxnOffsetCommit,
// OffsetMetadataManager.replayEndTransactionMarker): the offset expires
// offsets.retention.minutes after it was sent, though it showed only when
// the transaction ended, up to transaction.max.timeout.ms later. The group
// memory saw the old offset at t0 and the new one after: "committed after
// t0" dated the commit late. Before the fix, on both lines: Proven with an
// expiry at t0 + 1 min, while the coordinator expired the offset at its
// sending time + 1 min, inside the window the proof had promised. After:
// dated t0 − (transaction.max.timeout.ms + the abort check), never after
// the coordinator's stamp: Unknown (OffsetsMayExpireBeforeWindow).
//
// What the test changes from Kafka's defaults, and why:
//   - offsets.retention.minutes 1 (default 10080, 7 days): the offset
//     really expires within the test, on the coordinator's clock (its
//     expiry check runs every second on the harness, as in the groups
//     package's expiry tests);
//   - the producer's transaction.timeout.ms 60 s (kgo's default is 40 s;
//     the broker's transaction.max.timeout.ms stays at its 15 minutes): the
//     transaction stays open for the 35 s the test holds it;
//   - the recovery window 30 s: shorter than offsets.retention.minutes, so
//     that the clause judges the commit's own expiry.
//
// Each line runs as deployed (AsDeployed: 3.9's Scala group coordinator,
// 4.4's Java one): the sending-time stamp is read in both coordinators.
func TestTransactionalCommitIsDatedBeforeItShowed(t *testing.T) {
	const (
		retention = time.Minute
		window    = 30 * time.Second
		hold      = 35 * time.Second
		group     = "fanout"
		topic     = "outbox"
	)
	for _, d := range apachekafka.Dists(t) {
		t.Run(d.Line(), func(t *testing.T) {
			t.Parallel()
			b := apachekafka.Start(t, d, apachekafka.AsDeployed(), apachekafka.WithOffsetsRetention(retention))
			b.CreateTopic(t, topic, 1, map[string]string{"retention.ms": "2592000000"})
			b.CreateTopic(t, "dispatch", 1, nil)
			b.ProduceTo(t, topic, 0, 10)

			o := kafka.NewObserver()
			defer o.Close()
			target := kafka.Target{Group: group, Topics: []string{topic}} // readOffsetsTopic false: the group memory dates it
			policy := proof.Policy{UID: "uid", GroupID: group, Topics: []string{topic}, RecoveryWindow: window}

			// The fanout reads to 7 and publishes in a transaction that
			// carries offset 7; it stays open while the observer looks.
			cl := b.Client(t, kgo.TransactionalID("fanout-outbox-0"), kgo.TransactionTimeout(60*time.Second),
				kgo.RecordPartitioner(kgo.ManualPartitioner()))
			ctx, cancel := context.WithTimeout(context.Background(), 3*wait)
			defer cancel()
			if err := cl.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "dispatch", Partition: 0, Value: []byte("d")}).FirstErr(); err != nil {
				t.Fatal(err)
			}

			// It had committed offset 2 (plainly, just now: with a minute
			// of retention it outlives the transaction held below); the
			// observer sees offset 2 first.
			b.Commit(t, group, topic, 0, 2)
			first := observeWith(t, o, b, target)
			if po := first.Topics[0].Partitions[0]; po.Committed != 2 {
				t.Fatalf("first observation: %+v, want committed 2", po)
			}
			sendOffsetsToTransaction(ctx, t, b, cl, "fanout-outbox-0", group, topic, 7)
			sentBy := time.Now()

			lastOld := first
			for time.Since(sentBy) < hold {
				time.Sleep(2 * time.Second)
				obs := observeWith(t, o, b, target)
				if po := obs.Topics[0].Partitions[0]; po.Committed != 2 {
					t.Fatalf("transaction open: %+v, want the old offset 2 (the pending commit is not the group's yet)", po)
				}
				lastOld = obs
			}
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatalf("committing the transaction: %v", err)
			}

			// EndTxn answers once the decision is logged; the marker
			// reaches __consumer_offsets after: until then the old offset
			// shows, and each such observation is the latest t0.
			var obs proof.Observation
			for obs = observeWith(t, o, b, target); obs.Topics[0].Partitions[0].Committed != 7; obs = observeWith(t, o, b, target) {
				if ctx.Err() != nil || obs.Topics[0].Partitions[0].Committed != 2 {
					t.Fatalf("the committed transaction's offset never showed: %+v", obs.Topics[0].Partitions[0])
				}
				lastOld = obs
				time.Sleep(200 * time.Millisecond)
			}
			po := obs.Topics[0].Partitions[0]
			if !po.CommittedAfter.Equal(lastOld.ObservedAt) {
				t.Fatalf("committed after %v, want the last observation that saw offset 2, %v", po.CommittedAfter, lastOld.ObservedAt)
			}

			// The coordinator's own stamp, read from __consumer_offsets: the
			// time TxnOffsetCommit arrived, not the time the offset showed.
			exact := observeUntil(t, b, kafka.Target{Group: group, Topics: []string{topic}, ReadOffsetsTopic: true},
				func(p proof.PartitionObservation) bool { return p.Committed == 7 && !p.LastCommit.IsZero() })
			stamped := exact.Topics[0].Partitions[0].LastCommit
			if stamped.IsZero() || stamped.After(sentBy) || !stamped.Before(lastOld.ObservedAt) {
				t.Fatalf("Apache Kafka %s stamped the transactional commit %v: want the time it was sent (by %v), before it showed (after %v)",
					d.Version, stamped, sentBy, lastOld.ObservedAt)
			}
			realExpiry := stamped.Add(retention)
			t.Logf("Apache Kafka %s: sent by %v, still hidden at %v (%v later), stamped %v; the coordinator expires it at %v",
				d.Version, sentBy.Format(time.RFC3339Nano), lastOld.ObservedAt.Format(time.RFC3339Nano),
				lastOld.ObservedAt.Sub(sentBy).Round(time.Millisecond), stamped.Format(time.RFC3339Nano), realExpiry.Format(time.RFC3339Nano))

			// The proof, on the observation without __consumer_offsets.
			// Before the fix: Proven, the offset expiring at t0 + 1 min.
			r := proof.Evaluate(obs, policy, obs.ObservedAt)
			x := r.OffsetExpiry
			t.Logf("proof: %s %v, soonest expiry %v (exact %v)", r.Verdict, reasons(r), x.Soonest.Format(time.RFC3339Nano), x.Exact)
			if !x.HasSoonest || x.Exact || x.Soonest.After(realExpiry) {
				t.Errorf("the proof dates the offset's expiry %v (has %v, exact %v), after the coordinator's %v: a transactional commit "+
					"carries its sending time, not the time it showed", x.Soonest, x.HasSoonest, x.Exact, realExpiry)
			}
			if r.Verdict == proof.Proven || len(r.Violations) != 1 || r.Violations[0].Reason != proof.ReasonOffsetsMayExpireBeforeWindow {
				t.Errorf("offset expiring at %v, %v from now, window %v: %s %v, want Unknown %s", realExpiry,
					realExpiry.Sub(obs.ObservedAt), window, r.Verdict, reasons(r), proof.ReasonOffsetsMayExpireBeforeWindow)
			} else if msg := r.Violations[0].Message; !strings.Contains(msg, "a transactional commit carries the time it was sent") {
				t.Errorf("message %q: want it to say why the commit is dated before the change was seen", msg)
			}

			// The broker: the offset goes at its stamp + 1 min, before the
			// t0 + 1 min the group memory alone promised, inside the window.
			promised := lastOld.ObservedAt.Add(retention)
			for committed(t, b, group, topic) >= 0 {
				if time.Now().After(promised) {
					t.Fatalf("Apache Kafka %s kept the offset past %v: the test shows nothing", d.Version, promised)
				}
				time.Sleep(250 * time.Millisecond)
			}
			goneBy := time.Now()
			if goneBy.Before(realExpiry) {
				t.Errorf("the offset was gone by %v, before its stamp + offsets.retention.minutes %v", goneBy, realExpiry)
			}
			t.Logf("Apache Kafka %s: the offset was gone by %v, %v before the group memory's t0 + 1 min, inside the %v window from %v",
				d.Version, goneBy.Format(time.RFC3339Nano), promised.Sub(goneBy).Round(time.Millisecond), window, obs.ObservedAt.Format(time.RFC3339Nano))
		})
	}
}

// The false alarm of issue 33, seed 000: the Outbox is written by an
// exactly-once writer (a transactional producer), so every transaction
// ends with a marker, a control record, at the end of the log. The fanout
// (a simple group) caught up commits the log end, one past the marker.
// The record before the committed offset is the marker: the Fetch that
// dates the commit returned only the control batch, which the decoder
// drops, and the commit was undated: Unknown on both lines without
// __consumer_offsets, saying no record before it is left. The marker is
// stamped by the partition leader when it writes it
// (KafkaApis.handleWriteTxnMarkersRequest,
// MemoryRecords.withEndTransactionMarker: System.currentTimeMillis()) and
// the consumer passes it only once it is written: it dates the commit by
// a broker's clock, without the producer skew (on 3.9, CreateTime with an
// unbounded message.timestamp.after.max.ms, a record dates nothing at
// all). After the fix: Proven on both lines, on Kafka's default settings.
func TestCommitAfterATransactionMarkerIsDated(t *testing.T) {
	const group, topic = "fanout", "outbox"
	for _, d := range apachekafka.Dists(t) {
		t.Run(d.Line(), func(t *testing.T) {
			t.Parallel()
			b := apachekafka.Start(t, d, apachekafka.AsDeployed())
			b.CreateTopic(t, topic, 1, map[string]string{"retention.ms": "2592000000"})
			cl := b.Client(t, kgo.TransactionalID("outbox-writer"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			if err := cl.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			for range 5 {
				if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("o")}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			before := time.Now().Truncate(time.Millisecond)
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatalf("committing the writer's transaction: %v", err)
			}
			// EndTxn answers once the decision is logged; the transaction
			// coordinator writes the marker after: the log ends at 6 once
			// it is there.
			var end int64
			for end < 6 {
				ends, err := b.Admin(t).ListEndOffsets(ctx, topic)
				if err != nil {
					t.Fatal(err)
				}
				o, _ := ends.Lookup(topic, 0)
				if end = o.Offset; end < 6 {
					time.Sleep(100 * time.Millisecond)
				}
			}
			after := time.Now()
			if end != 6 {
				t.Fatalf("log end %d, want 6: 5 records and the commit marker", end)
			}
			b.Commit(t, group, topic, 0, end) // caught up: past the marker

			obs := observe(t, b, kafka.Target{Group: group, Topics: []string{topic}})
			po := obs.Topics[0].Partitions[0]
			t.Logf("Apache Kafka %s: committed %d, preceding record %v, preceding marker %v (written between %v and %v)",
				d.Version, po.Committed, po.PrecedingTimestamp, po.PrecedingMarkerTimestamp, before, after)
			if !po.PrecedingTimestamp.IsZero() {
				t.Errorf("a record timestamp %v before offset 6: offset 5 is the marker, no data record", po.PrecedingTimestamp)
			}
			if m := po.PrecedingMarkerTimestamp; m.Before(before) || m.After(after) {
				t.Fatalf("marker before offset 6 stamped %v, want the leader's time while EndTxn ran, between %v and %v", m, before, after)
			}
			r := proof.Evaluate(obs, proof.Policy{UID: "uid", GroupID: group, Topics: []string{topic}, RecoveryWindow: 72 * time.Hour}, obs.ObservedAt)
			if r.Verdict != proof.Proven {
				t.Fatalf("a caught-up simple group after a transaction marker on %s: %s %v, want Proven", d.Version, r.Verdict, reasons(r))
			}
			if x := r.OffsetExpiry; !x.HasSoonest || !x.Soonest.Equal(po.PrecedingMarkerTimestamp.Add(7*24*time.Hour)) {
				t.Errorf("soonest expiry %+v, want the marker's time + 7 days (offsets.retention.minutes' default)", x)
			}
		})
	}
}

// observeWith observes target with o, whose group memory spans the calls.
func observeWith(t *testing.T, o *kafka.Observer, b *apachekafka.Broker, target kafka.Target) proof.Observation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	obs := o.Observe(ctx, kafka.Connection{BootstrapServers: b.Addrs()}, []kafka.Target{target})[0]
	if len(obs.Failures) > 0 || len(obs.Topics) != 1 || len(obs.Topics[0].Partitions) != 1 {
		t.Fatalf("observation: failures %+v, topics %+v", obs.Failures, obs.Topics)
	}
	return obs
}

// sendOffsetsToTransaction is a producer's sendOffsetsToTransaction for a
// group without members (the fanout's static assignment): AddOffsetsToTxn,
// then TxnOffsetCommit of offset on topic/0, generation -1.
func sendOffsetsToTransaction(ctx context.Context, t *testing.T, b *apachekafka.Broker, cl *kgo.Client, txnID, group, topic string, offset int64) {
	t.Helper()
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = txnID, pid, epoch, group
	ar, err := add.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("AddOffsetsToTxn: %v", err)
	}
	if ar.ErrorCode != 0 {
		t.Fatalf("AddOffsetsToTxn: %v", kerr.ErrorForCode(ar.ErrorCode))
	}
	tds, err := b.Admin(t).ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	tc := kmsg.NewPtrTxnOffsetCommitRequest()
	tc.TransactionalID, tc.Group, tc.ProducerID, tc.ProducerEpoch, tc.Generation = txnID, group, pid, epoch, -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic, rt.TopicID = topic, tds[topic].ID // v6+ (4.x): by ID
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, -1
	rt.Partitions = []kmsg.TxnOffsetCommitRequestTopicPartition{rp}
	tc.Topics = []kmsg.TxnOffsetCommitRequestTopic{rt}
	tr, err := tc.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("TxnOffsetCommit: %v", err)
	}
	for _, rt := range tr.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("TxnOffsetCommit: %v", kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	}
}
