package proof

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Issue 33 item 2, seed 000's compacted variant (a fan-out consumer of a
// compacted topic, down while the log cleaner drops a tombstone it never
// read), on the broker's own clock. Seen on 4.4.0: delete.retention.ms
// 60 s, a group 30 s behind a tombstone, a 50 s window: Proven, and the
// consumer's first record was past the tombstone 95 s later, the key kept
// forever. The cleaner keeps a tombstone delete.retention.ms from the
// cleaning that first saw it (the deleteHorizonMs it stamps on the batch,
// MemoryRecords.filterTo; Cleaner.shouldRetainRecord), and that cleaning
// follows the write; the tombstone was written no earlier than the record
// at the committed offset, stamped T by the broker (LogAppendTime) or by
// the producer at most message.timestamp.after.max.ms ahead (CreateTime).
// So the proof's tombstone headroom is T − skew + delete.retention.ms − now:
// below the window the group cannot be down for it (Violated,
// TombstoneHeadroomShorterThanWindow), where today's main said Proven
// (delete.retention.ms ≥ window). Then the broker drops the tombstone, never
// before that earliest time, and a consumer reading from the committed
// offset never sees the delete.
//
// Clocks in seconds instead of days; what this test changes from Kafka's
// defaults, and why:
//   - broker log.cleaner.backoff.ms 500 (default 15000): the cleaner looks
//     for work twice a second, so the cleaning that stamps the horizon and
//     the one that drops the tombstone follow within a second (the harness
//     sets it too; set here so the test does not depend on that);
//   - topic delete.retention.ms 20000 (default 86400000, a day): the
//     tombstone lives 20 s after its first cleaning;
//   - topic segment.ms 1000 (default 7 days): the segment holding the
//     tombstone rolls on the first write a second later (the ticks below),
//     since the cleaner never cleans the active segment;
//   - topic min.cleanable.dirty.ratio 0.0 (default 0.5): any dirty record
//     (a tick) makes the log cleanable; min.compaction.lag.ms 0 (the
//     default, stated);
//   - topic message.timestamp.type LogAppendTime on one topic (default
//     CreateTime): the stamp is the broker's append time, no skew; the
//     other keeps CreateTime with message.timestamp.after.max.ms 3000
//     (3.9's default is unbounded, where a stamp dates nothing and the proof
//     computes no tombstone headroom; 4.x's is an hour, which would leave no
//     headroom at all on a 20 s clock).
func TestTombstoneHeadroomBelowTheWindowIsViolated(t *testing.T) {
	const (
		deleteRetention = 20 * time.Second
		window          = 12 * time.Second
	)
	type topicCase struct {
		name, stampedBy string
		skew            time.Duration // message.timestamp.after.max.ms with CreateTime
	}
	topics := []topicCase{
		{"accounts-appended", "LogAppendTime", 0},
		{"accounts-created", "CreateTime", 3 * time.Second},
	}
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	for _, d := range apachekafka.Dists(t) {
		t.Run(d.Line(), func(t *testing.T) {
			t.Parallel()
			b := apachekafka.Start(t, d, apachekafka.WithBrokerConfig("log.cleaner.backoff.ms", "500"))
			for _, tc := range topics {
				cfg := map[string]string{
					"cleanup.policy": "compact", "delete.retention.ms": ms(deleteRetention), "segment.ms": "1000",
					"min.cleanable.dirty.ratio": "0.0", "min.compaction.lag.ms": "0", "message.timestamp.type": tc.stampedBy,
				}
				if tc.stampedBy == "CreateTime" {
					cfg["message.timestamp.after.max.ms"] = ms(tc.skew)
				}
				b.CreateTopic(t, tc.name, 1, cfg)
				// acct-1 opened (offset 0) and deleted (offset 1, the
				// tombstone); the group read the first, not the delete.
				b.ProduceRecords(t, &kgo.Record{Topic: tc.name, Partition: 0, Key: []byte("acct-1"), Value: []byte("open")},
					&kgo.Record{Topic: tc.name, Partition: 0, Key: []byte("acct-1")})
				b.Commit(t, group(tc.name), tc.name, 0, 1)
			}
			stop := tickEvery(t, b, 500*time.Millisecond, topics[0].name, topics[1].name)
			defer stop()

			policy := func(topic string) proof.Policy {
				return proof.Policy{UID: "uid", GroupID: group(topic), Topics: []string{topic}, RecoveryWindow: window}
			}
			// The earliest the proof says the cleaner can drop a tombstone
			// after offset 1, read from the first observation.
			earliest := map[string]time.Time{}
			for _, tc := range topics {
				// Exact commit times (readOffsetsTopic): once the cleaner
				// removed the record before the committed offset, nothing
				// else dates the simple group's commit.
				target := kafka.Target{Group: group(tc.name), Topics: []string{tc.name}, ReadOffsetsTopic: true}
				obs := observeUntil(t, b, target, func(po proof.PartitionObservation) bool {
					return !po.LastCommit.IsZero() && !po.CommittedTimestamp.IsZero()
				})
				po := obs.Topics[0].Partitions[0]
				if po.Committed != 1 || po.CommittedTimestamp.IsZero() {
					t.Fatalf("%s: partition %+v, want committed 1 and the tombstone's timestamp", tc.name, po)
				}
				earliest[tc.name] = claimedDrop(t, po, tc.skew, deleteRetention)
				r := proof.Evaluate(obs, policy(tc.name), obs.ObservedAt)
				pr := r.Partitions[0]
				want := earliest[tc.name].Sub(obs.ObservedAt)
				if !pr.HasTombstoneHeadroom || pr.TombstoneHeadroom != want {
					t.Fatalf("%s on %s: tombstone headroom %v (has %v), want %v: the tombstone's stamp %v − %v + %v − now, or its horizon %+v",
						tc.name, d.Version, pr.TombstoneHeadroom, pr.HasTombstoneHeadroom, want, po.CommittedTimestamp, tc.skew, deleteRetention, po.Tombstones)
				}
				// Just written, the group may still be down for its window
				// (unless the machine was slow to get here).
				if (r.Verdict == proof.Proven) != (want >= window) {
					t.Fatalf("%s on %s: %s %v with a tombstone headroom of %v, window %v", tc.name, d.Version, r.Verdict, reasons(r), want, window)
				}
				t.Logf("%s on %s: tombstone headroom %v, %s", tc.name, d.Version, want.Round(time.Millisecond), r.Verdict)
			}

			// Once a cleaning kept the tombstone, its batch carries the
			// delete horizon it stamped (the ticks roll the segment, and
			// min.cleanable.dirty.ratio 0 has the cleaner take it at once):
			// from then on that horizon is the claim, with its numbers.
			// Past it less the window the group cannot be down for its
			// window any more. Today's main: Proven.
			for _, tc := range topics {
				target := kafka.Target{Group: group(tc.name), Topics: []string{tc.name}, ReadOffsetsTopic: true}
				stamped := func(po proof.PartitionObservation) bool {
					return !po.LastCommit.IsZero() && !po.CommittedTimestamp.IsZero() && po.Tombstones != nil &&
						len(po.Tombstones.Found) > 0 && po.Tombstones.Found[0].Offset == 1 && !po.Tombstones.Found[0].DeleteHorizon.IsZero() &&
						po.Tombstones.ReachesEnd
				}
				obs := observeUntil(t, b, target, stamped)
				if po := obs.Topics[0].Partitions[0]; !stamped(po) {
					t.Fatalf("%s on %s: no cleaning stamped the tombstone's batch within %v, or the observer did not read to log end: %+v",
						tc.name, d.Version, wait, po.Tombstones)
				}
				earliest[tc.name] = claimedDrop(t, obs.Topics[0].Partitions[0], tc.skew, deleteRetention)
				if sleep := time.Until(earliest[tc.name].Add(-window + time.Second)); sleep > 0 {
					time.Sleep(sleep)
				}
				obs = observeUntil(t, b, target, stamped)
				if got := claimedDrop(t, obs.Topics[0].Partitions[0], tc.skew, deleteRetention); !got.Equal(earliest[tc.name]) {
					t.Fatalf("%s on %s: the horizon moved from %v to %v: a stamped horizon is kept", tc.name, d.Version, earliest[tc.name], got)
				}
				r := proof.Evaluate(obs, policy(tc.name), obs.ObservedAt)
				if r.Verdict != proof.Violated || len(r.Violations) != 1 || r.Violations[0].Reason != proof.ReasonTombstoneHeadroomShorterThanWindow {
					t.Fatalf("%s on %s, a tombstone the group has not read may go in %v, window %v: %s %v, want Violated %s alone",
						tc.name, d.Version, earliest[tc.name].Sub(obs.ObservedAt), window, r.Verdict, reasons(r), proof.ReasonTombstoneHeadroomShorterThanWindow)
				}
				if v := r.Violations[0]; !v.ExpiresAt.Equal(earliest[tc.name]) || !strings.Contains(v.Message, "the tombstone at offset 1 (after committed offset 1)") ||
					!strings.Contains(v.Message, "delete horizon") {
					t.Errorf("%s: expiresAt %v, message %q; want the stamped horizon less the leader's clock allowance, %v, naming the tombstone",
						tc.name, v.ExpiresAt, v.Message, earliest[tc.name])
				}
			}

			// The loss the proof predicted: the broker drops the tombstone,
			// never before the earliest time, and a consumer resuming at
			// the committed offset never sees the delete.
			lastSeen, goneAt := map[string]time.Time{}, map[string]time.Time{}
			deadline := time.Now().Add(wait)
			for len(goneAt) < len(topics) {
				if time.Now().After(deadline) {
					t.Fatalf("on %s the cleaner kept a tombstone %v past delete.retention.ms %v (gone: %v)", d.Version, wait, deleteRetention, goneAt)
				}
				for _, tc := range topics {
					if !goneAt[tc.name].IsZero() {
						continue
					}
					before := time.Now()
					if hasKey(t, b, tc.name, 1, "acct-1") {
						lastSeen[tc.name] = before
						continue
					}
					goneAt[tc.name] = time.Now()
					if goneAt[tc.name].Before(earliest[tc.name]) {
						t.Errorf("%s on %s: the tombstone was gone by %v, before the earliest drop the proof relies on, %v",
							tc.name, d.Version, goneAt[tc.name], earliest[tc.name])
					}
					t.Logf("%s on %s: tombstone seen at %v, gone by %v; earliest drop %v",
						tc.name, d.Version, lastSeen[tc.name].Sub(earliest[tc.name]), goneAt[tc.name].Sub(earliest[tc.name]), earliest[tc.name])
				}
				time.Sleep(500 * time.Millisecond)
			}
		})
	}
}

