package records

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// stamped are n records for topic/0 with the given CreateTime.
func stamped(topic string, n int, ts time.Time, key string) []*kgo.Record {
	out := make([]*kgo.Record, n)
	for i := range out {
		out[i] = &kgo.Record{Topic: topic, Partition: 0, Timestamp: ts, Value: []byte(fmt.Sprintf("r%d", i))}
		if key != "" {
			out[i].Key = []byte(key + strconv.Itoa(i))
		}
	}
	return out
}

// tick appends one record to topic/0 now: Kafka rolls a segment only on
// append (LogSegment.shouldRoll, checked in UnifiedLog.maybeRoll), so an
// idle segment older than segment.ms stays active — and the cleaner never
// cleans the active segment — until something is written.
func tick(t *testing.T, c *kafkatest.Cluster, topic string) {
	t.Helper()
	c.ProduceRecords(t, &kgo.Record{Topic: topic, Partition: 0, Key: []byte("tick"), Value: []byte("tick")})
}

func evaluate(obs proof.Observation, group, topic string, window time.Duration) proof.Result {
	return proof.Evaluate(obs, proof.Policy{UID: "uid", GroupID: group, Topics: []string{topic}, RecoveryWindow: window}, time.Now())
}

// Seed 000 on the broker's own clock: time retention deletes the whole
// first segment once its newest record is older than retention.ms, the log
// start jumps past the group's committed offset to a segment boundary, and
// the product says the committed offset expired, and how many records were
// lost — the observer, the proof and `check` alike.
func TestSeed000TimeRetentionPassesCommittedOffset(t *testing.T) {
	t.Parallel()
	eachLine(t, func(t *testing.T, d apachekafka.Dist) {
		_, c := plainBroker(t, d)
		const topic, group = "seed000-events", "seed000-audit"
		createTopic(t, c, topic, 1, map[string]string{"retention.ms": "4000", "segment.ms": "1000"})
		c.ProduceTo(t, topic, 0, 10) // one batch: offsets 0–9, the first segment
		c.Commit(t, group, topic, 0, 3)
		time.Sleep(1500 * time.Millisecond) // the segment is older than segment.ms ...
		tick(t, c, topic)                   // ... and rolls on this append: offset 10 starts the next one

		waitFor(t, 90*time.Second, "the broker deletes the first segment", func() bool {
			start, _ := offsets(t, c, topic, 0)
			return start >= 10
		})
		start, end := offsets(t, c, topic, 0)
		// Whole segments: the log start is a segment's base offset (10, or
		// 11 once the second segment expired too: the broker rolls an
		// empty active segment first), never a record inside one.
		if (start != 10 && start != 11) || end != 11 {
			t.Fatalf("Apache Kafka %s: log start %d, end %d; want 10 or 11 (segment bases) and 11", d.Version, start, end)
		}

		o := observer(t)
		obs := observe(t, o, conn(c), kafka.Target{Group: group, Topics: []string{topic}})
		requireNoFailures(t, obs)
		p := partitionObs(t, obs, topic, 0)
		if (p.LogStart != 10 && p.LogStart != 11) || p.LogEnd != 11 || p.Committed != 3 {
			t.Fatalf("observed %+v; want log start 10 or 11, end 11, committed 3 (raw, below the log start)", p)
		}
		if to := topicObs(t, obs, topic); !is(to.RetentionMs, "4000") || !is(to.CleanupPolicy, "delete") {
			t.Errorf("configs read %+v %+v, want retention.ms 4000, cleanup.policy delete", to.RetentionMs, to.CleanupPolicy)
		}
		res := evaluate(obs, group, topic, time.Second)
		v := violation(t, res, proof.ReasonCommittedOffsetExpired, topic, 0)
		if res.Verdict != proof.Violated || v.ExpiredRecords != p.LogStart-3 || res.ExpiredRecords != p.LogStart-3 {
			t.Errorf("verdict %s, %d records expired (total %d); want Violated with %d", res.Verdict, v.ExpiredRecords, res.ExpiredRecords, p.LogStart-3)
		}

		code, out := check(t, c, group, topic, "1s")
		if code != exitViolated || out.ExpiredRecords < 7 || out.ExpiredRecords > 8 || !hasCheckReason(out, proof.ReasonCommittedOffsetExpired) {
			t.Errorf("check: exit %d, expiredRecords %d, reasons %v; want exit 1, 7 or 8 records, CommittedOffsetExpired", code, out.ExpiredRecords, checkReasons(out))
		}
	})
}

