package clients

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// waitTimeout bounds the waits for the broker's clocks (offset expiry after
// offsets.retention.minutes=1, segment deletion) on a loaded machine.
const waitTimeout = 4 * time.Minute

// verdict is the product's proof on the group's state now: the observer
// (internal/kafka) and the proof (internal/proof), as the manager and
// `retention-guard check` take it.
func verdict(t *testing.T, b *apachekafka.Broker, group, topic string, window time.Duration) proof.Result {
	t.Helper()
	o := kafka.NewObserver()
	defer o.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	obs := o.Observe(ctx, kafka.Connection{BootstrapServers: b.Addrs()}, []kafka.Target{{Group: group, Topics: []string{topic}}})
	if len(obs) != 1 {
		t.Fatalf("the observer returned %d observations for one target", len(obs))
	}
	res := proof.Evaluate(obs[0], proof.Policy{UID: "seed", GroupID: group, Topics: []string{topic}, RecoveryWindow: window}, obs[0].ObservedAt)
	var lines []string
	for _, v := range res.Violations {
		lines = append(lines, v.Reason+": "+v.Message)
	}
	t.Logf("the product's verdict: %s\n%s", res.Verdict, strings.Join(lines, "\n"))
	return res
}

func violation(res proof.Result, reason string) (proof.Violation, bool) {
	for _, v := range res.Violations {
		if v.Reason == reason {
			return v, true
		}
	}
	return proof.Violation{}, false
}

// committedOffset reads the group's committed offset (-1: none).
func committedOffset(t *testing.T, b *apachekafka.Broker, group, topic string, partition int32) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	offs, err := b.Admin(t).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetching the offsets of %s: %v", group, err)
	}
	if o, ok := offs.Lookup(topic, partition); ok && o.Err == nil {
		return o.At
	}
	return -1
}

// logStart reads the partition's log start offset.
func logStart(t *testing.T, b *apachekafka.Broker, topic string, partition int32) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	offs, err := b.Admin(t).ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("listing the start offsets of %s: %v", topic, err)
	}
	o, ok := offs.Lookup(topic, partition)
	if !ok || o.Err != nil {
		t.Fatalf("no start offset for %s[%d]: %v", topic, partition, o.Err)
	}
	return o.Offset
}

// poll waits until cond holds, failing after waitTimeout.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %s", what, waitTimeout)
		}
		time.Sleep(time.Second)
	}
}