// Issue 32 item 5, seed 000's compacted variant again: the same group
// behind the same tombstone, on a topic whose segment does not roll
// (segment.ms left at the broker's 7 days, as deployed, and nothing
// written after), so no cleaning ever covers the tombstone: the cleaner
// never cleans the active segment (LogCleanerManager takes a range below
// it). The oracle's false alarms: the coarse bound (the tombstone's stamp
// + delete.retention.ms) falls inside the window, and the tombstone was
// still there after it. What the observer read of the batch decides: no
// delete horizon on it, so none will be stamped before the first cleaning
// that covers it, which starts no earlier than the read less the cleaning
// allowance; delete.retention.ms (20 s) ≥ window (12 s) + allowance (2 s,
// in seconds like every clock here; an hour by default): Proven. Then the
// broker still holds the tombstone at the window's end, for a consumer
// resuming at the committed offset.
//
// What the topic changes from Kafka's defaults, and why:
// delete.retention.ms 20000 (a day by default), clocks in seconds;
// min.cleanable.dirty.ratio 0.0 and min.compaction.lag.ms 0: the cleaner
// would take the log at once if its segment rolled, so only the active
// segment keeps the tombstone uncleaned; LogAppendTime: the stamp is the
// broker's append time.
func TestUncleanedTombstoneBehindALaggingGroupIsProven(t *testing.T) {
	const (
		deleteRetention = 20 * time.Second
		window          = 12 * time.Second
		allowance       = 2 * time.Second
		topic           = "accounts-active-segment"
	)
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	for _, d := range apachekafka.Dists(t) {
		t.Run(d.Line(), func(t *testing.T) {
			t.Parallel()
			b := apachekafka.Start(t, d, apachekafka.WithBrokerConfig("log.cleaner.backoff.ms", "500"))
			b.CreateTopic(t, topic, 1, map[string]string{
				"cleanup.policy": "compact", "delete.retention.ms": ms(deleteRetention),
				"min.cleanable.dirty.ratio": "0.0", "min.compaction.lag.ms": "0", "message.timestamp.type": "LogAppendTime",
			})
			b.ProduceRecords(t, &kgo.Record{Topic: topic, Partition: 0, Key: []byte("acct-1"), Value: []byte("open")},
				&kgo.Record{Topic: topic, Partition: 0, Key: []byte("acct-1")})
			b.Commit(t, group(topic), topic, 0, 1)
			target := kafka.Target{Group: group(topic), Topics: []string{topic}, ReadOffsetsTopic: true, RecoveryWindow: window}
			opts := []kafka.Option{kafka.WithCleaningAllowance(allowance)}
			read := func(po proof.PartitionObservation) bool {
				return !po.LastCommit.IsZero() && !po.CommittedTimestamp.IsZero() && po.Tombstones != nil
			}
			first := observeUntilWith(t, b, target, opts, read).Topics[0].Partitions[0]
			if !read(first) {
				t.Fatalf("on %s: partition %+v, want the tombstone's stamp and what the observer read after offset 1", d.Version, first)
			}
			// Past the coarse bound less the window: written + 20 s is
			// under the window from now.
			coarse := first.CommittedTimestamp.Add(deleteRetention)
			if sleep := time.Until(coarse.Add(-window + time.Second)); sleep > 0 {
				time.Sleep(sleep)
			}
			obs := observeUntilWith(t, b, target, opts, read)
			po := obs.Topics[0].Partitions[0]
			sc := po.Tombstones
			if sc == nil || !sc.ReachesEnd || len(sc.Found) != 1 || sc.Found[0].Offset != 1 || !sc.Found[0].DeleteHorizon.IsZero() {
				t.Fatalf("on %s: read %+v, want the one tombstone at offset 1, in a batch no cleaning stamped, read to log end", d.Version, sc)
			}
			if coarse.Sub(obs.ObservedAt) >= window {
				t.Fatalf("on %s: the coarse bound %v leaves %v ≥ window %v: the test proves nothing", d.Version, coarse, coarse.Sub(obs.ObservedAt), window)
			}
			r := proof.Evaluate(obs, proof.Policy{UID: "uid", GroupID: group(topic), Topics: []string{topic}, RecoveryWindow: window}, obs.ObservedAt)
			pr := r.Partitions[0]
			want := sc.FetchedAt.Add(-allowance).Add(deleteRetention).Sub(obs.ObservedAt)
			if r.Verdict != proof.Proven || !pr.HasTombstoneHeadroom || pr.TombstoneHeadroom != want || pr.TombstoneBound != proof.TombstoneFound {
				t.Fatalf("on %s: %s %v, tombstone headroom %v (has %v, bound %d); want Proven with read %v − %v + %v − now = %v",
					d.Version, r.Verdict, reasons(r), pr.TombstoneHeadroom, pr.HasTombstoneHeadroom, pr.TombstoneBound, sc.FetchedAt, allowance, deleteRetention, want)
			}
			// Reality: down for the window from the verdict, the consumer
			// resuming at offset 1 still reads the delete.
			if sleep := time.Until(obs.ObservedAt.Add(window)); sleep > 0 {
				time.Sleep(sleep)
			}
			if !hasKey(t, b, topic, 1, "acct-1") {
				t.Fatalf("on %s: the tombstone was gone within the window, before the earliest drop the proof relied on, %v",
					d.Version, sc.FetchedAt.Add(-allowance).Add(deleteRetention))
			}
			t.Logf("on %s: coarse bound %v left, exact %v; the tombstone still there after the window", d.Version,
				coarse.Sub(obs.ObservedAt).Round(time.Millisecond), want.Round(time.Millisecond))
		})
	}
}

