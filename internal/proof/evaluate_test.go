package proof

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestEvaluate(t *testing.T) {
	type tc struct {
		name   string
		obs    Observation
		policy Policy
		want   want
		// also checks what the table does not (numbers, messages).
		also func(t *testing.T, r Result)
	}
	cases := []tc{
		// Seed 002: the consumer crashed after its DB commit and before its
		// offset commit, so on restart it replays offset n idempotently. Its
		// committed offset still lies inside [logStart, logEnd]: no alarm.
		{
			name:   "seed002 consumer replaying after crash inside [logStart,logEnd] is proven",
			obs:    observation(topic("payments", part(0, 100, 5000, 4999), part(1, 0, 800, 800))),
			policy: policy("payments"),
			want:   proven(),
			also: func(t *testing.T, r Result) {
				if r.Summary != (PartitionSummary{Total: 2, InRange: 2}) {
					t.Errorf("summary = %+v", r.Summary)
				}
				if r.ExpiredRecords != 0 || len(r.Warnings) != 0 {
					t.Errorf("expiredRecords %d, warnings %+v: want none", r.ExpiredRecords, r.Warnings)
				}
				if r.Partitions[0].Lag != 1 || r.Partitions[1].Lag != 0 {
					t.Errorf("lags = %d, %d; want 1, 0", r.Partitions[0].Lag, r.Partitions[1].Lag)
				}
			},
		},
		// Seed 002 edge: replay sits exactly at log start (the oldest
		// retained record) — still inside the range.
		{
			name:   "seed002 replay from exactly log start is proven",
			obs:    observation(topic("payments", part(0, 4200, 5000, 4200))),
			policy: policy("payments"),
			want:   proven(),
		},
		// Seed 000: the fan-out consumer was down past retention.ms, its
		// committed offset fell below the log start; earliest would skip.
		{
			name:   "seed000 committed offset below log start after fan-out down past retention",
			obs:    observation(topic("outbox", part(0, 0, 900, 900), part(3, 5400, 9000, 1200))),
			policy: policy("outbox"),
			want: want{
				verdict: Violated,
				conditions: map[string]condWant{
					ClauseOffsetsInRange: {ConditionFalse, ReasonCommittedOffsetExpired},
					ClauseReady:          {ConditionFalse, ReasonCommittedOffsetExpired},
				},
				violations: []violationWant{{ClauseOffsetsInRange, ReasonCommittedOffsetExpired, "outbox", 3}},
			},
			also: func(t *testing.T, r Result) {
				v := r.Violations[0]
				wantMsg := "outbox[3]: committed offset 1200 is below log start 5400: 4200 records expired before this group read them"
				if v.Message != wantMsg {
					t.Errorf("message = %q\nwant      %q", v.Message, wantMsg)
				}
				if v.Committed != 1200 || v.LogStart != 5400 || v.LogEnd != 9000 || v.ExpiredRecords != 4200 {
					t.Errorf("violation numbers = %+v", v)
				}
				if r.ExpiredRecords != 4200 || r.Summary != (PartitionSummary{Total: 2, InRange: 1, Expired: 1}) {
					t.Errorf("expiredRecords %d, summary %+v", r.ExpiredRecords, r.Summary)
				}
				p := r.Partitions[1]
				if p.Verdict != Violated || p.Reason != ReasonCommittedOffsetExpired || p.ExpiredRecords != 4200 || p.Lag != 3600 {
					t.Errorf("partition result = %+v (want lag logEnd-logStart = 3600)", p)
				}
				if c := conditionOf(t, r, ClauseOffsetsInRange); !strings.Contains(c.Message, "1 of 2 partitions out of range") ||
					!strings.Contains(c.Message, "4200 records expired") {
					t.Errorf("OffsetsInRange message = %q", c.Message)
				}
			},
		},
		// Seed 000: with log start > 0 a missing committed offset cannot
		// show nothing expired.
		{
			name:   "seed000 missing committed offset with log start above zero",
			obs:    observation(topic("outbox", part(0, 5400, 9000, NoOffset))),
			policy: policy("outbox"),
			want: want{
				verdict:    Violated,
				conditions: map[string]condWant{ClauseOffsetsInRange: {ConditionFalse, ReasonNoCommittedOffset}},
				violations: []violationWant{{ClauseOffsetsInRange, ReasonNoCommittedOffset, "outbox", 0}},
			},
			also: func(t *testing.T, r Result) {
				if r.Summary.Missing != 1 || r.Partitions[0].Lag != 3600 || r.Partitions[0].ExpiredRecords != 0 {
					t.Errorf("summary %+v, partition %+v", r.Summary, r.Partitions[0])
				}
				if !strings.Contains(r.Violations[0].Message, "log start is 5400") {
					t.Errorf("message = %q", r.Violations[0].Message)
				}
			},
		},
		// Seed 000: a brand-new group on a fresh topic (low == high == 0,
		// or low == 0) bootstraps from offset 0 without losing anything.
		{
			name:   "seed000 fresh topic with log start 0 and no committed offset bootstraps",
			obs:    observation(topic("outbox", part(0, 0, 0, NoOffset), part(1, 0, 12, NoOffset))),
			policy: policy("outbox"),
			want:   proven(),
			also: func(t *testing.T, r Result) {
				if r.Summary.InRange != 2 || r.Partitions[1].Lag != 12 || r.HasRecoveryHeadroom {
					t.Errorf("summary %+v, partitions %+v, headroom %v", r.Summary, r.Partitions, r.HasRecoveryHeadroom)
				}
			},
		},
		// Seed 000: retention.ms must be present, parse, not be -1, and
		// cover the window.
		{
			name: "seed000 retention.ms absent is unknown",
			obs: func() Observation {
				tp := topic("outbox", part(0, 0, 10, 10))
				tp.RetentionMs = ConfigValue{}
				return observation(tp)
			}(),
			policy: policy("outbox"),
			want: want{
				verdict: Unknown,
				conditions: map[string]condWant{
					ClauseRetentionCoversWindow: {ConditionUnknown, ReasonRetentionUnreadable},
					ClauseReady:                 {ConditionUnknown, ReasonRetentionUnreadable},
				},
				violations: []violationWant{{ClauseRetentionCoversWindow, ReasonRetentionUnreadable, "outbox", -1}},
			},
		},
		{
			name: "seed000 retention.ms null is unknown",
			obs: func() Observation {
				tp := topic("outbox", part(0, 0, 10, 10))
				tp.RetentionMs = ConfigValue{Present: true, Null: true}
				return observation(tp)
			}(),
			policy: policy("outbox"),
			want: want{
				verdict:    Unknown,
				conditions: map[string]condWant{ClauseRetentionCoversWindow: {ConditionUnknown, ReasonRetentionUnreadable}},
				violations: []violationWant{{ClauseRetentionCoversWindow, ReasonRetentionUnreadable, "outbox", -1}},
			},
		},
		{
			name: "seed000 retention.ms unparseable is unknown",
			obs: func() Observation {
				tp := topic("outbox", part(0, 0, 10, 10))
				tp.RetentionMs = cfg("7d")
				return observation(tp)
			}(),
			policy: policy("outbox"),
			want: want{
				verdict:    Unknown,
				conditions: map[string]condWant{ClauseRetentionCoversWindow: {ConditionUnknown, ReasonRetentionUnreadable}},
				violations: []violationWant{{ClauseRetentionCoversWindow, ReasonRetentionUnreadable, "outbox", -1}},
			},
			also: func(t *testing.T, r Result) {
				if want := `outbox: retention.ms "7d" is not an integer`; r.Violations[0].Message != want {
					t.Errorf("message = %q, want %q", r.Violations[0].Message, want)
				}
			},
		},
		{
			name: "seed000 retention.ms -1 is not allowed by default",
			obs: func() Observation {
				tp := topic("outbox", part(0, 0, 10, 10))
				tp.RetentionMs = cfg("-1")
				return observation(tp)
			}(),
			policy: policy("outbox"),
			want: want{
				verdict:    Violated,
				conditions: map[string]condWant{ClauseRetentionCoversWindow: {ConditionFalse, ReasonInfiniteRetentionNotAllowed}},
				violations: []violationWant{{ClauseRetentionCoversWindow, ReasonInfiniteRetentionNotAllowed, "outbox", -1}},
			},
		},
		{
			name: "seed000 retention.ms -1 passes with allowInfiniteRetention",
			obs: func() Observation {
				tp := topic("outbox", part(0, 0, 10, 10))
				tp.RetentionMs = cfg("-1")
				return observation(tp)
			}(),
			policy: func() Policy { p := policy("outbox"); p.AllowInfiniteRetention = true; return p }(),
			want:   proven(),
			also: func(t *testing.T, r Result) {
				if r.HasRecoveryHeadroom || r.Partitions[0].HasHeadroom {
					t.Errorf("infinite retention must have no headroom: %+v", r.Partitions[0])
				}
			},
		},
		{
			name: "seed000 retention.ms 72h shorter than 240h window",
			obs: func() Observation {
				tp := topic("outbox", part(0, 0, 10, 10))
				tp.RetentionMs = millis(72 * time.Hour)
				return observation(tp)
			}(),
			policy: policy("outbox"),
			want: want{
				verdict: Violated,
				conditions: map[string]condWant{
					ClauseRetentionCoversWindow: {ConditionFalse, ReasonRetentionShorterThanWindow},
					ClauseReady:                 {ConditionFalse, ReasonRetentionShorterThanWindow},
				},
				violations: []violationWant{{ClauseRetentionCoversWindow, ReasonRetentionShorterThanWindow, "outbox", -1}},
			},
			also: func(t *testing.T, r Result) {
				if want := "outbox: retention.ms 259200000 (3d) is shorter than recoveryWindow 240h (10d)"; !strings.HasPrefix(r.Violations[0].Message, want) {
					t.Errorf("message = %q, want prefix %q", r.Violations[0].Message, want)
				}
			},
		},
		{
			name: "seed000 retention.ms exactly the window covers it",
			obs: func() Observation {
				tp := topic("outbox", part(0, 0, 10, 10))
				tp.RetentionMs = millis(window)
				return observation(tp)
			}(),
			policy: policy("outbox"),
			want:   proven(),
		},
		{
			name: "seed000 retention.ms one millisecond short of the window",
			obs: func() Observation {
				tp := topic("outbox", part(0, 0, 10, 10))
				tp.RetentionMs = millis(window - time.Millisecond)
				return observation(tp)
			}(),
			policy: policy("outbox"),
			want: want{
				verdict:    Violated,
				violations: []violationWant{{ClauseRetentionCoversWindow, ReasonRetentionShorterThanWindow, "outbox", -1}},
			},
		},
		// Seed 003: offsets.retention.minutes at its 7-day default against
		// a 10-day window: an empty batch group loses its offsets first.
		{
			name: "seed003 offsets.retention.minutes 7d shorter than 10d window",
			obs: func() Observation {
				o := observation(topic("settle-task", part(0, 0, 10, 10)))
				o.OffsetsRetentionMinutes = cfg("10080")
				return o
			}(),
			policy: policy("settle-task"),
			want: want{
				verdict:    Violated,
				conditions: map[string]condWant{ClauseGroupOffsetsRetained: {ConditionFalse, ReasonOffsetsRetentionShorterThanWindow}},
				violations: []violationWant{{ClauseGroupOffsetsRetained, ReasonOffsetsRetentionShorterThanWindow, "", -1}},
			},
			also: func(t *testing.T, r Result) {
				want := "offsets.retention.minutes 10080 (7d) is shorter than recoveryWindow 240h (10d): the group's committed offsets expire before the window ends"
				if r.Violations[0].Message != want {
					t.Errorf("message = %q\nwant      %q", r.Violations[0].Message, want)
				}
			},
		},
		{
			name: "seed003 offsets.retention.minutes raised to 30d covers the window",
			obs: func() Observation {
				o := observation(topic("settle-task", part(0, 0, 10, 10)))
				o.OffsetsRetentionMinutes = cfg("43200")
				return o
			}(),
			policy: policy("settle-task"),
			want:   proven(),
		},
		{
			name: "seed003 offsets.retention.minutes exactly the window covers it",
			obs: func() Observation {
				o := observation(topic("settle-task", part(0, 0, 10, 10)))
				o.OffsetsRetentionMinutes = cfg("14400")
				return o
			}(),
			policy: policy("settle-task"),
			want:   proven(),
		},
		{
			name: "seed003 offsets.retention.minutes one minute short of the window",
			obs: func() Observation {
				o := observation(topic("settle-task", part(0, 0, 10, 10)))
				o.OffsetsRetentionMinutes = cfg("14399")
				return o
			}(),
			policy: policy("settle-task"),
			want: want{
				verdict:    Violated,
				violations: []violationWant{{ClauseGroupOffsetsRetained, ReasonOffsetsRetentionShorterThanWindow, "", -1}},
			},
		},
		{
			name: "seed003 offsets.retention.minutes unreadable is unknown",
			obs: func() Observation {
				o := observation(topic("settle-task", part(0, 0, 10, 10)))
				o.OffsetsRetentionMinutes = ConfigValue{}
				return o
			}(),
			policy: policy("settle-task"),
			want: want{
				verdict:    Unknown,
				conditions: map[string]condWant{ClauseGroupOffsetsRetained: {ConditionUnknown, ReasonOffsetsRetentionUnreadable}},
				violations: []violationWant{{ClauseGroupOffsetsRetained, ReasonOffsetsRetentionUnreadable, "", -1}},
			},
		},
		{
			name: "seed003 offsets.retention.minutes 0 is not a broker value: unknown",
			obs: func() Observation {
				o := observation(topic("settle-task", part(0, 0, 10, 10)))
				o.OffsetsRetentionMinutes = cfg("0")
				return o
			}(),
			policy: policy("settle-task"),
			want: want{
				verdict:    Unknown,
				conditions: map[string]condWant{ClauseGroupOffsetsRetained: {ConditionUnknown, ReasonOffsetsRetentionUnreadable}},
				violations: []violationWant{{ClauseGroupOffsetsRetained, ReasonOffsetsRetentionUnreadable, "", -1}},
			},
		},
		// Seed 003: the batch group was down 8 days, its offsets expired
		// from __consumer_offsets; the topic (30-day retention) still has
		// the records, log start > 0, and the group has no committed offset.
		// latest would skip 4,654,259 tasks.
		{
			name: "seed003 batch group whose offsets expired has no committed offset with log start above zero",
			obs: func() Observation {
				o := observation(topic("settle-task",
					part(0, 1_000_000, 1_193_927, NoOffset),
					part(1, 1_000_000, 1_193_928, NoOffset),
				))
				o.OffsetsRetentionMinutes = cfg("10080")
				o.Group = GroupObservation{ID: "ledger-settle-consumer", State: GroupStateEmpty, Protocol: ProtocolClassic,
					ProtocolType: ProtocolTypeConsumer, EmptySince: now.Add(-8*day - 12*time.Hour)}
				return o
			}(),
			policy: policy("settle-task"),
			want: want{
				verdict: Violated,
				conditions: map[string]condWant{
					ClauseGroupOffsetsRetained: {ConditionFalse, ReasonOffsetsRetentionShorterThanWindow},
					ClauseOffsetsInRange:       {ConditionFalse, ReasonNoCommittedOffset},
					// Loss first: 2 partitions already lost their offsets;
					// the short offsets retention is the risk behind it.
					ClauseReady: {ConditionFalse, ReasonNoCommittedOffset},
				},
				violations: []violationWant{
					{ClauseGroupOffsetsRetained, ReasonOffsetsRetentionShorterThanWindow, "", -1},
					{ClauseOffsetsInRange, ReasonNoCommittedOffset, "settle-task", 0},
					{ClauseOffsetsInRange, ReasonNoCommittedOffset, "settle-task", 1},
				},
			},
			also: func(t *testing.T, r Result) {
				if r.Summary != (PartitionSummary{Total: 2, Missing: 2}) {
					t.Errorf("summary = %+v", r.Summary)
				}
				// Empty for 8.5 days with 7-day offsets retention: expired 1.5 days ago.
				if !r.HasGroupOffsetsExpireIn || r.GroupOffsetsExpireIn != -36*time.Hour {
					t.Errorf("groupOffsetsExpireIn = %v (has %v), want -36h", r.GroupOffsetsExpireIn, r.HasGroupOffsetsExpireIn)
				}
			},
		},
		// Compact-only topics do not delete by time.
		{
			name: "compact-only topic holds with reason CompactedTopic",
			obs: func() Observation {
				tp := topic("accounts", part(0, 0, 10, 10))
				tp.CleanupPolicy = cfg("compact")
				tp.RetentionMs = millis(time.Hour) // ignored: compaction does not delete by time
				tp.RetentionBytes = cfg("1024")
				tp.DeleteRetentionMs = millis(window) // tombstones kept for the whole window
				return observation(tp)
			}(),
			policy: policy("accounts"),
			want: func() want {
				w := proven()
				w.conditions[ClauseRetentionCoversWindow] = condWant{ConditionTrue, ReasonCompactedTopic}
				return w
			}(),
			also: func(t *testing.T, r Result) {
				if r.Partitions[0].HasHeadroom {
					t.Errorf("compact-only topic must have no headroom: %+v", r.Partitions[0])
				}
			},
		},
		{
			name: "compact,delete topic is held to retention.ms",
			obs: func() Observation {
				tp := topic("accounts", part(0, 0, 10, 10))
				tp.CleanupPolicy = cfg("compact, delete")
				tp.RetentionMs = millis(time.Hour)
				tp.DeleteRetentionMs = millis(window)
				return observation(tp)
			}(),
			policy: policy("accounts"),
			want: want{
				verdict:    Violated,
				violations: []violationWant{{ClauseRetentionCoversWindow, ReasonRetentionShorterThanWindow, "accounts", -1}},
			},
		},
		// A CDC or changelog topic: the cleaner drops tombstones after
		// delete.retention.ms (1 day by default), so a consumer down for
		// the 10-day window keeps deleted keys forever.
		{
			name: "compacting topic whose tombstones go before the window ends",
			obs: func() Observation {
				tp := topic("accounts-changelog", part(0, 0, 10, 10))
				tp.CleanupPolicy = cfg("compact")
				tp.DeleteRetentionMs = cfg("86400000")
				return observation(tp)
			}(),
			policy: policy("accounts-changelog"),
			want: want{
				verdict: Violated,
				conditions: map[string]condWant{
					ClauseRetentionCoversWindow: {ConditionFalse, ReasonTombstoneRetentionShorterThanWindow},
					ClauseReady:                 {ConditionFalse, ReasonTombstoneRetentionShorterThanWindow},
				},
				violations: []violationWant{{ClauseRetentionCoversWindow, ReasonTombstoneRetentionShorterThanWindow, "accounts-changelog", -1}},
			},
			also: func(t *testing.T, r Result) {
				want := "accounts-changelog: delete.retention.ms 86400000 (1d) is shorter than recoveryWindow 240h (10d)"
				if m := r.Violations[0].Message; !strings.HasPrefix(m, want) || !strings.Contains(m, "set delete.retention.ms to at least 864000000") {
					t.Errorf("message = %q\nwant prefix %q and the value to set", m, want)
				}
			},
		},
		{
			name: "compact,delete topic is held to delete.retention.ms as well",
			obs: func() Observation {
				tp := topic("accounts", part(0, 0, 10, 10))
				tp.CleanupPolicy = cfg("compact,delete")
				tp.DeleteRetentionMs = millis(window - time.Millisecond)
				return observation(tp)
			}(),
			policy: policy("accounts"),
			want: want{
				verdict:    Violated,
				violations: []violationWant{{ClauseRetentionCoversWindow, ReasonTombstoneRetentionShorterThanWindow, "accounts", -1}},
			},
		},
		{
			name: "compacting topic without delete.retention.ms in the answer is unknown",
			obs: func() Observation {
				tp := topic("accounts", part(0, 0, 10, 10))
				tp.CleanupPolicy = cfg("compact")
				tp.DeleteRetentionMs = ConfigValue{}
				return observation(tp)
			}(),
			policy: policy("accounts"),
			want: want{
				verdict:    Unknown,
				violations: []violationWant{{ClauseRetentionCoversWindow, ReasonRetentionUnreadable, "accounts", -1}},
			},
		},
		// Compaction removes records without moving log start 0: a group
		// without a committed offset proves nothing on a non-empty
		// compacting topic; an empty one is still a fresh start.
		{
			name: "missing committed offset on a non-empty compacting topic is not excused by log start 0",
			obs: func() Observation {
				tp := topic("accounts", part(0, 0, 10, NoOffset), part(1, 0, 0, NoOffset))
				tp.CleanupPolicy = cfg("compact")
				tp.DeleteRetentionMs = millis(window)
				return observation(tp)
			}(),
			policy: policy("accounts"),
			want: want{
				verdict:    Violated,
				violations: []violationWant{{ClauseOffsetsInRange, ReasonNoCommittedOffset, "accounts", 0}},
			},
			also: func(t *testing.T, r Result) {
				if m := r.Violations[0].Message; !strings.Contains(m, "compaction removes records without moving log start 0") {
					t.Errorf("message = %q", m)
				}
			},
		},
		// Kafka reads an empty cleanup.policy as neither delete nor
		// compact: nothing is ever deleted (documented from Kafka 4.2,
		// KAFKA-19112).
		{
			name: "empty cleanup.policy is infinite retention: refused unless allowed",
			obs: func() Observation {
				tp := topic("ledger", part(0, 0, 10, 10))
				tp.CleanupPolicy = cfg("")
				return observation(tp)
			}(),
			policy: policy("ledger"),
			want: want{
				verdict:    Violated,
				violations: []violationWant{{ClauseRetentionCoversWindow, ReasonInfiniteRetentionNotAllowed, "ledger", -1}},
			},
		},
		{
			name: "empty cleanup.policy passes with allowInfiniteRetention",
			obs: func() Observation {
				tp := topic("ledger", part(0, 0, 10, 10))
				tp.CleanupPolicy = cfg("")
				return observation(tp)
			}(),
			policy: func() Policy { p := policy("ledger"); p.AllowInfiniteRetention = true; return p }(),
			want:   proven(),
		},
		{
			name: "cleanup.policy unreadable is unknown, even with a short retention.ms",
			obs: func() Observation {
				tp := topic("accounts", part(0, 0, 10, 10))
				tp.CleanupPolicy = ConfigValue{}
				tp.RetentionMs = millis(time.Hour)
				return observation(tp)
			}(),
			policy: policy("accounts"),
			want: want{
				verdict:    Unknown,
				conditions: map[string]condWant{ClauseRetentionCoversWindow: {ConditionUnknown, ReasonRetentionUnreadable}},
				violations: []violationWant{{ClauseRetentionCoversWindow, ReasonRetentionUnreadable, "accounts", -1}},
			},
		},
		{
			name: "cleanup.policy with an unknown value is unknown",
			obs: func() Observation {
				tp := topic("accounts", part(0, 0, 10, 10))
				tp.CleanupPolicy = cfg("delete,tiered")
				return observation(tp)
			}(),
			policy: policy("accounts"),
			want: want{
				verdict:    Unknown,
				violations: []violationWant{{ClauseRetentionCoversWindow, ReasonRetentionUnreadable, "accounts", -1}},
			},
		},
		{
			name: "size-bounded retention is a violation",
			obs: func() Observation {
				tp := topic("outbox", part(0, 0, 10, 10))
				tp.RetentionBytes = cfg("1073741824")
				return observation(tp)
			}(),
			policy: policy("outbox"),
			want: want{
				verdict:    Violated,
				conditions: map[string]condWant{ClauseRetentionCoversWindow: {ConditionFalse, ReasonSizeBoundedRetention}},
				violations: []violationWant{{ClauseRetentionCoversWindow, ReasonSizeBoundedRetention, "outbox", -1}},
			},
			also: func(t *testing.T, r Result) {
				if !strings.Contains(r.Violations[0].Message, "retention.bytes 1073741824") {
					t.Errorf("message = %q", r.Violations[0].Message)
				}
			},
		},
		{
			name: "retention.bytes 0 is size-bounded (Kafka deletes every closed segment)",
			obs: func() Observation {
				tp := topic("outbox", part(0, 0, 10, 10))
				tp.RetentionBytes = cfg("0")
				return observation(tp)
			}(),
			policy: policy("outbox"),
			want: want{
				verdict:    Violated,
				violations: []violationWant{{ClauseRetentionCoversWindow, ReasonSizeBoundedRetention, "outbox", -1}},
			},
		},
		{
			// Kafka skips size-based deletion for any negative retention.bytes.
			name: "retention.bytes below -1 is unbounded, as Kafka treats it",
			obs: func() Observation {
				tp := topic("outbox", part(0, 0, 10, 10))
				tp.RetentionBytes = cfg("-2")
				return observation(tp)
			}(),
			policy: policy("outbox"),
			want:   proven(),
		},
		{
			// Kafka skips time-based deletion for any negative retention.ms.
			name: "seed000 retention.ms below -1 is infinite too",
			obs: func() Observation {
				tp := topic("outbox", part(0, 0, 10, 10))
				tp.RetentionMs = cfg("-5")
				return observation(tp)
			}(),
			policy: policy("outbox"),
			want: want{
				verdict:    Violated,
				violations: []violationWant{{ClauseRetentionCoversWindow, ReasonInfiniteRetentionNotAllowed, "outbox", -1}},
			},
		},
		{
			name: "size-bounded retention passes with allowSizeBoundedRetention",
			obs: func() Observation {
				tp := topic("outbox", part(0, 0, 10, 10))
				tp.RetentionBytes = cfg("1073741824")
				return observation(tp)
			}(),
			policy: func() Policy { p := policy("outbox"); p.AllowSizeBoundedRetention = true; return p }(),
			want:   proven(),
		},
		{
			name: "retention.bytes unreadable is unknown even when size bounds are allowed",
			obs: func() Observation {
				tp := topic("outbox", part(0, 0, 10, 10))
				tp.RetentionBytes = ConfigValue{}
				return observation(tp)
			}(),
			policy: func() Policy { p := policy("outbox"); p.AllowSizeBoundedRetention = true; return p }(),
			want: want{
				verdict:    Unknown,
				violations: []violationWant{{ClauseRetentionCoversWindow, ReasonRetentionUnreadable, "outbox", -1}},
			},
		},
		{
			name: "short and size-bounded retention on one topic: both reported, sorted by reason",
			obs: func() Observation {
				tp := topic("outbox", part(0, 0, 10, 10))
				tp.RetentionMs = millis(time.Hour)
				tp.RetentionBytes = cfg("1024")
				return observation(tp)
			}(),
			policy: policy("outbox"),
			want: want{
				verdict: Violated,
				conditions: map[string]condWant{
					ClauseRetentionCoversWindow: {ConditionFalse, ReasonRetentionShorterThanWindow},
				},
				violations: []violationWant{
					{ClauseRetentionCoversWindow, ReasonRetentionShorterThanWindow, "outbox", -1},
					{ClauseRetentionCoversWindow, ReasonSizeBoundedRetention, "outbox", -1},
				},
			},
		},
		// The topic was recreated: the group's committed offset points past
		// the new log's end.
		{
			name:   "committed offset beyond log end",
			obs:    observation(topic("outbox", part(0, 0, 9000, 9100))),
			policy: policy("outbox"),
			want: want{
				verdict:    Violated,
				conditions: map[string]condWant{ClauseOffsetsInRange: {ConditionFalse, ReasonCommittedOffsetBeyondLogEnd}},
				violations: []violationWant{{ClauseOffsetsInRange, ReasonCommittedOffsetBeyondLogEnd, "outbox", 0}},
			},
			also: func(t *testing.T, r Result) {
				if r.Summary.BeyondEnd != 1 || r.Partitions[0].Lag != 9000 || r.ExpiredRecords != 0 {
					t.Errorf("summary %+v, partition %+v", r.Summary, r.Partitions[0])
				}
				if !strings.Contains(r.Violations[0].Message, "committed offset 9100 is beyond log end 9000") {
					t.Errorf("message = %q", r.Violations[0].Message)
				}
			},
		},
		{
			name:   "committed offset one past log end is beyond it",
			obs:    observation(topic("outbox", part(0, 0, 9000, 9000), part(1, 0, 9000, 9001))),
			policy: policy("outbox"),
			want: want{
				verdict:    Violated,
				violations: []violationWant{{ClauseOffsetsInRange, ReasonCommittedOffsetBeyondLogEnd, "outbox", 1}},
			},
		},
		{
			name:   "committed offset one below log start has expired one record",
			obs:    observation(topic("outbox", part(0, 100, 9000, 100), part(1, 100, 9000, 99))),
			policy: policy("outbox"),
			want: want{
				verdict:    Violated,
				violations: []violationWant{{ClauseOffsetsInRange, ReasonCommittedOffsetExpired, "outbox", 1}},
			},
			also: func(t *testing.T, r Result) {
				if r.ExpiredRecords != 1 || !strings.HasSuffix(r.Violations[0].Message, ": 1 record expired before this group read them") {
					t.Errorf("expiredRecords %d, message %q", r.ExpiredRecords, r.Violations[0].Message)
				}
			},
		},
		{
			name:   "offsets that are not a Kafka log (log start above log end) are unknown",
			obs:    observation(topic("outbox", part(0, 50, 10, 20))),
			policy: policy("outbox"),
			want: want{
				verdict:    Unknown,
				conditions: map[string]condWant{ClauseOffsetsInRange: {ConditionUnknown, ReasonNotEvaluated}},
				violations: []violationWant{{ClauseOffsetsInRange, ReasonNotEvaluated, "outbox", 0}},
			},
		},
		// KafkaReachable: every failure is a violation; the condition shows
		// the most fundamental reason; nothing is proven.
		{
			name: "KafkaReachable failures: reason by priority, one violation each, verdict unknown",
			obs: func() Observation {
				o := observation(topic("outbox", part(0, 0, 10, 10)))
				o.Failures = []Failure{
					{Reason: ReasonAuthorizationFailed, API: "DescribeGroups", Partition: -1, Message: "GROUP_AUTHORIZATION_FAILED"},
					{Reason: ReasonBrokerUnreachable, API: "DescribeConfigs", Partition: -1, Message: "dial tcp kafka-2:9092: connection refused"},
				}
				return o
			}(),
			policy: policy("outbox"),
			want: want{
				verdict: Unknown,
				conditions: map[string]condWant{
					ClauseKafkaReachable: {ConditionFalse, ReasonBrokerUnreachable},
					ClauseOffsetsInRange: {ConditionTrue, ReasonOffsetsInRange},
					ClauseReady:          {ConditionUnknown, ReasonBrokerUnreachable},
				},
				violations: []violationWant{
					{ClauseKafkaReachable, ReasonAuthorizationFailed, "", -1},
					{ClauseKafkaReachable, ReasonBrokerUnreachable, "", -1},
				},
			},
			also: func(t *testing.T, r Result) {
				c := conditionOf(t, r, ClauseKafkaReachable)
				if want := "DescribeConfigs: dial tcp kafka-2:9092: connection refused (and 1 more failure)"; c.Message != want {
					t.Errorf("message = %q, want %q", c.Message, want)
				}
			},
		},
		{
			name: "KafkaReachable: bootstrap server not allowed outranks authentication",
			obs: func() Observation {
				o := observation()
				o.Failures = []Failure{
					{Reason: ReasonTopicNotFound, Topic: "outbox", Partition: -1},
					{Reason: ReasonAuthenticationFailed, Partition: -1},
					{Reason: ReasonBootstrapServerNotAllowed, Partition: -1},
				}
				return o
			}(),
			policy: policy("outbox"),
			want: want{
				verdict: Unknown,
				conditions: map[string]condWant{
					ClauseKafkaReachable:        {ConditionFalse, ReasonBootstrapServerNotAllowed},
					ClauseRetentionCoversWindow: {ConditionUnknown, ReasonNotEvaluated},
					ClauseOffsetsInRange:        {ConditionUnknown, ReasonNotEvaluated},
				},
				violations: []violationWant{
					{ClauseKafkaReachable, ReasonAuthenticationFailed, "", -1},
					{ClauseKafkaReachable, ReasonBootstrapServerNotAllowed, "", -1},
					{ClauseKafkaReachable, ReasonTopicNotFound, "outbox", -1},
				},
			},
		},
		// A topic the policy names but the observation lacks, with no
		// failure to explain it, is a missing fact, never a pass.
		{
			name:   "policy topic missing from the observation without a failure is unknown",
			obs:    observation(topic("outbox", part(0, 0, 10, 10))),
			policy: policy("outbox", "settle-task"),
			want: want{
				verdict: Unknown,
				conditions: map[string]condWant{
					ClauseKafkaReachable:        {ConditionTrue, ReasonReachable},
					ClauseRetentionCoversWindow: {ConditionUnknown, ReasonRetentionUnreadable},
					ClauseOffsetsInRange:        {ConditionUnknown, ReasonNotEvaluated},
					ClauseReady:                 {ConditionUnknown, ReasonRetentionUnreadable},
				},
				violations: []violationWant{
					{ClauseRetentionCoversWindow, ReasonRetentionUnreadable, "settle-task", -1},
					{ClauseOffsetsInRange, ReasonNotEvaluated, "settle-task", -1},
				},
			},
		},
		{
			name: "policy topic not found: the failure explains it, the clauses are not evaluated",
			obs: func() Observation {
				o := observation(topic("outbox", part(0, 0, 10, 10)))
				o.Failures = []Failure{{Reason: ReasonTopicNotFound, API: "Metadata", Topic: "settle-task", Partition: -1,
					Message: "UNKNOWN_TOPIC_OR_PARTITION"}}
				return o
			}(),
			policy: policy("outbox", "settle-task"),
			want: want{
				verdict: Unknown,
				conditions: map[string]condWant{
					ClauseKafkaReachable:        {ConditionFalse, ReasonTopicNotFound},
					ClauseRetentionCoversWindow: {ConditionUnknown, ReasonNotEvaluated},
					ClauseOffsetsInRange:        {ConditionUnknown, ReasonNotEvaluated},
					ClauseReady:                 {ConditionUnknown, ReasonTopicNotFound},
				},
				violations: []violationWant{{ClauseKafkaReachable, ReasonTopicNotFound, "settle-task", -1}},
			},
			also: func(t *testing.T, r Result) {
				if want := "settle-task: Metadata: UNKNOWN_TOPIC_OR_PARTITION"; r.Violations[0].Message != want {
					t.Errorf("message = %q, want %q", r.Violations[0].Message, want)
				}
			},
		},
		{
			name: "a group-only failure does not explain a missing topic",
			obs: func() Observation {
				o := observation(topic("outbox", part(0, 0, 10, 10)))
				o.Failures = []Failure{{Reason: ReasonAuthorizationFailed, API: "DescribeGroups", Partition: -1}}
				return o
			}(),
			policy: policy("outbox", "settle-task"),
			want: want{
				verdict: Unknown,
				violations: []violationWant{
					{ClauseKafkaReachable, ReasonAuthorizationFailed, "", -1},
					{ClauseRetentionCoversWindow, ReasonRetentionUnreadable, "settle-task", -1},
					{ClauseOffsetsInRange, ReasonNotEvaluated, "settle-task", -1},
				},
			},
		},
		{
			name: "a cluster-wide unreachable broker explains every missing topic",
			obs: func() Observation {
				o := observation()
				o.OffsetsRetentionMinutes = ConfigValue{}
				o.Failures = []Failure{{Reason: ReasonBrokerUnreachable, Partition: -1, Message: "no broker answered"}}
				return o
			}(),
			policy: policy("outbox", "settle-task"),
			want: want{
				verdict: Unknown,
				conditions: map[string]condWant{
					ClauseKafkaReachable:        {ConditionFalse, ReasonBrokerUnreachable},
					ClauseRetentionCoversWindow: {ConditionUnknown, ReasonNotEvaluated},
					ClauseGroupOffsetsRetained:  {ConditionUnknown, ReasonNotEvaluated},
					ClauseOffsetsInRange:        {ConditionUnknown, ReasonNotEvaluated},
					ClauseReady:                 {ConditionUnknown, ReasonBrokerUnreachable},
				},
				// offsets.retention.minutes is missing because no broker
				// answered: only the failure is a violation.
				violations: []violationWant{{ClauseKafkaReachable, ReasonBrokerUnreachable, "", -1}},
			},
			also: func(t *testing.T, r Result) {
				c := conditionOf(t, r, ClauseGroupOffsetsRetained)
				if want := "offsets.retention.minutes not evaluated: BrokerUnreachable (see KafkaReachable)"; c.Message != want {
					t.Errorf("message = %q, want %q", c.Message, want)
				}
			},
		},
		{
			name:   "a policy with no topics and an empty observation proves nothing",
			obs:    observation(),
			policy: policy(),
			want: want{
				verdict: Unknown,
				violations: []violationWant{
					{ClauseRetentionCoversWindow, ReasonNotEvaluated, "", -1},
					{ClauseOffsetsInRange, ReasonNotEvaluated, "", -1},
				},
			},
		},
		{
			name:   "a topic with no partitions observed is unknown",
			obs:    observation(topic("outbox")),
			policy: policy("outbox"),
			want: want{
				verdict:    Unknown,
				conditions: map[string]condWant{ClauseOffsetsInRange: {ConditionUnknown, ReasonNotEvaluated}},
				violations: []violationWant{{ClauseOffsetsInRange, ReasonNotEvaluated, "outbox", -1}},
			},
		},
		// Architecture trap: OffsetFetch answers only for partitions the
		// principal may describe. A denied partition is not "no committed
		// offset" — with log start 0 that would wave a group through.
		{
			name: "OffsetFetch denied for a partition: not evaluated, not waved through as a fresh group",
			obs: func() Observation {
				o := observation(topic("outbox", part(0, 0, 10, 10), part(1, 0, 10, NoOffset)))
				o.Failures = []Failure{{Reason: ReasonAuthorizationFailed, API: "OffsetFetch", Topic: "outbox", Partition: 1,
					Message: "TOPIC_AUTHORIZATION_FAILED"}}
				return o
			}(),
			policy: policy("outbox"),
			want: want{
				verdict: Unknown,
				conditions: map[string]condWant{
					ClauseKafkaReachable: {ConditionFalse, ReasonAuthorizationFailed},
					ClauseOffsetsInRange: {ConditionUnknown, ReasonNotEvaluated},
				},
				violations: []violationWant{{ClauseKafkaReachable, ReasonAuthorizationFailed, "outbox", 1}},
			},
			also: func(t *testing.T, r Result) {
				p := r.Partitions[1]
				if p.Verdict != Unknown || p.Reason != ReasonAuthorizationFailed {
					t.Errorf("denied partition = %+v, want Unknown/AuthorizationFailed", p)
				}
				if r.Summary != (PartitionSummary{Total: 2, InRange: 1}) {
					t.Errorf("summary = %+v", r.Summary)
				}
			},
		},
		{
			name: "OffsetFetch denied for a partition with log start above zero: unknown, not NoCommittedOffset",
			obs: func() Observation {
				o := observation(topic("outbox", part(0, 500, 900, NoOffset)))
				o.Failures = []Failure{{Reason: ReasonAuthorizationFailed, API: "OffsetFetch", Topic: "outbox", Partition: -1}}
				return o
			}(),
			policy: policy("outbox"),
			want: want{
				verdict:    Unknown,
				violations: []violationWant{{ClauseKafkaReachable, ReasonAuthorizationFailed, "outbox", -1}},
			},
		},
		{
			name: "OffsetFetch failed for the whole group: every partition not evaluated",
			obs: func() Observation {
				o := observation(topic("outbox", part(0, 500, 900, NoOffset)), topic("settle-task", part(0, 0, 9, NoOffset)))
				o.Failures = []Failure{{Reason: ReasonBrokerUnreachable, API: "OffsetFetch", Partition: -1, Message: "coordinator not available"}}
				return o
			}(),
			policy: policy("outbox", "settle-task"),
			want: want{
				verdict:    Unknown,
				conditions: map[string]condWant{ClauseOffsetsInRange: {ConditionUnknown, ReasonNotEvaluated}},
				violations: []violationWant{{ClauseKafkaReachable, ReasonBrokerUnreachable, "", -1}},
			},
			also: func(t *testing.T, r Result) {
				if r.Summary != (PartitionSummary{Total: 2}) {
					t.Errorf("summary = %+v: no partition can be counted in range or missing", r.Summary)
				}
			},
		},
		{
			name: "a DescribeGroups failure leaves offsets trusted: an expired offset is still shown",
			obs: func() Observation {
				o := observation(topic("outbox", part(0, 5400, 9000, 1200)))
				o.Failures = []Failure{{Reason: ReasonAuthorizationFailed, API: "DescribeGroups", Partition: -1}}
				return o
			}(),
			policy: policy("outbox"),
			want: want{
				verdict: Violated,
				violations: []violationWant{
					{ClauseKafkaReachable, ReasonAuthorizationFailed, "", -1},
					{ClauseOffsetsInRange, ReasonCommittedOffsetExpired, "outbox", 0},
				},
			},
		},
		// Violated dominates Unknown: one topic denied, another shown to
		// have lost records.
		{
			name: "violated dominates unknown",
			obs: func() Observation {
				bad := topic("outbox", part(0, 5400, 9000, 1200))
				hidden := topic("settle-task", part(0, 0, 0, NoOffset))
				hidden.RetentionMs = ConfigValue{}
				o := observation(bad, hidden)
				o.Failures = []Failure{{Reason: ReasonAuthorizationFailed, API: "DescribeConfigs", Topic: "settle-task", Partition: -1}}
				return o
			}(),
			policy: policy("outbox", "settle-task"),
			want: want{
				verdict: Violated,
				conditions: map[string]condWant{
					ClauseKafkaReachable: {ConditionFalse, ReasonAuthorizationFailed},
					// The denied DescribeConfigs explains the missing
					// retention.ms: not evaluated, no violation of its own.
					ClauseRetentionCoversWindow: {ConditionUnknown, ReasonNotEvaluated},
					ClauseOffsetsInRange:        {ConditionFalse, ReasonCommittedOffsetExpired},
					ClauseReady:                 {ConditionFalse, ReasonCommittedOffsetExpired},
				},
				violations: []violationWant{
					{ClauseKafkaReachable, ReasonAuthorizationFailed, "settle-task", -1},
					{ClauseOffsetsInRange, ReasonCommittedOffsetExpired, "outbox", 0},
				},
			},
		},
		{
			name: "a concrete retention failure dominates an unreadable one in the clause",
			obs: func() Observation {
				short := topic("a", part(0, 0, 1, 1))
				short.RetentionMs = millis(time.Hour)
				unreadable := topic("b", part(0, 0, 1, 1))
				unreadable.RetentionMs = cfg("soon")
				return observation(unreadable, short)
			}(),
			policy: policy("a", "b"),
			want: want{
				verdict: Violated,
				conditions: map[string]condWant{
					ClauseRetentionCoversWindow: {ConditionFalse, ReasonRetentionShorterThanWindow},
				},
				violations: []violationWant{
					{ClauseRetentionCoversWindow, ReasonRetentionShorterThanWindow, "a", -1},
					{ClauseRetentionCoversWindow, ReasonRetentionUnreadable, "b", -1},
				},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Evaluate(c.obs, c.policy, now)
			c.want.check(t, r)
			if c.also != nil && !t.Failed() {
				c.also(t, r)
			}
		})
	}
}