// TestSeed003JavaLatestSkipsWhatWasProducedWhileDown replays seed 003
// (Kafka 3.5.1, a batch consumer: its classic group sat Empty longer than
// offsets.retention.minutes, the offsets expired, and `latest` skipped
// silently what was produced meanwhile) with the official Java consumer,
// scaled to offsets.retention.minutes=1. Before the restart the product's
// verdict on that state must not be Proven; then `none` fails loudly
// (NoOffsetForPartitionException, exit 1) and `latest` starts at the end:
// its own output counts the records it skipped.
func TestSeed003JavaLatestSkipsWhatWasProducedWhileDown(t *testing.T) {
	t.Parallel()
	for _, d := range apachekafka.Dists(t) {
		t.Run(d.Line(), func(t *testing.T) {
			t.Parallel()
			const group, topic = "batch-settle", "settlements"
			b := apachekafka.Start(t, d, append(asDeployed(d), apachekafka.WithOffsetsRetention(time.Minute))...)
			b.CreateTopic(t, topic, 1, nil)
			b.ProduceTo(t, topic, 0, 10)

			env := ConsumerEnv{Brokers: b.Addrs(), Group: group, Topics: []string{topic},
				Protocol: "classic", AutoCommit: "false", Idle: 3 * time.Second}
			// The batch's run: it reads everything and commits, then exits
			// and leaves its group Empty.
			first := env
			first.Reset = "earliest"
			run := Java(t, first)
			if run.Code != 0 || run.Consumed(topic, 0) != 10 || run.Committed(topic, 0) != 10 {
				t.Fatalf("the batch's run: want exit 0, 10 records consumed and offset 10 committed:\n%s", run)
			}
			b.WaitGroupState(t, group, "Empty")

			// Records arrive while the batch is down; its offsets expire.
			b.ProduceTo(t, topic, 0, 5)
			poll(t, "the Empty group's offsets expiring (offsets.retention.minutes=1)", func() bool {
				return committedOffset(t, b, group, topic, 0) < 0
			})

			// The product's verdict on this state, before the restart.
			res := verdict(t, b, group, topic, 10*time.Minute)
			if res.Verdict == proof.Proven {
				t.Fatalf("the product proves a group whose offsets expired while it was down (seed 003): %+v", res.Conditions)
			}
			v, ok := violation(res, proof.ReasonOffsetsRetentionShorterThanWindow)
			if !ok {
				t.Fatalf("the verdict %s does not name %s: %+v", res.Verdict, proof.ReasonOffsetsRetentionShorterThanWindow, res.Violations)
			}
			if !strings.Contains(v.Message, "1m") || !strings.Contains(v.Message, "10m") {
				t.Errorf("the violation does not give offsets.retention.minutes (1m) against the window (10m): %s", v.Message)
			}

			// none: the client refuses to guess and the pod fails loudly.
			none := env
			none.Reset = "none"
			run = Java(t, none)
			if run.Code != 1 {
				t.Fatalf("auto.offset.reset=none without a committed offset: want exit 1:\n%s", run)
			}
			if f := run.All("fatal"); len(f) != 1 || f[0].Str("exception") != "NoOffsetForPartitionException" {
				t.Fatalf("auto.offset.reset=none: want one fatal NoOffsetForPartitionException:\n%s", run)
			}
			if n := len(run.All("consumed")); n != 0 {
				t.Fatalf("auto.offset.reset=none consumed records:\n%s", run)
			}

			// latest, seed 003's setting: it starts at the end.
			latest := env
			latest.Reset = "latest"
			p := StartJava(t, latest)
			a := p.WaitFor(t, "assigned")
			if a.Int("committed") != -1 || a.Int("logEnd") != 15 {
				t.Fatalf("restart: assigned %v, want committed -1 (expired) and log end 15", a)
			}
			// Where latest put it, before anything new arrives.
			if pos := p.WaitFor(t, "position"); pos.Int("offset") != 15 {
				t.Fatalf("restart with latest: position %v, want 15 (the log end)", pos)
			}
			b.ProduceTo(t, topic, 0, 2) // offsets 15 and 16, after the restart
			run = p.Wait(t)
			if run.Code != 0 {
				t.Fatalf("restart with latest: want exit 0:\n%s", run)
			}
			fr := run.One(t, "first record", topic, 0)
			if fr.Int("offset") != 15 || !fr.Bool("reset") || fr.Str("resetCause") != "NoCommittedOffset" {
				t.Fatalf("restart with latest: first record %v, want offset 15, reset by NoCommittedOffset", fr)
			}
			// What the batch never reads: from its last commit to where
			// latest put it — the records produced while it was down.
			if skipped := fr.Int("offset") - 10; skipped != 5 {
				t.Errorf("latest skipped %d records produced while the batch was down, want 5", skipped)
			}
			if n := run.Consumed(topic, 0); n != 2 {
				t.Errorf("restart with latest consumed %d records, want the 2 produced after it started", n)
			}
		})
	}
}