func group(topic string) string { return "ledger-" + topic }

// claimedDrop is the earliest drop of the tombstone at offset 1 (the
// committed offset) the proof claims from po (internal/proof tombstone.go):
// once a cleaning kept it, the delete horizon stamped on its batch less
// the second allowed for the leader's clock running ahead; before, its
// stamp − skew + delete.retention.ms (the observer's default cleaning
// allowance, an hour, reaches further back than these clocks in seconds).
func claimedDrop(t *testing.T, po proof.PartitionObservation, skew, deleteRetention time.Duration) time.Time {
	t.Helper()
	sc := po.Tombstones
	if sc == nil || len(sc.Found) == 0 || sc.Found[0].Offset != 1 {
		t.Fatalf("the observation shows no tombstone at offset 1: %+v", sc)
	}
	coarse := po.CommittedTimestamp.Add(-skew).Add(deleteRetention)
	h := sc.Found[0].DeleteHorizon
	if h.IsZero() {
		return coarse
	}
	claim := h.Add(-proof.CoordinatorClockAllowance)
	if sc.ReachesEnd {
		return claim
	}
	// Not read to log end: the records not read are dated by the
	// tombstone's stamp, or the first of them when its header says it.
	rest := coarse
	if next := sc.NextTimestamp.Add(-skew).Add(deleteRetention); !sc.NextTimestamp.IsZero() && next.After(rest) {
		rest = next
	}
	if rest.Before(claim) {
		return rest
	}
	return claim
}