// A producer's CreateTime is taken as given (message.timestamp.before.max.ms
// is unbounded by default): records stamped two hours back land in a
// segment that time retention of one hour deletes at once, while the
// segment of fresh records after it stays — whole segments by their newest
// timestamp. The proof warns of it (recordTimestamps); a topic bounding
// before.max.ms refuses such records.
func TestBackdatedRecordsExpireAtOnce(t *testing.T) {
	t.Parallel()
	eachLine(t, func(t *testing.T, d apachekafka.Dist) {
		_, c := plainBroker(t, d)
		const topic, group = "backdated-mirror", "backdated-replica"
		createTopic(t, c, topic, 1, map[string]string{"retention.ms": "3600000", "segment.ms": "60000"})
		c.ProduceRecords(t, stamped(topic, 5, time.Now().Add(-2*time.Hour), "")...) // accepted: no bound by default
		// Rolls: this batch's timestamp is more than segment.ms after the
		// first batch's (LogSegment.timeWaitedForRoll).
		c.ProduceRecords(t, stamped(topic, 5, time.Now(), "")...)
		c.Commit(t, group, topic, 0, 3)
		waitFor(t, 90*time.Second, "the broker deletes the back-dated segment", func() bool {
			start, _ := offsets(t, c, topic, 0)
			return start > 0
		})
		if start, end := offsets(t, c, topic, 0); start != 5 || end != 10 {
			t.Fatalf("Apache Kafka %s: log start %d, end %d; want 5 (the fresh segment kept) and 10", d.Version, start, end)
		}

		o := observer(t)
		obs := observe(t, o, conn(c), kafka.Target{Group: group, Topics: []string{topic}})
		requireNoFailures(t, obs)
		to := topicObs(t, obs, topic)
		if !is(to.TimestampType, "CreateTime") || !is(to.TimestampBeforeMaxMs, "9223372036854775807") {
			t.Errorf("timestamp configs read %+v %+v; want CreateTime, unbounded before.max.ms", to.TimestampType, to.TimestampBeforeMaxMs)
		}
		res := evaluate(obs, group, topic, 30*time.Minute)
		if v := violation(t, res, proof.ReasonCommittedOffsetExpired, topic, 0); v.ExpiredRecords != 2 || v.LogStart != 5 {
			t.Errorf("violation %+v; want 2 records expired below log start 5", v)
		}
		if !hasWarning(res, proof.WarningRecordTimestamps) {
			t.Errorf("no %s warning on an unbounded CreateTime topic: %+v", proof.WarningRecordTimestamps, res.Warnings)
		}

		// Bounded: the broker refuses what retention would delete sooner
		// than the window, and the proof stops warning.
		const bounded = "backdated-bounded"
		createTopic(t, c, bounded, 1, map[string]string{"retention.ms": "3600000", "message.timestamp.before.max.ms": "1800000"})
		if err := produceErr(t, c, stamped(bounded, 1, time.Now().Add(-2*time.Hour), "")...); !errors.Is(err, kerr.InvalidTimestamp) {
			t.Errorf("Apache Kafka %s took a record 2 h old under before.max.ms 30 min: %v; want INVALID_TIMESTAMP", d.Version, err)
		}
		c.ProduceRecords(t, stamped(bounded, 1, time.Now().Add(-10*time.Minute), "")...)
		c.Commit(t, group, bounded, 0, 0)
		obs = observe(t, o, conn(c), kafka.Target{Group: group, Topics: []string{bounded}})
		requireNoFailures(t, obs)
		if got := topicObs(t, obs, bounded).TimestampBeforeMaxMs; !is(got, "1800000") {
			t.Errorf("before.max.ms read %+v, want 1800000", got)
		}
		if res := evaluate(obs, group, bounded, 30*time.Minute); hasWarning(res, proof.WarningRecordTimestamps) {
			t.Errorf("warning on a topic bounding timestamps at retention − window: %+v", res.Warnings)
		}
	})
}

