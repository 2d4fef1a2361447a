package product

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/retentionguard/retention-guard/internal/cli"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
)

// waitFor polls cond every 500 ms until it holds, or fails after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, limit)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// Seed 003 with `check`, on the broker's own clock: a settlement batch
// consumer (a classic group with a protocol type) commits at the end of
// its run and leaves; the broker deletes an Empty group's offsets
// offsets.retention.minutes after it became Empty (1 minute here, Kafka's
// floor). While they last, check proves the group (its window, 30 s, is
// shorter than what is left); once the broker has deleted them and the log
// has moved on, check fails with NoCommittedOffset (exit 1) and the log
// start, where `auto.offset.reset=latest` would skip silently; after a
// reset to the log start check proves it again.
func TestCheckSeed003EmptyGroupOffsetsExpire(t *testing.T) {
	eachLine(t, func(t *testing.T, b *apachekafka.Broker) {
		const topic, group = "settle-task", "ledger-settle-consumer"
		b.CreateTopic(t, topic, 3, map[string]string{"retention.ms": strconv.FormatInt((30 * 24 * time.Hour).Milliseconds(), 10)})
		var recs []*kgo.Record
		for p := range int32(3) {
			recs = append(recs, records(topic, p, 100)...)
		}
		produceBatched(t, b, recs...)
		b.CommitAsMember(t, group, topic, map[int32]int64{0: 100, 1: 100, 2: 100})
		args := []string{"--group", group, "--topic", topic, "--recovery-window", "30s"}
		// One check cannot know since when the group is Empty (no answer
		// says, only __consumer_offsets): its offsets may expire any moment
		// of the next minute. Unknown, never Proven: the broker-in-the-loop
		// oracle's false Proven (the Java consumer with latest skipped
		// every record since).
		code, res := check(t, b, append(args, "--read-offsets-topic=false")...)
		// (On 4.x the commits are dated too, the group may be converted;
		// without __consumer_offsets they are only bounded: more Unknown.)
		if code != cli.ExitUnknown || !slices.Contains(res.reasons(), "EmptyGroupOffsetsMayExpireBeforeWindow") {
			t.Fatalf("after the run, without the Empty time: exit %d %s %v; want 2 Unknown EmptyGroupOffsetsMayExpireBeforeWindow",
				code, res.Verdict, res.reasons())
		}
		// So check reads the exact Empty time (and commit times) from
		// __consumer_offsets, by default (issue 32). 3.x as deployed (seed
		// 003's 3.5.1) serves classic groups only: the Empty group's
		// offsets are on the Empty clock alone. 4.x serves the consumer
		// protocol, so the group may be converted and its commits expire
		// per commit too.
		wantClock := "GroupEmpty"
		if b.Dist.AtLeast(4, 0) {
			wantClock = "LastCommit"
		}

		code, res = check(t, b, args...)
		if code != cli.ExitProven || res.GroupState != "Empty" || res.OffsetExpiry == nil || res.OffsetExpiry.Clock != wantClock {
			t.Fatalf("after the run: exit %d %s %v, state %s, expiry %+v; want 0 Proven, Empty, on the %s clock",
				code, res.Verdict, res.reasons(), res.GroupState, res.OffsetExpiry, wantClock)
		}
		if !res.OffsetExpiry.Exact {
			t.Errorf("expiry %+v from __consumer_offsets, want exact", res.OffsetExpiry)
		}
		if res.OffsetsRetention == nil || *res.OffsetsRetention != 1 {
			t.Errorf("offsetsRetentionMinutes = %v, want the broker's 1", res.OffsetsRetention)
		}

		// Down: new tasks arrive, the oldest are deleted, and the
		// broker expires the Empty group's offsets.
		recs = nil
		for p := range int32(3) {
			recs = append(recs, records(topic, p, 150)...)
		}
		produceBatched(t, b, recs...)
		b.DeleteRecords(t, topic, 0, 40)
		b.DeleteRecords(t, topic, 1, 40)
		b.DeleteRecords(t, topic, 2, 40)
		admin := b.Admin(t)
		waitFor(t, 3*time.Minute, "the broker expires the Empty group's offsets", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			os, err := admin.FetchOffsets(ctx, group)
			return err != nil || len(os[topic]) == 0 // deleted with its offsets
		})

		code, res = check(t, b, args...)
		if code != cli.ExitViolated || res.PartitionSummary.Missing != 3 {
			t.Fatalf("after the expiry: exit %d %s %v, summary %+v; want 1 Violated, 3 partitions missing", code, res.Verdict, res.reasons(), res.PartitionSummary)
		}
		for _, v := range res.Violations {
			if v.Reason != "NoCommittedOffset" || !strings.Contains(v.Message, "no committed offset while log start is 40") {
				t.Errorf("violation %s: %s; want NoCommittedOffset naming log start 40", v.Reason, v.Message)
			}
		}

		// The replay: the next run starts from the log start and commits.
		// (An admin reset instead makes a simple group whose commit no
		// record dates, the one before 40 being deleted: Unknown for
		// check, which sees no change happen; the manager does.)
		b.CommitAsMember(t, group, topic, map[int32]int64{0: 40, 1: 40, 2: 40})
		if code, res := check(t, b, args...); code != cli.ExitProven {
			t.Errorf("after the reset: exit %d %s %v, want 0 Proven", code, res.Verdict, res.reasons())
		}
	}, apachekafka.AsDeployed(), apachekafka.WithOffsetsRetention(time.Minute))
}