// tickEvery writes a record of key "tick" to each topic's partition 0
// every period until stop is called: the segments roll (segment.ms) and the
// log stays dirty, so the cleaner keeps working on it.
func tickEvery(t *testing.T, b *apachekafka.Broker, period time.Duration, topics ...string) (stop func()) {
	t.Helper()
	cl := b.Client(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			for _, topic := range topics {
				// An error (the context ending) only skips a tick.
				_ = cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Key: []byte("tick"), Value: []byte("tick")}).FirstErr()
			}
			select {
			case <-ctx.Done():
			case <-time.After(period):
			}
		}
	})
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// hasKey reads topic/0 from offset from to its end as the broker holds it
// now, as a consumer resuming there does, and reports whether a record of
// key (a value or a tombstone) is among them.
func hasKey(t *testing.T, b *apachekafka.Broker, topic string, from int64, key string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := b.Admin(t).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("ListOffsets %s: %v", topic, err)
	}
	end, _ := ends.Lookup(topic, 0)
	cl, err := kgo.NewClient(append(b.Cluster.ClientOpts(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(from)}}),
		kgo.FetchMaxWait(200*time.Millisecond))...)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	defer cl.Close()
	found, done := false, end.Offset <= from
	var seen []int64
	var errs []error
	for !done && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		for _, e := range fs.Errors() {
			errs = append(errs, e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen = append(seen, r.Offset)
			found = found || string(r.Key) == key
			done = done || r.Offset >= end.Offset-1
		})
	}
	if !done {
		t.Fatalf("reading %s/0 from %d to %d: %v (read offsets %v, errors %v)", topic, from, end.Offset, ctx.Err(), seen, errs)
	}
	return found
}