// TestSeed000JavaEarliestResetsToTheNewLogStart replays seed 000
// (retention passed the committed offset of a consumer that was down, and
// auto.offset.reset=earliest reset it silently) with the official Java
// consumer: the consumer commits, goes down, records are produced, and
// retention (retention.ms=1s, segment.ms=1s) deletes them before the
// restart. The product's verdict must be Violated with the number of
// records lost; then `none` fails loudly (OffsetOutOfRangeException, exit
// 1) and `earliest` resets to the new log start: its own output says so
// and counts what it skipped.
func TestSeed000JavaEarliestResetsToTheNewLogStart(t *testing.T) {
	t.Parallel()
	for _, d := range apachekafka.Dists(t) {
		t.Run(d.Line(), func(t *testing.T) {
			t.Parallel()
			const group, topic = "settle", "payments"
			b := apachekafka.Start(t, d)
			b.CreateTopic(t, topic, 1, map[string]string{"retention.ms": "3600000", "segment.ms": "1000"})
			b.ProduceTo(t, topic, 0, 5)
			env := ConsumerEnv{Brokers: b.Addrs(), Group: group, Topics: []string{topic},
				AutoCommit: "false", Idle: 3 * time.Second}
			first := env
			first.Reset = "earliest"
			run := Java(t, first)
			if run.Code != 0 || run.Committed(topic, 0) != 5 {
				t.Fatalf("the consumer's run: want exit 0 and offset 5 committed:\n%s", run)
			}

			// Down: 5 more records, then retention deletes every record.
			b.ProduceTo(t, topic, 0, 5)
			b.SetTopicConfig(t, topic, "retention.ms", "1000")
			poll(t, "retention deleting the records past the committed offset", func() bool {
				return logStart(t, b, topic, 0) >= 10
			})
			b.SetTopicConfig(t, topic, "retention.ms", "3600000")
			if c := committedOffset(t, b, group, topic, 0); c != 5 {
				t.Fatalf("the group's committed offset is %d, want 5 (still there, below log start)", c)
			}

			res := verdict(t, b, group, topic, 10*time.Minute)
			if res.Verdict != proof.Violated {
				t.Fatalf("the product's verdict is %s on a committed offset retention passed (seed 000), want Violated", res.Verdict)
			}
			v, ok := violation(res, proof.ReasonCommittedOffsetExpired)
			if !ok {
				t.Fatalf("the verdict does not name %s: %+v", proof.ReasonCommittedOffsetExpired, res.Violations)
			}
			if v.Committed != 5 || v.LogStart != 10 || v.ExpiredRecords != 5 {
				t.Fatalf("the violation says committed %d, log start %d, %d records expired; want 5, 10, 5", v.Committed, v.LogStart, v.ExpiredRecords)
			}

			none := env
			none.Reset = "none"
			run = Java(t, none)
			if run.Code != 1 {
				t.Fatalf("auto.offset.reset=none with an out-of-range committed offset: want exit 1:\n%s", run)
			}
			if f := run.All("fatal"); len(f) != 1 || f[0].Str("exception") != "OffsetOutOfRangeException" {
				t.Fatalf("auto.offset.reset=none: want one fatal OffsetOutOfRangeException:\n%s", run)
			}
			if c := committedOffset(t, b, group, topic, 0); c != 5 {
				t.Fatalf("after the none run the committed offset is %d, want 5 untouched", c)
			}

			earliest := env
			earliest.Reset = "earliest"
			p := StartJava(t, earliest)
			a := p.WaitFor(t, "assigned")
			if a.Int("committed") != 5 || a.Int("logStart") < 10 {
				t.Fatalf("restart: assigned %v, want committed 5 below log start 10", a)
			}
			start := a.Int("logStart")
			b.ProduceTo(t, topic, 0, 3)
			run = p.Wait(t)
			if run.Code != 0 {
				t.Fatalf("restart with earliest: want exit 0:\n%s", run)
			}
			fr := run.One(t, "first record", topic, 0)
			if fr.Int("offset") != start || !fr.Bool("reset") || fr.Str("resetCause") != "OffsetOutOfRange" || fr.Int("skipped") != start-5 {
				t.Fatalf("restart with earliest: first record %v, want offset %d (the new log start), reset by OffsetOutOfRange, %d skipped", fr, start, start-5)
			}
			if start != 10 {
				t.Logf("the log start moved past the records produced while down to %d", start)
			}
		})
	}
}

