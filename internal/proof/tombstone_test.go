package proof

import (
	"strings"
	"testing"
	"time"
)

// compacted is the seeds' topic made compact-only, keeping tombstones 14
// days (delete.retention.ms), longer than the 10-day window: the check on
// delete.retention.ms alone holds. stampedBy is its message.timestamp.type.
func compacted(name, stampedBy string, partitions ...PartitionObservation) TopicObservation {
	t := topic(name, partitions...)
	t.CleanupPolicy, t.DeleteRetentionMs, t.TimestampType = cfg("compact"), millis(14*day), cfg(stampedBy)
	return t
}

// Issue 33 item 2, seed 000's compacted variant: a fan-out consumer of a
// compacted topic (the outbox's current state per key) lags behind a
// tombstone. The cleaner drops a tombstone delete.retention.ms after the
// cleaning that first saw it, which follows its write, and it was written
// no earlier than the record at the committed offset: the earliest it can
// go is timestamp(record at committed) − skew + delete.retention.ms. Before
// the fix the proof checked delete.retention.ms ≥ window only: Proven, and
// the consumer, down for its window, missed the delete and kept the key.
func TestTombstoneHeadroom(t *testing.T) {
	cases := []struct {
		name  string
		topic TopicObservation
		// wantHeadroom is the partition's tombstone headroom; -1: none.
		wantHeadroom time.Duration
		// wantReason is the one violation's reason; "" means Proven.
		wantReason  string
		wantMessage string // substring of the violation's message
		wantWarning string // the recoveryHeadroom warning's reason; "" none
	}{
		{
			// It has read every tombstone written so far; later ones live
			// delete.retention.ms (14 days) from their write.
			name:         "caught up: no tombstone headroom needed, proven",
			topic:        compacted("outbox-state", "LogAppendTime", part(0, 0, 100, 100)),
			wantHeadroom: -1,
		},
		{
			// Written 2 days ago by the broker's clock: 12 days left ≥ 10.
			name:         "lagging, LogAppendTime stamp + delete.retention.ms past now + window: proven",
			topic:        compacted("outbox-state", "LogAppendTime", withTimestamp(part(0, 0, 100, 40), now.Add(-2*day))),
			wantHeadroom: 12 * day,
		},
		{
			// Seed 000's compacted variant: 5 days behind, 9 days left
			// before a tombstone after offset 40 may go, under the 10-day
			// window.
			name:         "seed000 compacted: lagging 5 days behind a tombstone, 9 days left: risk",
			topic:        compacted("outbox-state", "LogAppendTime", withTimestamp(part(0, 0, 100, 40), now.Add(-5*day))),
			wantHeadroom: 9 * day,
			wantReason:   ReasonTombstoneHeadroomShorterThanWindow,
			wantMessage: "outbox-state[0]: the log cleaner may drop a tombstone at or after committed offset 40 in 216h (9d), " +
				"sooner than recoveryWindow 240h (10d)",
			wantWarning: WarningReasonTombstoneShorterThanWindow,
		},
		{
			// CreateTime: the producer may stamp an hour ahead of the
			// broker (message.timestamp.after.max.ms 3600000, 4.x's
			// default): the record was written up to an hour before its
			// stamp, and the tombstones after it too. LogAppendTime would
			// leave 10 days 30 minutes; the hour makes it 9 days 23.5 h.
			name:         "lagging, CreateTime: the producer's hour ahead counts against it: risk",
			topic:        compacted("outbox-state", "CreateTime", withTimestamp(part(0, 0, 100, 40), now.Add(-4*day+30*time.Minute))),
			wantHeadroom: 10*day - 30*time.Minute,
			wantReason:   ReasonTombstoneHeadroomShorterThanWindow,
			wantWarning:  WarningReasonTombstoneShorterThanWindow,
		},
		{
			// Written 15 days ago: a tombstone after it may be gone already.
			name:         "lagging past the earliest drop: may already be dropped, risk",
			topic:        compacted("outbox-state", "LogAppendTime", withTimestamp(part(0, 0, 100, 40), now.Add(-15*day))),
			wantHeadroom: -day,
			wantReason:   ReasonTombstoneHeadroomShorterThanWindow,
			wantMessage:  "outbox-state[0]: the log cleaner may already have dropped a tombstone at or after committed offset 40 (the earliest it could was 24h (1d) ago)",
			wantWarning:  WarningReasonTombstoneMayBeDropped,
		},
		{
			// Not dated and not read (Read denied on the topic, say): a
			// tombstone after offset 40 may have been written, and
			// cleaned, long ago and go any moment. Before, skipped: the
			// partition was left Proven (fail open); now Unknown.
			name:         "lagging, timestamp unknown, nothing read: unknown",
			topic:        compacted("outbox-state", "LogAppendTime", part(0, 0, 100, 40)),
			wantHeadroom: -1,
			wantReason:   ReasonTombstonesUnread,
			wantMessage: "outbox-state[0]: the group is 60 records behind committed offset 40 on a compacting topic, and the guard neither read " +
				"the records after it to the high watermark nor dated them (the record there was not dated)",
		},
		{
			// Kafka 3.x's default: message.timestamp.after.max.ms Long.MAX.
			// The stamp does not bound the write (clockSkew): only the
			// tombstones read would; none were. Unknown, with the setting
			// that changes it.
			name: "lagging, CreateTime with stamps unbounded ahead, nothing read: unknown",
			topic: func() TopicObservation {
				t := compacted("outbox-state", "CreateTime", withTimestamp(part(0, 0, 100, 40), now.Add(-5*day)))
				t.TimestampAfterMaxMs = cfg("9223372036854775807")
				return t
			}(),
			wantHeadroom: -1,
			wantReason:   ReasonTombstonesUnread,
			wantMessage:  "(message.timestamp.type CreateTime with message.timestamp.after.max.ms unbounded",
		},
		{
			// The way out the message names: the same topic with the
			// setting bounded (an hour): the stamp dates the write, 14
			// days − 3 days − 1 h left, past the 10-day window.
			name: "lagging, CreateTime, message.timestamp.after.max.ms bounded: dated, proven",
			topic: func() TopicObservation {
				t := compacted("outbox-state", "CreateTime", withTimestamp(part(0, 0, 100, 40), now.Add(-3*day)))
				t.TimestampAfterMaxMs = cfg("3600000")
				return t
			}(),
			wantHeadroom: 11*day - time.Hour,
		},
		{
			// A delete-only topic has no tombstone to drop: its record
			// headroom decides (30 − 5 = 25 days), delete.retention.ms (a
			// day here, shorter than the window) is not read.
			name: "delete-only topic unaffected",
			topic: func() TopicObservation {
				t := topic("outbox-state", withTimestamp(part(0, 0, 100, 40), now.Add(-5*day)))
				t.TimestampType = cfg("LogAppendTime")
				return t
			}(),
			wantHeadroom: -1,
		},
		{
			// compact,delete: both clocks run; the records' 25 days are
			// enough, the tombstones' 9 days are not.
			name: "compact,delete: the tombstone headroom fails where the record headroom holds",
			topic: func() TopicObservation {
				t := compacted("outbox-state", "LogAppendTime", withTimestamp(part(0, 0, 100, 40), now.Add(-5*day)))
				t.CleanupPolicy = cfg("compact,delete")
				return t
			}(),
			wantHeadroom: 9 * day,
			wantReason:   ReasonTombstoneHeadroomShorterThanWindow,
			wantWarning:  WarningReasonTombstoneShorterThanWindow,
		},
		{
			// delete.retention.ms itself is under the window: that
			// violation says it for every partition.
			name: "delete.retention.ms shorter than the window: its violation alone",
			topic: func() TopicObservation {
				t := compacted("outbox-state", "LogAppendTime", withTimestamp(part(0, 0, 100, 40), now.Add(-5*day)))
				t.DeleteRetentionMs = millis(day)
				return t
			}(),
			wantHeadroom: -4 * day,
			wantReason:   ReasonTombstoneRetentionShorterThanWindow,
			wantWarning:  WarningReasonTombstoneMayBeDropped,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Evaluate(observation(c.topic), policy("outbox-state"), now)
			pr := r.Partitions[0]
			if (c.wantHeadroom == -1) == pr.HasTombstoneHeadroom || (pr.HasTombstoneHeadroom && pr.TombstoneHeadroom != c.wantHeadroom) {
				t.Errorf("tombstone headroom = %v (has %v), want %v", pr.TombstoneHeadroom, pr.HasTombstoneHeadroom, c.wantHeadroom)
			}
			if c.wantReason == "" {
				if r.Verdict != Proven {
					t.Fatalf("verdict %s, want Proven; violations %+v", r.Verdict, r.Violations)
				}
				return
			}
			if c.wantReason == ReasonTombstonesUnread {
				if r.Verdict != Unknown || len(r.Violations) != 1 || r.Violations[0].Reason != c.wantReason ||
					r.Violations[0].Clause != ClauseRetentionCoversWindow || !pr.TombstonesUnread ||
					!strings.Contains(r.Violations[0].Message, c.wantMessage) {
					t.Fatalf("verdict %s, violations %+v; want Unknown by %s alone, saying %q", r.Verdict, r.Violations, c.wantReason, c.wantMessage)
				}
				return
			}
			if r.Verdict != Violated || len(r.Violations) != 1 || r.Violations[0].Reason != c.wantReason {
				t.Fatalf("verdict %s, violations %+v; want Violated by %s alone", r.Verdict, r.Violations, c.wantReason)
			}
			v := r.Violations[0]
			if c.wantReason == ReasonTombstoneHeadroomShorterThanWindow {
				// The numbers travel as fields: when, at the earliest, and
				// the gap's facts for the proofID (topic and partition).
				if !v.ExpiresAt.Equal(now.Add(c.wantHeadroom)) || v.Clause != ClauseRetentionCoversWindow || v.Partition != 0 ||
					v.Committed != NoOffset || v.LogStart != -1 {
					t.Errorf("violation %+v: want expiresAt %v, clause %s, topic and partition only", v, now.Add(c.wantHeadroom), ClauseRetentionCoversWindow)
				}
				if ready := conditionOf(t, r, ClauseReady); ready.Reason != c.wantReason || !IsRisk(ready.Reason) {
					t.Errorf("Ready = %+v, want the risk %s", ready, c.wantReason)
				}
			}
			if !strings.Contains(v.Message, c.wantMessage) {
				t.Errorf("message %q, want it to contain %q", v.Message, c.wantMessage)
			}
			// The recovery headroom (status, metric, alert) is the smaller
			// of the record's and the tombstone's.
			if !r.HasRecoveryHeadroom || r.RecoveryHeadroom != c.wantHeadroom {
				t.Errorf("recoveryHeadroom %v (has %v), want the tombstone's %v", r.RecoveryHeadroom, r.HasRecoveryHeadroom, c.wantHeadroom)
			}
			w := findWarning(r, WarningRecoveryHeadroom)
			if w == nil || w.Reason != c.wantWarning || w.Duration != c.wantHeadroom || *w.Offset != 40 {
				t.Errorf("warning %+v, want %s in %v at offset 40", w, c.wantWarning, c.wantHeadroom)
			}
		})
	}
}