// Seed 000 with `check`, on the broker's own retention: a fan-out consumer
// (a classic group, Empty while it is down) committed offset 30 of an outbox topic whose records carry their rows'
// original times, five days old (a backfill). With retention.ms 7 days,
// the records it has not read are deleted in about 2 days, less than its
// 72h window: check fails with RecoveryHeadroomShorterThanWindow and
// reports that headroom. Retention is shortened to 4 days and the
// broker deletes the records (they are older): the committed offset lies
// below the new log start, check fails with CommittedOffsetExpired and the
// 45 records the group never read, where `auto.offset.reset=earliest`
// would skip them silently.
func TestCheckSeed000RetentionPassesTheCommittedOffset(t *testing.T) {
	eachLine(t, func(t *testing.T, b *apachekafka.Broker) {
		const topic, group = "outbox", "fanout"
		week := strconv.FormatInt((7 * 24 * time.Hour).Milliseconds(), 10)
		b.CreateTopic(t, topic, 1, map[string]string{"retention.ms": week})
		old := time.Now().Add(-5 * 24 * time.Hour)
		recs := records(topic, 0, 75)
		for _, r := range recs {
			r.Timestamp = old
		}
		produceBatched(t, b, recs...)
		b.CommitAsMember(t, group, topic, map[int32]int64{0: 30}) // a classic group, Empty while down
		// The test is about retention, not the offsets' clock: check reads
		// the exact times from __consumer_offsets by default, the group's
		// Empty time (3.x as deployed serves classic groups only, their
		// offsets on the Empty clock, 7 days away, which one check cannot
		// date otherwise); on 4.x, which may convert the group and expire
		// its commits one by one, the commit times too (the record before
		// the commit, a 5-day-old backfill, dates it 5 days early).
		args := []string{"--group", group, "--topic", topic, "--recovery-window", "72h"}

		// The records the group has not read are deleted in about 2 days,
		// before its 72h window ends: a consumer down that long loses
		// them, so check refuses already (exit 1), the headroom in the facts.
		code, res := check(t, b, args...)
		if code != cli.ExitViolated || len(res.Violations) == 0 || res.Violations[0].Reason != "RecoveryHeadroomShorterThanWindow" ||
			len(res.Partitions) != 1 || res.Partitions[0].HeadroomSeconds == nil {
			t.Fatalf("before: exit %d %s %v %+v, want 1 Violated RecoveryHeadroomShorterThanWindow with headroom", code, res.Verdict, res.reasons(), res.Partitions)
		}
		if h := time.Duration(*res.Partitions[0].HeadroomSeconds) * time.Second; h < 47*time.Hour || h > 49*time.Hour {
			t.Errorf("headroom %s, want about 2 days (5-day-old records, 7-day retention)", h)
		}

		b.SetTopicConfig(t, topic, "retention.ms", strconv.FormatInt((4*24*time.Hour).Milliseconds(), 10))
		admin := b.Admin(t)
		waitFor(t, 2*time.Minute, "retention deletes the 5-day-old records", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			lo, err := admin.ListStartOffsets(ctx, topic)
			if err != nil {
				return false
			}
			o, _ := lo.Lookup(topic, 0)
			return o.Offset == 75
		})

		code, res = check(t, b, args...)
		if code != cli.ExitViolated || res.ExpiredRecords != 45 || len(res.Violations) == 0 || res.Violations[0].Reason != "CommittedOffsetExpired" {
			t.Fatalf("after retention: exit %d %s %v, expiredRecords %d; want 1 Violated CommittedOffsetExpired, 45 records", code, res.Verdict, res.reasons(), res.ExpiredRecords)
		}
		if msg := res.Violations[0].Message; !strings.Contains(msg, "committed offset 30 is below log start 75: 45 records expired") {
			t.Errorf("violation message %q does not name the numbers", msg)
		}

		b.CommitAsMember(t, group, topic, map[int32]int64{0: 75}) // replayed from the outbox table, resumed at the log start
		if code, res := check(t, b, args...); code != cli.ExitProven {
			t.Errorf("after the reset: exit %d %s %v, want 0 Proven", code, res.Verdict, res.reasons())
		}
	}, apachekafka.AsDeployed())
}