// TestSeed003ExpiredOffsetsOnALogStartingAtZero: seed 003 on a young topic
// (its log still starts at 0) and a recovery window shorter than
// offsets.retention.minutes, so only the offsets themselves can show the
// loss. The manager's observer saw the group's commit, then saw it vanish
// (expired while the group was Empty): the verdict is Violated
// (NoCommittedOffset with the offset it had), not a fresh group's Proven —
// and the Java consumer with latest indeed skips the records produced
// meanwhile.
func TestSeed003ExpiredOffsetsOnALogStartingAtZero(t *testing.T) {
	t.Parallel()
	for _, d := range apachekafka.Dists(t) {
		t.Run(d.Line(), func(t *testing.T) {
			t.Parallel()
			const group, topic = "batch-settle", "settlements"
			b := apachekafka.Start(t, d, append(asDeployed(d), apachekafka.WithOffsetsRetention(time.Minute))...)
			b.CreateTopic(t, topic, 1, nil)
			b.ProduceTo(t, topic, 0, 10)
			env := ConsumerEnv{Brokers: b.Addrs(), Group: group, Topics: []string{topic},
				Protocol: "classic", AutoCommit: "false", Idle: 3 * time.Second}
			first := env
			first.Reset = "earliest"
			if run := Java(t, first); run.Code != 0 || run.Committed(topic, 0) != 10 {
				t.Fatalf("the batch's run: want exit 0 and offset 10 committed:\n%s", run)
			}

			// One observer across passes, as the manager runs it.
			o := kafka.NewObserver()
			defer o.Close()
			pol := proof.Policy{UID: "seed-003", GroupID: group, Topics: []string{topic}, RecoveryWindow: 30 * time.Second}
			judge := func() proof.Result {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				// The batch ran before the observer's first pass: only
				// __consumer_offsets says since when the group is Empty
				// (without it the proof is Unknown: its offsets may expire
				// any moment). On 4.x a classic group can also be
				// converted to a consumer group (KIP-848 migration), its
				// offsets then expiring per commit: with one minute of
				// offsets retention only the exact commit time dates the
				// commit closely enough (the record before it is bounded
				// by message.timestamp.after.max.ms, an hour).
				obs := o.Observe(ctx, kafka.Connection{BootstrapServers: b.Addrs()},
					[]kafka.Target{{Group: group, Topics: []string{topic}, ReadOffsetsTopic: true}})[0]
				return proof.Evaluate(obs, pol, obs.ObservedAt)
			}
			if r := judge(); r.Verdict != proof.Proven {
				t.Fatalf("before expiry: %s %+v, want Proven (offset 10 at log end, a window shorter than offsets.retention.minutes)", r.Verdict, r.Violations)
			}

			b.ProduceTo(t, topic, 0, 5)
			poll(t, "the Empty group's offsets expiring", func() bool { return committedOffset(t, b, group, topic, 0) < 0 })
			r := judge()
			v, ok := violation(r, proof.ReasonNoCommittedOffset)
			if r.Verdict != proof.Violated || !ok {
				t.Fatalf("after expiry on a log starting at 0: %s %+v, want Violated by %s (not a fresh group)", r.Verdict, r.Violations, proof.ReasonNoCommittedOffset)
			}
			if !strings.Contains(v.Message, "had committed 10") || !strings.Contains(v.Message, "latest skips the 5 records") {
				t.Errorf("the violation lacks the vanished offset and the records latest skips: %s", v.Message)
			}
			t.Logf("the product's verdict: %s: %s", r.Verdict, v.Message)

			latest := env
			latest.Reset = "latest"
			run := Java(t, latest)
			if run.Code != 0 || run.Consumed(topic, 0) != 0 || run.Committed(topic, 0) != 15 {
				t.Fatalf("restart with latest: want exit 0, nothing read and offset 15 committed (records 10..14 skipped):\n%s", run)
			}
		})
	}
}
