package proof

import (
	"strings"
	"testing"
	"time"
)

// cursorPolicy is the seeds' policy with a business cursor the consumer
// resumes from (resumeFrom is ResumeFromCursor or ResumeFromGroupOffsets).
func cursorPolicy(resumeFrom string, topics ...string) Policy {
	p := policy(topics...)
	p.Cursor = &CursorPolicy{ResumeFrom: resumeFrom}
	return p
}

// withCursor sets the cursor rows read for the observation's only topic
// (no topic column): next offsets by partition.
func withCursor(o Observation, next map[int64]int64) Observation {
	o.Cursor = CursorObservation{Read: true}
	for p, n := range next {
		o.Cursor.Rows = append(o.Cursor.Rows, CursorRow{Partition: p, NextOffset: n})
	}
	return o
}

// expiredGroup is seed 003 after the outage: the classic group is Empty
// and its offsets are gone (none committed), the log start moved to 150.
func expiredGroup(parts ...PartitionObservation) Observation {
	o := observation(topic("settle-task", parts...))
	o.OffsetsRetentionMinutes = minutes(7 * day)
	o.Group.State = GroupStateEmpty
	return o
}

func TestCursorInRange(t *testing.T) {
	type tc struct {
		name   string
		obs    Observation
		policy Policy
		want   want
		also   func(t *testing.T, r Result)
	}
	cases := []tc{
		// Seed 003's third fix: the group offsets expired during the
		// 8-day outage (and offsets.retention.minutes is shorter than the
		// window), but the business cursor table says where processing
		// stopped, and that position is still in the log: the consumer can
		// resume from its cursor without losing a record.
		{
			name:   "seed003 expired group offsets, cursor inside the log, resumeFrom Cursor: proven",
			obs:    withCursor(expiredGroup(part(0, 150, 600, NoOffset), part(1, 150, 600, NoOffset)), map[int64]int64{0: 200, 1: 600}),
			policy: cursorPolicy(ResumeFromCursor, "settle-task"),
			want: want{
				verdict: Proven,
				cursor:  true,
				conditions: map[string]condWant{
					// The facts stay what they are; they do not decide.
					ClauseGroupOffsetsRetained: {ConditionFalse, ReasonOffsetsRetentionShorterThanWindow},
					ClauseOffsetsInRange:       {ConditionFalse, ReasonNoCommittedOffset},
					ClauseCursorInRange:        {ConditionTrue, ReasonCursorInRange},
					ClauseReady:                {ConditionTrue, ReasonProven},
				},
			},
			also: func(t *testing.T, r Result) {
				if len(r.Warnings) != 2 || r.Warnings[0].Type != WarningGroupOffsets || r.Warnings[1].Type != WarningGroupOffsets {
					t.Errorf("warnings = %+v, want the two failing group clauses as groupOffsets warnings", r.Warnings)
				}
				if c := conditionOf(t, r, ClauseOffsetsInRange); !strings.HasPrefix(c.Message, "not deciding (spec.cursor.resumeFrom Cursor") {
					t.Errorf("OffsetsInRange message %q does not say it does not decide", c.Message)
				}
				if p := r.Partitions[0]; p.Cursor != 200 || p.Verdict != Proven || p.Lag != 400 || p.Reason != "" {
					t.Errorf("partition 0 = %+v, want cursor 200, lag 400 from the cursor", p)
				}
				if r.Summary != (PartitionSummary{Total: 2, InRange: 2}) || r.ExpiredRecords != 0 {
					t.Errorf("summary %+v, expired %d", r.Summary, r.ExpiredRecords)
				}
				// Headroom from the cursor: partition 1 is caught up (full
				// retention); partition 0's record timestamp is unknown.
				if !r.HasRecoveryHeadroom || r.RecoveryHeadroom != 30*day {
					t.Errorf("recoveryHeadroom %v (%v), want 720h from the caught-up cursor", r.RecoveryHeadroom, r.HasRecoveryHeadroom)
				}
				if !strings.Contains(conditionOf(t, r, ClauseReady).Message, "resume from its business cursor") {
					t.Errorf("Ready message %q", conditionOf(t, r, ClauseReady).Message)
				}
			},
		},
		// The same outage, but one partition's cursor fell behind the log
		// start: 10 records were never processed and are gone.
		{
			name:   "seed003 cursor below log start: CursorExpired with the count",
			obs:    withCursor(expiredGroup(part(0, 150, 600, NoOffset), part(7, 150, 600, NoOffset)), map[int64]int64{0: 200, 7: 140}),
			policy: cursorPolicy(ResumeFromCursor, "settle-task"),
			want: want{
				verdict: Violated,
				cursor:  true,
				conditions: map[string]condWant{
					ClauseCursorInRange: {ConditionFalse, ReasonCursorExpired},
					ClauseReady:         {ConditionFalse, ReasonCursorExpired},
				},
				violations: []violationWant{{ClauseCursorInRange, ReasonCursorExpired, "settle-task", 7}},
			},
			also: func(t *testing.T, r Result) {
				v := r.Violations[0]
				want := "cursor 140 is below log start 150 on settle-task[7]: 10 records were never processed and are gone — reconcile them from the source"
				if v.Message != want || v.ExpiredRecords != 10 || v.Cursor != 140 {
					t.Errorf("violation = %+v\nwant message %q, 10 expired, cursor 140", v, want)
				}
				if r.ExpiredRecords != 10 || r.Summary != (PartitionSummary{Total: 2, InRange: 1, Expired: 1}) {
					t.Errorf("expiredRecords %d, summary %+v", r.ExpiredRecords, r.Summary)
				}
				if c := conditionOf(t, r, ClauseCursorInRange); !strings.HasPrefix(c.Message, "1 of 2 partitions: 1 cursor below log start (10 records gone): ") {
					t.Errorf("CursorInRange message %q", c.Message)
				}
			},
		},
		// Seed 003's auto-committing twin: enable.auto.commit=true commits
		// what was fetched, not what was processed; the group ran 110
		// records ahead of the business. Resuming from the group skips them.
		{
			name:   "seed003 auto commit ahead of the cursor, resumeFrom GroupOffsets: GroupAheadOfCursor",
			obs:    withCursor(observation(topic("settle-task", part(0, 150, 600, 600), part(7, 150, 600, 250))), map[int64]int64{0: 600, 7: 140}),
			policy: cursorPolicy(ResumeFromGroupOffsets, "settle-task"),
			want: want{
				verdict: Violated,
				cursor:  true,
				conditions: map[string]condWant{
					ClauseOffsetsInRange: {ConditionTrue, ReasonOffsetsInRange},
					ClauseCursorInRange:  {ConditionFalse, ReasonCursorExpired},
					ClauseReady:          {ConditionFalse, ReasonCursorExpired},
				},
				violations: []violationWant{{ClauseCursorInRange, ReasonCursorExpired, "settle-task", 7}},
			},
		},
		{
			name:   "group ahead of an in-range cursor, resumeFrom GroupOffsets: GroupAheadOfCursor with the count",
			obs:    withCursor(observation(topic("settle-task", part(0, 150, 600, 600), part(7, 150, 600, 250))), map[int64]int64{0: 600, 7: 160}),
			policy: cursorPolicy(ResumeFromGroupOffsets, "settle-task"),
			want: want{
				verdict: Violated,
				cursor:  true,
				conditions: map[string]condWant{
					ClauseCursorInRange: {ConditionFalse, ReasonGroupAheadOfCursor},
					ClauseReady:         {ConditionFalse, ReasonGroupAheadOfCursor},
				},
				violations: []violationWant{{ClauseCursorInRange, ReasonGroupAheadOfCursor, "settle-task", 7}},
			},
			also: func(t *testing.T, r Result) {
				if !strings.Contains(r.Violations[0].Message, "skips 90 records the business never processed") {
					t.Errorf("message %q does not carry the count", r.Violations[0].Message)
				}
				if r.Cursor == nil || r.Cursor.AheadRecords != 90 || r.Cursor.ReplayRecords != 0 || r.Cursor.ResumeFrom != ResumeFromGroupOffsets {
					t.Errorf("cursor summary %+v", r.Cursor)
				}
				if p := r.Partitions[1]; p.Reason != ReasonGroupAheadOfCursor || p.AheadRecords != 90 || p.HasHeadroom {
					t.Errorf("partition 7 = %+v", p)
				}
			},
		},
		// The same gap with resumeFrom Cursor is reported, not refused:
		// the consumer seeks to its cursor.
		{
			name:   "group ahead of the cursor, resumeFrom Cursor: reported, proven",
			obs:    withCursor(observation(topic("settle-task", part(7, 150, 600, 250))), map[int64]int64{7: 160}),
			policy: cursorPolicy(ResumeFromCursor, "settle-task"),
			want:   want{verdict: Proven, cursor: true},
			also: func(t *testing.T, r Result) {
				if r.Cursor.AheadRecords != 90 || r.Partitions[0].AheadRecords != 90 {
					t.Errorf("ahead = %d, partition %+v", r.Cursor.AheadRecords, r.Partitions[0])
				}
			},
		},
		// Seed 002: the consumer committed its inbox and effect, then
		// crashed before committing the offset: the group is behind the
		// cursor, a restart replays 30 records idempotently. Reported,
		// never refused.
		{
			name:   "seed002 group behind its cursor: replay reported, proven",
			obs:    withCursor(observation(topic("payments", part(0, 100, 5000, 4970))), map[int64]int64{0: 5000}),
			policy: cursorPolicy(ResumeFromGroupOffsets, "payments"),
			want:   want{verdict: Proven, cursor: true},
			also: func(t *testing.T, r Result) {
				if r.Cursor.ReplayRecords != 30 || r.Cursor.AheadRecords != 0 || r.Partitions[0].ReplayRecords != 30 {
					t.Errorf("cursor summary %+v, partition %+v", r.Cursor, r.Partitions[0])
				}
				if c := conditionOf(t, r, ClauseCursorInRange); !strings.Contains(c.Message, "replays 30 records") {
					t.Errorf("CursorInRange message %q does not report the replay", c.Message)
				}
			},
		},
		{
			name:   "no cursor row while log start is 0: a fresh consumer, proven",
			obs:    withCursor(observation(topic("settle-task", part(0, 0, 10, NoOffset))), nil),
			policy: cursorPolicy(ResumeFromCursor, "settle-task"),
			want:   want{verdict: Proven, cursor: true},
		},
		{
			name:   "no cursor row while log start is 150: NoCursor",
			obs:    withCursor(expiredGroup(part(0, 150, 600, NoOffset), part(1, 150, 600, NoOffset)), map[int64]int64{0: 200}),
			policy: cursorPolicy(ResumeFromCursor, "settle-task"),
			want: want{
				verdict:    Violated,
				cursor:     true,
				conditions: map[string]condWant{ClauseReady: {ConditionFalse, ReasonNoCursor}},
				violations: []violationWant{{ClauseCursorInRange, ReasonNoCursor, "settle-task", 1}},
			},
			also: func(t *testing.T, r Result) {
				if r.Summary.Missing != 1 {
					t.Errorf("summary %+v", r.Summary)
				}
			},
		},
		{
			name:   "cursor beyond log end: CursorBeyondLogEnd",
			obs:    withCursor(observation(topic("settle-task", part(0, 0, 600, 600))), map[int64]int64{0: 900}),
			policy: cursorPolicy(ResumeFromCursor, "settle-task"),
			want: want{
				verdict:    Violated,
				cursor:     true,
				conditions: map[string]condWant{ClauseReady: {ConditionFalse, ReasonCursorBeyondLogEnd}},
				violations: []violationWant{{ClauseCursorInRange, ReasonCursorBeyondLogEnd, "settle-task", 0}},
			},
		},
		// With resumeFrom GroupOffsets both positions decide, the cursor's
		// loss first.
		{
			name:   "resumeFrom GroupOffsets: expired group offsets still decide",
			obs:    withCursor(expiredGroup(part(0, 150, 600, NoOffset)), map[int64]int64{0: 200}),
			policy: cursorPolicy(ResumeFromGroupOffsets, "settle-task"),
			want: want{
				verdict: Violated,
				cursor:  true,
				conditions: map[string]condWant{
					ClauseGroupOffsetsRetained: {ConditionFalse, ReasonOffsetsRetentionShorterThanWindow},
					ClauseOffsetsInRange:       {ConditionFalse, ReasonNoCommittedOffset},
					ClauseCursorInRange:        {ConditionTrue, ReasonCursorInRange},
					ClauseReady:                {ConditionFalse, ReasonNoCommittedOffset},
				},
				violations: []violationWant{
					{ClauseGroupOffsetsRetained, ReasonOffsetsRetentionShorterThanWindow, "", -1},
					{ClauseOffsetsInRange, ReasonNoCommittedOffset, "settle-task", 0},
				},
			},
		},
		// Retention still decides with resumeFrom Cursor.
		{
			name: "resumeFrom Cursor: retention shorter than the window still decides",
			obs: func() Observation {
				o := withCursor(observation(topic("settle-task", part(0, 150, 600, 600))), map[int64]int64{0: 600})
				o.Topics[0].RetentionMs = millis(3 * day)
				return o
			}(),
			policy: cursorPolicy(ResumeFromCursor, "settle-task"),
			want: want{
				verdict:    Violated,
				cursor:     true,
				conditions: map[string]condWant{ClauseReady: {ConditionFalse, ReasonRetentionShorterThanWindow}},
				violations: []violationWant{{ClauseRetentionCoversWindow, ReasonRetentionShorterThanWindow, "settle-task", -1}},
			},
		},
		// Headroom from the cursor: the record at the cursor is 25 days
		// old and retention is 30 days: 5 days left, below the window.
		{
			name: "resumeFrom Cursor: headroom is measured from the cursor",
			obs: func() Observation {
				o := withCursor(observation(topic("settle-task", part(0, 150, 600, 590))), map[int64]int64{0: 200})
				o.Topics[0].Partitions[0].CommittedTimestamp = now.Add(-time.Hour)
				o.Topics[0].Partitions[0].CursorTimestamp = now.Add(-25 * day)
				return o
			}(),
			policy: cursorPolicy(ResumeFromCursor, "settle-task"),
			// Issue 22 item 6: headroom below the window is Violated.
			want: want{verdict: Violated, cursor: true, violations: []violationWant{
				{ClauseRetentionCoversWindow, ReasonRecoveryHeadroomShorterThanWindow, "settle-task", 0},
			}},
			also: func(t *testing.T, r Result) {
				if !r.HasRecoveryHeadroom || r.RecoveryHeadroom != 5*day {
					t.Errorf("recoveryHeadroom %v (%v), want 120h from the cursor's record", r.RecoveryHeadroom, r.HasRecoveryHeadroom)
				}
				if len(r.Warnings) != 1 || r.Warnings[0].Type != WarningRecoveryHeadroom {
					t.Errorf("warnings %+v", r.Warnings)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Evaluate(c.obs, c.policy, now)
			c.want.check(t, r)
			if c.also != nil {
				c.also(t, r)
			}
		})
	}
}

// Every bad input is CursorUnreadable (Unknown, fail closed), with a
// message naming the problem, never a pass.
func TestCursorUnreadable(t *testing.T) {
	two := func() Observation {
		return observation(topic("settle-task", part(0, 0, 600, 600), part(1, 0, 600, 600)), topic("refund-task", part(0, 0, 10, 10)))
	}
	one := func() Observation {
		return observation(topic("settle-task", part(0, 0, 600, 600), part(1, 0, 600, 600)))
	}
	rows := func(o Observation, hasTopic bool, rs ...CursorRow) Observation {
		o.Cursor = CursorObservation{Read: true, HasTopic: hasTopic, Rows: rs}
		return o
	}
	cases := []struct {
		name   string
		obs    Observation
		topics []string
		want   string
	}{
		{"the reader's problem", func() Observation {
			o := one()
			o.Cursor = CursorObservation{Problem: `cannot connect to 127.0.0.1:5432: connection refused`}
			return o
		}(), []string{"settle-task"}, "the business cursor could not be read: cannot connect to 127.0.0.1:5432: connection refused"},
		{"not read", one(), []string{"settle-task"}, "the business cursor was not read"},
		{"no topic column with two topics", rows(two(), false, CursorRow{Partition: 0, NextOffset: 5}),
			[]string{"settle-task", "refund-task"}, "the query returns no topic column, and the proof covers 2 topics (refund-task, settle-task): add a topic column"},
		{"a topic the policy does not cover", rows(one(), true, CursorRow{Topic: "other", Partition: 0, NextOffset: 5}),
			[]string{"settle-task"}, `a row names topic "other", which the policy does not cover (settle-task): filter the query by topic`},
		{"an empty topic", rows(one(), true, CursorRow{Partition: 0, NextOffset: 5}),
			[]string{"settle-task"}, "a row has an empty topic"},
		{"a partition the topic does not have", rows(one(), false, CursorRow{Partition: 30, NextOffset: 5}, CursorRow{Partition: 31, NextOffset: 5}),
			[]string{"settle-task"}, "a row names settle-task[30], which the topic does not have (2 partitions, 0-1) (and 1 more row like it)"},
		{"a negative partition", rows(one(), false, CursorRow{Partition: -1, NextOffset: 5}),
			[]string{"settle-task"}, "a row names settle-task[-1], which the topic does not have"},
		{"a negative offset", rows(one(), false, CursorRow{Partition: 1, NextOffset: -3}),
			[]string{"settle-task"}, "the row for settle-task[1] has next_offset -3, and an offset is never negative"},
		{"a duplicate partition", rows(one(), false, CursorRow{Partition: 1, NextOffset: 5}, CursorRow{Partition: 1, NextOffset: 7}),
			[]string{"settle-task"}, "several rows name settle-task[1]: the query must return one row per partition"},
	}
	for _, c := range cases {
		for _, resume := range []string{ResumeFromCursor, ResumeFromGroupOffsets} {
			t.Run(c.name+"/"+resume, func(t *testing.T) {
				r := Evaluate(c.obs, cursorPolicy(resume, c.topics...), now)
				if r.Verdict != Unknown {
					t.Fatalf("verdict %s, want Unknown (fail closed); violations %+v", r.Verdict, r.Violations)
				}
				cond := conditionOf(t, r, ClauseCursorInRange)
				if cond.Status != ConditionUnknown || cond.Reason != ReasonCursorUnreadable || !strings.Contains(cond.Message, c.want) {
					t.Errorf("CursorInRange = %s/%s %q\nwant Unknown/CursorUnreadable containing %q", cond.Status, cond.Reason, cond.Message, c.want)
				}
				if ready := conditionOf(t, r, ClauseReady); ready.Reason != ReasonCursorUnreadable {
					t.Errorf("Ready reason %s, want CursorUnreadable", ready.Reason)
				}
				for _, p := range r.Partitions {
					if p.Verdict != Unknown || p.Cursor != NoOffset {
						t.Errorf("partition %+v judged by an unreadable cursor", p)
					}
				}
			})
		}
	}
}

// A policy without spec.cursor has no CursorInRange condition and no
// cursor facts; the same gap keeps its proofID when the cursor moves only
// outside the violation, and a new gap of the cursor gets a new one.
func TestCursorProofID(t *testing.T) {
	r := Evaluate(observation(topic("settle-task", part(0, 0, 600, 600))), policy("settle-task"), now)
	if len(r.Conditions) != 5 || r.Cursor != nil {
		t.Fatalf("a policy without a cursor has conditions %+v, cursor %+v", r.Conditions, r.Cursor)
	}
	obs := func(cursor int64, logEnd int64) Observation {
		return withCursor(observation(topic("settle-task", part(0, 150, logEnd, logEnd), part(7, 150, logEnd, logEnd))), map[int64]int64{0: logEnd, 7: cursor})
	}
	p := cursorPolicy(ResumeFromCursor, "settle-task")
	a, b, c := Evaluate(obs(140, 600), p, now), Evaluate(obs(140, 700), p, now), Evaluate(obs(120, 600), p, now)
	if a.ProofID == "" || a.ProofID != b.ProofID {
		t.Errorf("the same gap (cursor 140, log start 150) got proofIDs %q and %q", a.ProofID, b.ProofID)
	}
	if a.ProofID == c.ProofID {
		t.Errorf("a different gap (cursor 120) kept proofID %q", a.ProofID)
	}
}