// Future CreateTime: from 4.0 message.timestamp.after.max.ms defaults to
// one hour and the broker refuses a record stamped two hours ahead; 3.9
// takes it (unbounded). The proof's commit-time bound from record
// timestamps leans on this (docs/kafka-semantics.md, "Offset expiry").
func TestFutureRecordsRefusedFrom4(t *testing.T) {
	t.Parallel()
	eachLine(t, func(t *testing.T, d apachekafka.Dist) {
		_, c := plainBroker(t, d)
		const topic = "future-stamps"
		createTopic(t, c, topic, 1, nil)
		cfg := describeConfigsOn(t, c, 1, 2, topic)["message.timestamp.after.max.ms"]
		err := produceErr(t, c, stamped(topic, 1, time.Now().Add(2*time.Hour), "")...)
		if d.AtLeast(4, 0) {
			if cfg.Value == nil || *cfg.Value != "3600000" || !errors.Is(err, kerr.InvalidTimestamp) {
				t.Errorf("Apache Kafka %s: after.max.ms %v, a record 2 h ahead: %v; want 3600000 and INVALID_TIMESTAMP", d.Version, cfg.Value, err)
			}
		} else if cfg.Value == nil || *cfg.Value != "9223372036854775807" || err != nil {
			t.Errorf("Apache Kafka %s: after.max.ms %v, a record 2 h ahead: %v; want unbounded and taken", d.Version, cfg.Value, err)
		}
	})
}

// retention.bytes per partition deletes the oldest whole segments while
// the rest still exceeds it; the proof names size-bounded retention and
// the records that went.
func TestRetentionBytesDeletesOldestSegments(t *testing.T) {
	t.Parallel()
	eachLine(t, func(t *testing.T, d apachekafka.Dist) {
		_, c := plainBroker(t, d)
		const topic, group = "bytes-clicks", "bytes-sessions"
		createTopic(t, c, topic, 1, map[string]string{"retention.ms": "-1", "retention.bytes": "1", "segment.ms": "60000"})
		// Three segments (each batch more than segment.ms after the last).
		now := time.Now()
		c.ProduceRecords(t, stamped(topic, 5, now.Add(-3*time.Hour), "")...)
		c.ProduceRecords(t, stamped(topic, 5, now.Add(-2*time.Hour), "")...)
		c.ProduceRecords(t, stamped(topic, 5, now, "")...)
		c.Commit(t, group, topic, 0, 7)
		waitFor(t, 90*time.Second, "the broker deletes by size", func() bool {
			start, _ := offsets(t, c, topic, 0)
			return start >= 10
		})
		// The active segment alone stays: deleting it would leave less
		// than retention.bytes... of nothing (size − segment < 1 byte).
		if start, end := offsets(t, c, topic, 0); start != 10 || end != 15 {
			t.Fatalf("Apache Kafka %s: log start %d, end %d; want 10 (the last segment kept) and 15", d.Version, start, end)
		}
		o := observer(t)
		obs := observe(t, o, conn(c), kafka.Target{Group: group, Topics: []string{topic}})
		requireNoFailures(t, obs)
		if to := topicObs(t, obs, topic); !is(to.RetentionBytes, "1") || !is(to.RetentionMs, "-1") {
			t.Errorf("configs read %+v %+v; want retention.bytes 1, retention.ms -1", to.RetentionBytes, to.RetentionMs)
		}
		res := evaluate(obs, group, topic, time.Hour)
		violation(t, res, proof.ReasonSizeBoundedRetention, topic, -1)
		if v := violation(t, res, proof.ReasonCommittedOffsetExpired, topic, 0); v.ExpiredRecords != 3 {
			t.Errorf("%d records expired, want 3", v.ExpiredRecords)
		}
	})
}

// DeleteRecords moves the log start to the exact offset asked, inside a
// segment.
func TestDeleteRecordsMovesLogStartExactly(t *testing.T) {
	t.Parallel()
	eachLine(t, func(t *testing.T, d apachekafka.Dist) {
		_, c := plainBroker(t, d)
		const topic, group = "deleterecords-ledger", "deleterecords-settle"
		createTopic(t, c, topic, 1, nil)
		c.ProduceTo(t, topic, 0, 20)
		c.Commit(t, group, topic, 0, 5)
		c.DeleteRecords(t, topic, 0, 12)
		if start, end := offsets(t, c, topic, 0); start != 12 || end != 20 {
			t.Fatalf("Apache Kafka %s: log start %d, end %d after DeleteRecords before 12", d.Version, start, end)
		}
		obs := observe(t, observer(t), conn(c), kafka.Target{Group: group, Topics: []string{topic}})
		requireNoFailures(t, obs)
		if p := partitionObs(t, obs, topic, 0); p.LogStart != 12 || p.LogEnd != 20 || p.Committed != 5 {
			t.Fatalf("observed %+v, want 12, 20, committed 5", p)
		}
		if v := violation(t, evaluate(obs, group, topic, time.Hour), proof.ReasonCommittedOffsetExpired, topic, 0); v.ExpiredRecords != 7 {
			t.Errorf("%d records expired, want 7", v.ExpiredRecords)
		}
	})
}