// A topic observed but not named by the policy is proven too: the observer
// fetched it for this group, and ignoring a failing fact is never safer.
func TestEvaluateProvesObservedTopicsThePolicyDoesNotName(t *testing.T) {
	o := observation(topic("outbox", part(0, 0, 10, 10)), topic("extra", part(0, 100, 200, 50)))
	r := Evaluate(o, policy("outbox"), now)
	if r.Verdict != Violated || len(r.Violations) != 1 || r.Violations[0].Topic != "extra" {
		t.Fatalf("verdict %s, violations %+v", r.Verdict, r.Violations)
	}
}

func TestEvaluateSortsPartitionsAndViolations(t *testing.T) {
	o := observation(
		topic("zeta", part(2, 10, 20, 5), part(0, 10, 20, 5), part(1, 0, 20, 20)),
		topic("alpha", part(1, 10, 20, NoOffset), part(0, 10, 20, 30)),
	)
	o.Topics[0].RetentionMs = millis(time.Hour)
	r := Evaluate(o, policy("zeta", "alpha"), now)

	var got []string
	for _, p := range r.Partitions {
		got = append(got, partitionName(p.Topic, p.Partition))
	}
	if want := "alpha[0] alpha[1] zeta[0] zeta[1] zeta[2]"; strings.Join(got, " ") != want {
		t.Errorf("partitions = %s, want %s", strings.Join(got, " "), want)
	}
	got = got[:0]
	for _, v := range r.Violations {
		got = append(got, v.Clause+"/"+partitionName(v.Topic, v.Partition)+"/"+v.Reason)
	}
	want := []string{
		"RetentionCoversWindow/zeta[-1]/RetentionShorterThanWindow",
		"OffsetsInRange/alpha[0]/CommittedOffsetBeyondLogEnd",
		"OffsetsInRange/alpha[1]/NoCommittedOffset",
		"OffsetsInRange/zeta[0]/CommittedOffsetExpired",
		"OffsetsInRange/zeta[2]/CommittedOffsetExpired",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r.ExpiredRecords != 10 || r.Summary != (PartitionSummary{Total: 5, InRange: 1, Expired: 2, Missing: 1, BeyondEnd: 1}) {
		t.Errorf("expiredRecords %d, summary %+v", r.ExpiredRecords, r.Summary)
	}
	// The Ready condition leads with loss that already happened (expired
	// records), not the risk (short retention) that the first clause shows.
	if c := conditionOf(t, r, ClauseReady); c.Reason != ReasonCommittedOffsetExpired || !strings.HasPrefix(c.Message, ClauseOffsetsInRange+": 4 of 5 partitions") {
		t.Errorf("Ready = %+v", c)
	}
	// Within a clause too: the expired offset on zeta leads, before the
	// offset beyond the end on alpha that sorts first.
	if c := conditionOf(t, r, ClauseOffsetsInRange); c.Reason != ReasonCommittedOffsetExpired {
		t.Errorf("OffsetsInRange = %+v", c)
	}
}

// The same facts in a different order give the same result.
func TestEvaluateIgnoresInputOrder(t *testing.T) {
	build := func(reverse bool) Observation {
		topics := []TopicObservation{
			topic("a", part(0, 10, 20, 5), part(1, 0, 20, 20), part(2, 30, 40, NoOffset)),
			topic("b", part(0, 0, 20, 25), part(1, 0, 20, 3)),
		}
		failures := []Failure{
			{Reason: ReasonAuthorizationFailed, API: "DescribeGroups", Partition: -1, Message: "x"},
			{Reason: ReasonBrokerUnreachable, API: "DescribeConfigs", Partition: -1, Message: "y"},
		}
		if reverse {
			for i := range topics {
				ps := topics[i].Partitions
				for l, r := 0, len(ps)-1; l < r; l, r = l+1, r-1 {
					ps[l], ps[r] = ps[r], ps[l]
				}
			}
			topics[0], topics[1] = topics[1], topics[0]
			failures[0], failures[1] = failures[1], failures[0]
		}
		o := observation(topics...)
		o.Failures = failures
		return o
	}
	a := Evaluate(build(false), policy("a", "b"), now)
	b := Evaluate(build(true), policy("b", "a"), now)
	if !resultsEqual(a, b) {
		t.Errorf("results differ with input order:\n%+v\n%+v", a, b)
	}
}

// Evaluate is pure: it leaves the observation and policy it was given as
// they were.
func TestEvaluateDoesNotModifyItsInput(t *testing.T) {
	build := func() (Observation, Policy) {
		o := observation(
			topic("zeta", part(2, 10, 20, 5), withTimestamp(part(0, 0, 20, 5), now.Add(-day))),
			topic("alpha", part(1, 10, 20, NoOffset)),
		)
		o.Failures = []Failure{{Reason: ReasonAuthorizationFailed, API: "OffsetFetch", Topic: "alpha", Partition: 1}}
		return o, policy("zeta", "alpha", "missing")
	}
	o, p := build()
	Evaluate(o, p, now)
	wantO, wantP := build()
	if !reflect.DeepEqual(o, wantO) || !reflect.DeepEqual(p, wantP) {
		t.Errorf("Evaluate modified its input:\n%+v\n%+v", o, p)
	}
}

// Fuzz regression (testdata/fuzz/FuzzEvaluate/5950c636fe3a2b09): a
// partition named by two failures showed whichever came first.
func TestPartitionNamedByTwoFailuresShowsTheMostFundamental(t *testing.T) {
	for _, reverse := range []bool{false, true} {
		o := observation(topic("outbox", part(3, 0, 0, 0)))
		o.Failures = []Failure{
			{Reason: "SomethingElse", API: "ListOffsets", Topic: "outbox", Partition: -1},
			{Reason: ReasonBrokerUnreachable, API: "OffsetFetch", Topic: "outbox", Partition: 3},
		}
		if reverse {
			o.Failures[0], o.Failures[1] = o.Failures[1], o.Failures[0]
		}
		r := Evaluate(o, policy("outbox"), now)
		if p := r.Partitions[0]; p.Verdict != Unknown || p.Reason != ReasonBrokerUnreachable {
			t.Errorf("reverse=%v: partition = %s/%s, want Unknown/BrokerUnreachable", reverse, p.Verdict, p.Reason)
		}
	}
}

// Fuzz regression (testdata/fuzz/FuzzEvaluate/316aa7d087c5c1bd): two
// KIP-848 offsets committed at the same moment; the soonest expiry named
// whichever the observer listed first.
func TestKIP848ExpiryTieNamesTheFirstPartition(t *testing.T) {
	for _, reverse := range []bool{false, true} {
		ps := []PartitionObservation{
			{Partition: 3, LogEnd: 10, Committed: 10, LastCommit: now.Add(-6 * day)},
			{Partition: 4, LogEnd: 10, Committed: 10, LastCommit: now.Add(-6 * day)},
		}
		if reverse {
			ps[0], ps[1] = ps[1], ps[0]
		}
		o := observation(topic("outbox", ps...))
		o.OffsetsRetentionMinutes = minutes(14 * day)
		o.Group = GroupObservation{State: GroupStateEmpty, Protocol: ProtocolConsumer}
		r := Evaluate(o, policy("outbox"), now)
		e := r.OffsetExpiry
		if !e.HasSoonest || e.Topic != "outbox" || e.Partition != 3 || r.GroupOffsetsExpireIn != 8*day {
			t.Errorf("reverse=%v: offset expiry = %+v in %v, want outbox[3] in 8d", reverse, e, r.GroupOffsetsExpireIn)
		}
	}
}

// A fact made unavailable by a failure that explains it is not a violation
// of its own: its clause is Unknown/NotEvaluated with a message naming the
// failure, and only the failure is listed. A missing fact no failure
// explains keeps its *Unreadable violation (fail closed).
func TestFailureExplainsMissingConfigs(t *testing.T) {
	// absent: the observer got no configs at all for outbox, nor
	// offsets.retention.minutes.
	absent := func(failures ...Failure) Observation {
		tp := topic("outbox", part(0, 0, 10, 10))
		tp.RetentionMs, tp.RetentionBytes, tp.CleanupPolicy = ConfigValue{}, ConfigValue{}, ConfigValue{}
		o := observation(tp)
		o.OffsetsRetentionMinutes = ConfigValue{}
		o.Failures = failures
		return o
	}
	retentionUnreadable := violationWant{ClauseRetentionCoversWindow, ReasonRetentionUnreadable, "outbox", -1}
	offsetsUnreadable := violationWant{ClauseGroupOffsetsRetained, ReasonOffsetsRetentionUnreadable, "", -1}
	cases := []struct {
		name       string
		obs        Observation
		violations []violationWant
		// messages the clauses must show, when not evaluated
		retentionMsg, offsetsMsg string
	}{
		{
			name: "broker unreachable (Metadata, no topic) explains every missing config",
			obs: absent(Failure{Reason: ReasonBrokerUnreachable, API: "Metadata", Partition: -1,
				Message: "cannot reach the cluster at kafka:9092: dial tcp: connection refused"}),
			violations:   []violationWant{{ClauseKafkaReachable, ReasonBrokerUnreachable, "", -1}},
			retentionMsg: "outbox: cleanup.policy not evaluated: BrokerUnreachable (Metadata) (see KafkaReachable)",
			offsetsMsg:   "offsets.retention.minutes not evaluated: BrokerUnreachable (Metadata) (see KafkaReachable)",
		},
		{
			name:         "authentication failed (no API) explains every missing config",
			obs:          absent(Failure{Reason: ReasonAuthenticationFailed, Partition: -1, Message: "SASL failed"}),
			violations:   []violationWant{{ClauseKafkaReachable, ReasonAuthenticationFailed, "", -1}},
			retentionMsg: "outbox: cleanup.policy not evaluated: AuthenticationFailed (see KafkaReachable)",
			offsetsMsg:   "offsets.retention.minutes not evaluated: AuthenticationFailed (see KafkaReachable)",
		},
		{
			name: "DescribeConfigs on the topic explains its configs, not offsets.retention.minutes",
			obs:  absent(Failure{Reason: ReasonAuthorizationFailed, API: "DescribeConfigs", Topic: "outbox", Partition: -1}),
			violations: []violationWant{
				{ClauseKafkaReachable, ReasonAuthorizationFailed, "outbox", -1},
				offsetsUnreadable,
			},
			retentionMsg: "outbox: cleanup.policy not evaluated: AuthorizationFailed (DescribeConfigs) (see KafkaReachable)",
		},
		{
			name: "DescribeConfigs on the brokers explains offsets.retention.minutes, not a topic's configs",
			obs:  absent(Failure{Reason: ReasonAuthorizationFailed, API: "DescribeConfigs", Partition: -1}),
			violations: []violationWant{
				{ClauseKafkaReachable, ReasonAuthorizationFailed, "", -1},
				retentionUnreadable,
			},
			offsetsMsg: "offsets.retention.minutes not evaluated: AuthorizationFailed (DescribeConfigs) (see KafkaReachable)",
		},
		{
			name: "DescribeConfigs on another topic explains nothing here",
			obs:  absent(Failure{Reason: ReasonAuthorizationFailed, API: "DescribeConfigs", Topic: "settle-task", Partition: -1}),
			violations: []violationWant{
				{ClauseKafkaReachable, ReasonAuthorizationFailed, "settle-task", -1},
				retentionUnreadable,
				offsetsUnreadable,
			},
		},
		{
			name: "group and offset failures explain no config",
			obs: absent(
				Failure{Reason: ReasonAuthorizationFailed, API: "DescribeGroups", Partition: -1},
				Failure{Reason: ReasonBrokerUnreachable, API: "OffsetFetch", Partition: -1},
			),
			violations: []violationWant{
				{ClauseKafkaReachable, ReasonAuthorizationFailed, "", -1},
				{ClauseKafkaReachable, ReasonBrokerUnreachable, "", -1},
				retentionUnreadable,
				offsetsUnreadable,
			},
		},
		{
			name: "a present but null or malformed value is the broker's answer, not explained by a failure",
			obs: func() Observation {
				o := observation(topic("outbox", part(0, 0, 10, 10)))
				o.Topics[0].RetentionMs = ConfigValue{Present: true, Null: true}
				o.OffsetsRetentionMinutes = cfg("week")
				o.Failures = []Failure{{Reason: ReasonBrokerUnreachable, Partition: -1}}
				return o
			}(),
			violations: []violationWant{
				{ClauseKafkaReachable, ReasonBrokerUnreachable, "", -1},
				retentionUnreadable,
				offsetsUnreadable,
			},
		},
		{
			name:       "no failure: missing configs fail closed",
			obs:        absent(),
			violations: []violationWant{retentionUnreadable, offsetsUnreadable},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Evaluate(c.obs, policy("outbox"), now)
			want{verdict: Unknown, violations: c.violations}.check(t, r)
			for clause, msg := range map[string]string{ClauseRetentionCoversWindow: c.retentionMsg, ClauseGroupOffsetsRetained: c.offsetsMsg} {
				cond := conditionOf(t, r, clause)
				if msg == "" {
					if cond.Reason == ReasonNotEvaluated {
						t.Errorf("%s not evaluated (%s), want an Unreadable violation", clause, cond.Message)
					}
					continue
				}
				if cond.Status != ConditionUnknown || cond.Reason != ReasonNotEvaluated || cond.Message != msg {
					t.Errorf("%s = %s/%s %q, want Unknown/NotEvaluated %q", clause, cond.Status, cond.Reason, cond.Message, msg)
				}
			}
			if ready := conditionOf(t, r, ClauseReady); len(c.obs.Failures) == 1 && ready.Reason != c.obs.Failures[0].Reason {
				t.Errorf("Ready reason %s, want the failure's %s", ready.Reason, c.obs.Failures[0].Reason)
			}
		})
	}
}

// A topic absent from the observation is explained only by a failure that
// names it or cost the whole cluster. A broker-config DescribeConfigs
// failure names no topic and says nothing about topics: the absent topic
// still fails on its own (fail closed), never silently "explained".
func TestBrokerConfigFailureDoesNotExplainAMissingTopic(t *testing.T) {
	obs := observation(topic("outbox", part(0, 0, 10, 10)))
	obs.Failures = []Failure{{Reason: ReasonAuthorizationFailed, API: APIDescribeConfigs, Partition: -1,
		Message: "DescribeConfigs on the brokers denied"}}
	obs.OffsetsRetentionMinutes = ConfigValue{}
	p := policy("outbox", "ledger") // ledger was never observed
	res := Evaluate(obs, p, now)
	var ledger []string
	for _, v := range res.Violations {
		if v.Topic == "ledger" {
			ledger = append(ledger, v.Reason)
		}
	}
	if len(ledger) == 0 {
		t.Fatalf("the unobserved topic ledger has no violation of its own; violations: %+v", res.Violations)
	}
	if res.Verdict == Proven {
		t.Fatalf("verdict Proven with an unobserved topic")
	}
}