// Seed 000's compacted variant on the brokers as deployed, lagging further
// than the observer reads: a fan-out consumer a few megabytes behind a
// tombstone on a compacted topic (every topic and broker setting Kafka's
// default: delete.retention.ms a day, CreateTime, segments of a GiB; a
// one-hour window). The observer reads up to 8 fetches of 256 KiB after
// the committed offset, so the records past them are neither read nor,
// on 3.9 (message.timestamp.after.max.ms unbounded), dated: a tombstone
// among them may have been cleaned long ago and go any moment, and the
// proof is Unknown (TombstonesUnread); before, it was Proven, having
// bounded nothing. On 4.4 (after.max.ms an hour) the record's stamp dates
// them: Proven. The way out the message names, bounding
// message.timestamp.after.max.ms on the 3.9 topic, makes it Proven.
func TestUnreadUndatedTombstonesAreUnknown(t *testing.T) {
	const (
		window = time.Hour
		topic  = "accounts-far-behind"
		pads   = 32
	)
	// Random bytes: the producer's codec leaves them their size.
	pad := make([]byte, 100<<10)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(pad)
	for _, d := range apachekafka.Dists(t) {
		t.Run(d.Line(), func(t *testing.T) {
			t.Parallel()
			b := apachekafka.Start(t, d, apachekafka.AsDeployed())
			b.CreateTopic(t, topic, 1, map[string]string{"cleanup.policy": "compact"})
			recs := []*kgo.Record{{Topic: topic, Partition: 0, Key: []byte("acct-1"), Value: []byte("open")},
				{Topic: topic, Partition: 0, Key: []byte("acct-1")}}
			for i := range pads {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Key: []byte("pad-" + strconv.Itoa(i)), Value: pad})
			}
			for _, r := range recs {
				b.ProduceRecords(t, r) // a batch each: the fetches cut between them
			}
			b.Commit(t, group(topic), topic, 0, 1)
			target := kafka.Target{Group: group(topic), Topics: []string{topic}, ReadOffsetsTopic: true, RecoveryWindow: window}
			read := func(po proof.PartitionObservation) bool { return !po.LastCommit.IsZero() && po.Tombstones != nil }
			evaluate := func() (proof.Result, *proof.TombstoneScan) {
				obs := observeUntil(t, b, target, read)
				sc := obs.Topics[0].Partitions[0].Tombstones
				if sc == nil || sc.ReachesEnd || len(sc.Found) == 0 || sc.Found[0].Offset != 1 {
					t.Fatalf("on %s: read %+v, want the tombstone at offset 1 and not the last of the %d records after it", d.Version, sc, pads)
				}
				return proof.Evaluate(obs, proof.Policy{UID: "uid", GroupID: group(topic), Topics: []string{topic}, RecoveryWindow: window}, obs.ObservedAt), sc
			}
			r, sc := evaluate()
			if d.Line() == "3.9" {
				if r.Verdict != proof.Unknown || len(r.Violations) != 1 || r.Violations[0].Reason != proof.ReasonTombstonesUnread ||
					!strings.Contains(r.Violations[0].Message, "message.timestamp.after.max.ms unbounded") {
					t.Fatalf("on %s (read to offset %d of %d): %s %v; want Unknown by %s alone, naming the unbounded setting",
						d.Version, sc.Through, pads+2, r.Verdict, reasons(r), proof.ReasonTombstonesUnread)
				}
				// The way out: bound the producers' clock on the topic.
				res, err := kadm.NewClient(b.Client(t)).AlterTopicConfigs(context.Background(), []kadm.AlterConfig{
					{Op: kadm.SetConfig, Name: "message.timestamp.after.max.ms", Value: kadm.StringPtr("3600000")}}, topic)
				for _, r := range res {
					if err == nil && r.Err != nil {
						err = r.Err
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				r, sc = evaluate()
			}
			if r.Verdict != proof.Proven || !r.Partitions[0].HasTombstoneHeadroom || r.Partitions[0].TombstoneHeadroom < window {
				t.Fatalf("on %s (read to offset %d): %s %v, tombstone headroom %v; want Proven, the records dated by their stamps",
					d.Version, sc.Through, r.Verdict, reasons(r), r.Partitions[0].TombstoneHeadroom)
			}
		})
	}
}