// compactTopic makes a topic the cleaner works on in seconds.
func compactTopic(policy, deleteRetention string) map[string]string {
	return map[string]string{
		"cleanup.policy": policy, "segment.ms": "1000", "min.cleanable.dirty.ratio": "0.0",
		"min.compaction.lag.ms": "0", "delete.retention.ms": deleteRetention,
	}
}

// Compaction removes records but never moves the log start (the cleaned
// segment keeps its base offset): Kafka answers EARLIEST 0 on a compacted
// topic whose first records are gone, so a group without a committed
// offset there is not proven (kfake moves the log start instead).
func TestCompactionKeepsLogStart(t *testing.T) {
	t.Parallel()
	eachLine(t, func(t *testing.T, d apachekafka.Dist) {
		_, c := plainBroker(t, d)
		const topic, group = "compacted-accounts", "compacted-new-reader"
		createTopic(t, c, topic, 1, compactTopic("compact", "86400000"))
		c.ProduceRecords(t, stamped(topic, 5, time.Now(), "acct-")...) // acct-0..4 = r0..r4
		c.ProduceRecords(t, stamped(topic, 5, time.Now(), "acct-")...) // the same keys again
		waitFor(t, 90*time.Second, "the cleaner compacts the first values away", func() bool {
			time.Sleep(time.Second)
			tick(t, c, topic) // roll: the cleaner never touches the active segment
			for _, r := range readAll(t, c, topic, 0) {
				if r.Offset == 0 {
					return false
				}
			}
			return true
		})
		start, end := offsets(t, c, topic, 0)
		if start != 0 {
			t.Fatalf("Apache Kafka %s moved the log start of a compacted topic to %d", d.Version, start)
		}
		obs := observe(t, observer(t), conn(c), kafka.Target{Group: group, Topics: []string{topic}})
		requireNoFailures(t, obs)
		if p := partitionObs(t, obs, topic, 0); p.LogStart != 0 || p.LogEnd < end || p.Committed != proof.NoOffset {
			t.Fatalf("observed %+v, want log start 0, end ≥ %d, no committed offset", p, end)
		}
		res := evaluate(obs, group, topic, time.Hour)
		if res.Verdict != proof.Violated || !hasViolation(res, proof.ReasonNoCommittedOffset) {
			t.Errorf("verdict %s %s; want NoCommittedOffset: log start 0 proves nothing on a compacted topic", res.Verdict, describeViolations(res))
		}
	})
}

// The cleaner keeps a tombstone for delete.retention.ms after the cleaning
// that first saw it, then drops it with the value it deleted: a consumer
// down longer never learns of the delete. compact,delete applies time
// retention as well. The proof names both.
func TestTombstonesDroppedAfterDeleteRetention(t *testing.T) {
	t.Parallel()
	eachLine(t, func(t *testing.T, d apachekafka.Dist) {
		_, c := plainBroker(t, d)
		for _, tc := range []struct{ topic, policy string }{
			{"tombstones-compact", "compact"},
			{"tombstones-compact-delete", "compact,delete"},
		} {
			cfg := compactTopic(tc.policy, "1000")
			if tc.policy == "compact,delete" {
				cfg["retention.ms"] = "600000"
			}
			createTopic(t, c, tc.topic, 1, cfg)
			c.ProduceRecords(t, &kgo.Record{Topic: tc.topic, Key: []byte("acct-1"), Value: []byte("open")},
				&kgo.Record{Topic: tc.topic, Key: []byte("acct-1")}) // the tombstone
			c.Commit(t, "tombstones-ledger", tc.topic, 0, 0)
		}
		for _, topic := range []string{"tombstones-compact", "tombstones-compact-delete"} {
			waitFor(t, 120*time.Second, topic+": the cleaner drops the tombstone", func() bool {
				time.Sleep(time.Second)
				tick(t, c, topic)
				for _, r := range readAll(t, c, topic, 0) {
					if string(r.Key) == "acct-1" {
						return false
					}
				}
				return true
			})
			if start, _ := offsets(t, c, topic, 0); start != 0 {
				t.Errorf("%s: log start %d after compaction, want 0", topic, start)
			}
			obs := observe(t, observer(t), conn(c), kafka.Target{Group: "tombstones-ledger", Topics: []string{topic}})
			requireNoFailures(t, obs)
			if to := topicObs(t, obs, topic); !is(to.DeleteRetentionMs, "1000") {
				t.Errorf("%s: delete.retention.ms read %+v", topic, to.DeleteRetentionMs)
			}
			res := evaluate(obs, "tombstones-ledger", topic, time.Hour)
			violation(t, res, proof.ReasonTombstoneRetentionShorterThanWindow, topic, -1)
			if topic == "tombstones-compact-delete" {
				violation(t, res, proof.ReasonRetentionShorterThanWindow, topic, -1)
			}
		}

		// compact,delete: time retention deletes segments of a compacting
		// topic too.
		const both = "tombstones-compact-delete-time"
		cfg := compactTopic("compact,delete", "86400000")
		cfg["retention.ms"] = "3000"
		createTopic(t, c, both, 1, cfg)
		c.ProduceRecords(t, stamped(both, 5, time.Now(), "k")...)
		time.Sleep(1500 * time.Millisecond)
		tick(t, c, both) // rolls, once: the cleaner merges the segments it cleans, and a merged
		// segment is as young as its newest record, so appending on would keep it
		waitFor(t, 90*time.Second, both+": time retention moves the log start", func() bool {
			start, _ := offsets(t, c, both, 0)
			return start >= 5
		})
	})
}