// With resumeFrom Cursor the consumer resumes from its business cursor:
// the tombstones it has not read are those at or after the cursor, dated
// by the record there.
func TestTombstoneHeadroomFromCursor(t *testing.T) {
	o := observation(compacted("outbox-state", "LogAppendTime", part(0, 0, 100, 90)))
	o.Topics[0].Partitions[0].CommittedTimestamp = now.Add(-time.Hour)
	o.Topics[0].Partitions[0].CursorTimestamp = now.Add(-5 * day)
	r := Evaluate(withCursor(o, map[int64]int64{0: 40}), cursorPolicy(ResumeFromCursor, "outbox-state"), now)
	pr := r.Partitions[0]
	if !pr.HasTombstoneHeadroom || pr.TombstoneHeadroom != 9*day {
		t.Errorf("tombstone headroom %v (has %v), want 9 days from the cursor's record", pr.TombstoneHeadroom, pr.HasTombstoneHeadroom)
	}
	if r.Verdict != Violated || len(r.Violations) != 1 || r.Violations[0].Reason != ReasonTombstoneHeadroomShorterThanWindow ||
		!strings.Contains(r.Violations[0].Message, "at or after business cursor 40") {
		t.Errorf("verdict %s, violations %+v; want %s at the cursor", r.Verdict, r.Violations, ReasonTombstoneHeadroomShorterThanWindow)
	}
}