// An empty cleanup.policy is neither delete nor compact: the records stay
// while a delete topic with the same retention.ms loses them, and the
// proof calls it infinite retention.
func TestEmptyCleanupPolicyKeepsRecords(t *testing.T) {
	t.Parallel()
	eachLine(t, func(t *testing.T, d apachekafka.Dist) {
		_, c := plainBroker(t, d)
		const kept, control, group = "emptypolicy-kept", "emptypolicy-control", "emptypolicy-reader"
		createTopic(t, c, kept, 1, map[string]string{"cleanup.policy": "", "retention.ms": "1000", "segment.ms": "1000"})
		createTopic(t, c, control, 1, map[string]string{"cleanup.policy": "delete", "retention.ms": "1000", "segment.ms": "1000"})
		for _, topic := range []string{kept, control} {
			c.ProduceTo(t, topic, 0, 5)
		}
		c.Commit(t, group, kept, 0, 2)
		time.Sleep(1500 * time.Millisecond)
		tick(t, c, kept)
		tick(t, c, control)
		// Two deletions on the control topic: at least one whole retention
		// pass over every log ran after the kept topic's first segment
		// expired.
		waitFor(t, 90*time.Second, "retention deletes the control topic's first segment", func() bool {
			start, _ := offsets(t, c, control, 0)
			return start >= 5
		})
		time.Sleep(1500 * time.Millisecond)
		tick(t, c, control)
		waitFor(t, 90*time.Second, "retention deletes the control topic's second segment", func() bool {
			start, _ := offsets(t, c, control, 0)
			return start >= 6
		})
		if start, _ := offsets(t, c, kept, 0); start != 0 {
			t.Fatalf("Apache Kafka %s deleted records of a topic with an empty cleanup.policy: log start %d", d.Version, start)
		}
		obs := observe(t, observer(t), conn(c), kafka.Target{Group: group, Topics: []string{kept}})
		requireNoFailures(t, obs)
		if got := topicObs(t, obs, kept).CleanupPolicy; !got.Present || got.Null || got.Value != "" {
			t.Errorf("cleanup.policy read %+v, want present and empty", got)
		}
		res := evaluate(obs, group, kept, time.Hour)
		violation(t, res, proof.ReasonInfiniteRetentionNotAllowed, kept, -1)
		if hasViolation(res, proof.ReasonRetentionShorterThanWindow) {
			t.Errorf("retention.ms 1000 judged on a topic that deletes nothing: %s", describeViolations(res))
		}
	})
}

func hasWarning(res proof.Result, typ string) bool {
	for _, w := range res.Warnings {
		if w.Type == typ {
			return true
		}
	}
	return false
}

// produceErr produces and returns the broker's answer.
func produceErr(t *testing.T, c *kafkatest.Cluster, recs ...*kgo.Record) error {
	t.Helper()
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(0))
	ctx, cancel := contextFor(30 * time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, recs...).FirstErr()
}