// withScan gives a partition what the observer decoded at its committed
// offset (kafka/timestamps.go): whole batches to through, reaching the
// high watermark or not, read a minute before now with the default
// cleaning allowance.
func withScan(p PartitionObservation, through int64, reachesEnd bool, next time.Time, found ...TombstoneSeen) PartitionObservation {
	p.Tombstones = &TombstoneScan{From: p.Committed, Through: through, ReachesEnd: reachesEnd, Found: found,
		NextTimestamp: next, FetchedAt: now.Add(-time.Minute), CleaningAllowance: DefaultCleaningAllowance}
	return p
}

// Issue 32 item 5, seed 000's compacted variant again (a fan-out consumer
// 5 days behind, delete.retention.ms 14 days, a 10-day window): the coarse
// bound (9 days) fails; what the observer read of the tombstones after the
// committed offset decides. The oracle found the coarse bound's alarms
// false where the cleaner had not cleaned the tombstones at all.
func TestTombstoneHeadroomFromScan(t *testing.T) {
	lagging := withTimestamp(part(0, 0, 100, 40), now.Add(-5*day))
	cases := []struct {
		name         string
		topic        TopicObservation
		wantHeadroom time.Duration // -1: none
		wantReason   string        // "" means Proven
		wantMessage  string
	}{
		{
			name:         "read to log end, no tombstone: nothing to miss, proven",
			topic:        compacted("outbox-state", "LogAppendTime", withScan(lagging, 100, true, time.Time{})),
			wantHeadroom: -1,
		},
		{
			// Never cleaned when read a minute ago: its horizon will be
			// the cleaning's start + 14 days, the cleaning starting no
			// earlier than the read less the hour allowed.
			name: "an uncleaned tombstone: read − allowance + delete.retention.ms, proven",
			topic: compacted("outbox-state", "LogAppendTime", withScan(lagging, 100, true, time.Time{},
				TombstoneSeen{Offset: 60, Timestamp: now.Add(-4 * day)})),
			wantHeadroom: 14*day - time.Hour - time.Minute,
		},
		{
			// A cleaning kept it and stamped its horizon 3 days from now:
			// the leader's clock may run a second ahead.
			name: "a stamped tombstone whose horizon falls in the window: the violation, with the tombstone",
			topic: compacted("outbox-state", "LogAppendTime", withScan(lagging, 100, true, time.Time{},
				TombstoneSeen{Offset: 60, Timestamp: now.Add(-4 * day), DeleteHorizon: now.Add(3 * day)})),
			wantHeadroom: 3*day - CoordinatorClockAllowance,
			wantReason:   ReasonTombstoneHeadroomShorterThanWindow,
			wantMessage:  "the log cleaner may drop the tombstone at offset 60 (after committed offset 40) in 71h59m59s",
		},
		{
			// Not read to the end: the rest is dated by the batch cut
			// there, a day old: 13 days left.
			name:         "not read to log end, the rest dated by the cut batch: proven",
			topic:        compacted("outbox-state", "LogAppendTime", withScan(lagging, 70, false, now.Add(-day))),
			wantHeadroom: 13 * day,
		},
		{
			name:         "not read to log end, the rest undated: the coarse bound, risk",
			topic:        compacted("outbox-state", "LogAppendTime", withScan(lagging, 70, false, time.Time{})),
			wantHeadroom: 9 * day,
			wantReason:   ReasonTombstoneHeadroomShorterThanWindow,
			wantMessage:  "a tombstone at or after committed offset 40 in 216h (9d)",
		},
		{
			// A scan for another offset (the group committed since) is
			// not this position's.
			name: "a scan from another offset is ignored: the coarse bound",
			topic: func() TopicObservation {
				p := withScan(lagging, 100, true, time.Time{})
				p.Tombstones.From = 30
				return compacted("outbox-state", "LogAppendTime", p)
			}(),
			wantHeadroom: 9 * day,
			wantReason:   ReasonTombstoneHeadroomShorterThanWindow,
		},
		{
			// Kafka 3.x's default leaves the stamps unbounded: no coarse
			// bound, but a stamped horizon found is still the gap.
			name: "CreateTime unbounded, a stamped horizon in the window: the violation",
			topic: func() TopicObservation {
				t := compacted("outbox-state", "CreateTime", withScan(lagging, 100, true, time.Time{},
					TombstoneSeen{Offset: 60, Timestamp: now.Add(-4 * day), DeleteHorizon: now.Add(3 * day)}))
				t.TimestampAfterMaxMs = cfg("9223372036854775807")
				return t
			}(),
			wantHeadroom: 3*day - CoordinatorClockAllowance,
			wantReason:   ReasonTombstoneHeadroomShorterThanWindow,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Evaluate(observation(c.topic), policy("outbox-state"), now)
			pr := r.Partitions[0]
			if (c.wantHeadroom == -1) == pr.HasTombstoneHeadroom || (pr.HasTombstoneHeadroom && pr.TombstoneHeadroom != c.wantHeadroom) {
				t.Errorf("tombstone headroom = %v (has %v), want %v", pr.TombstoneHeadroom, pr.HasTombstoneHeadroom, c.wantHeadroom)
			}
			if c.wantReason == "" {
				if r.Verdict != Proven {
					t.Fatalf("verdict %s, want Proven; violations %+v", r.Verdict, r.Violations)
				}
				return
			}
			if r.Verdict != Violated || len(r.Violations) != 1 || r.Violations[0].Reason != c.wantReason {
				t.Fatalf("verdict %s, violations %+v; want Violated by %s alone", r.Verdict, r.Violations, c.wantReason)
			}
			if v := r.Violations[0]; !v.ExpiresAt.Equal(now.Add(c.wantHeadroom)) || !strings.Contains(v.Message, c.wantMessage) {
				t.Errorf("violation expiresAt %v, message %q; want %v and %q", v.ExpiresAt, v.Message, now.Add(c.wantHeadroom), c.wantMessage)
			}
		})
	}
}
