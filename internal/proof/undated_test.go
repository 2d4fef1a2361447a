package proof

import (
	"strings"
	"testing"
	"time"
)

// undated is a lagging partition whose committed record the observer could
// not date (cause), with ListOffsets' answer for timestamp at (read when at
// is not zero; offset -1: no record stamped at or after it).
func undated(p PartitionObservation, cause string, at time.Time, offset int64) PartitionObservation {
	p.TimestampUnread = cause
	if !at.IsZero() {
		p.OffsetForTimestampAt, p.OffsetForTimestamp, p.OffsetForTimestampRead = at, offset, true
	}
	return p
}

// Issue 33 item 3 (seed 003's settlement consumer stopped mid-backlog, seed
// 000's lagging consumer): the record at a lagging group's committed
// offset was not dated. Before, the partition was skipped: no headroom,
// nothing stopped Proven. ListOffsets by timestamp T = now + window −
// retention.ms decides when it can (the records from its answer on outlive
// T + retention.ms, those before may not); else the proof is Unknown.
// retention.ms 30 days, window 10 days: T = now − 20 days.
func TestUndatedLaggingRecord(t *testing.T) {
	asked := now.Add(window - 30*day) // the observer's T for this policy
	cases := []struct {
		name     string
		part     PartitionObservation
		policy   func(Policy) Policy
		verdict  Verdict
		reason   string
		message  string        // substring of the violation's message
		headroom time.Duration // -1: none
		warning  string        // the recoveryHeadroom warning's reason, "" none
	}{
		{
			name:    "Fetch denied, ListOffsets not asked: Unknown, the way out is Read",
			part:    undated(part(0, 0, 100, 40), TimestampReadDenied, time.Time{}, 0),
			verdict: Unknown, reason: ReasonRecordTimestampUnread,
			message:  "outbox[0]: the group is 60 records behind committed offset 40 and the timestamp of the record there was not read (Fetch denied: the principal lacks Read on the topic)",
			headroom: -1,
		},
		{
			name: "a tiered broker's empty answer, ListOffsets failed: Unknown, says why",
			part: func() PartitionObservation {
				p := undated(part(0, 0, 100, 40), TimestampNoRecords, time.Time{}, 0)
				p.OffsetForTimestampProblem = "ListOffsets by timestamp failed: REQUEST_TIMED_OUT"
				return p
			}(),
			verdict: Unknown, reason: ReasonRecordTimestampUnread,
			message:  "remote.fetch.max.wait.ms",
			headroom: -1,
		},
		{
			name:     "committed at or after ListOffsets' answer: the record outlives the window, Proven with Describe only",
			part:     undated(part(0, 0, 100, 40), TimestampReadDenied, asked, 40),
			verdict:  Proven,
			headroom: window,
		},
		{
			name:    "committed before ListOffsets' answer: it may be deleted before the window ends (the risk, no figure)",
			part:    undated(part(0, 0, 100, 40), TimestampReadDenied, asked, 41),
			verdict: Violated, reason: ReasonRecoveryHeadroomShorterThanWindow,
			message:  "outbox[0]: retention may delete the record at committed offset 40 before recoveryWindow 240h (10d) ends: it lies before offset 41",
			headroom: 0, warning: WarningReasonMayExpireBeforeWindow,
		},
		{
			name:    "no record stamped late enough (-1): every unread record may go before the window ends",
			part:    undated(part(0, 0, 100, 40), TimestampNoRecords, asked, -1),
			verdict: Violated, reason: ReasonRecoveryHeadroomShorterThanWindow,
			message:  "no record up to log end 100 is stamped late enough",
			headroom: 0, warning: WarningReasonMayExpireBeforeWindow,
		},
		{
			name:    "an answer for a shorter window than the policy's does not prove this one",
			part:    undated(part(0, 0, 100, 40), TimestampReadDenied, asked.Add(-time.Hour), 10),
			verdict: Unknown, reason: ReasonRecordTimestampUnread, headroom: -1,
		},
		{
			name:    "an answer for a longer window does not show a risk within this one",
			part:    undated(part(0, 0, 100, 40), TimestampReadDenied, asked.Add(time.Hour), 41),
			verdict: Unknown, reason: ReasonRecordTimestampUnread, headroom: -1,
		},
		{
			name:     "a caught-up partition needs no timestamp",
			part:     undated(part(0, 0, 100, 100), TimestampReadDenied, time.Time{}, 0),
			verdict:  Proven,
			headroom: 30 * day,
		},
		{
			name:     "a dated record is judged by its timestamp, not ListOffsets",
			part:     withTimestamp(undated(part(0, 0, 100, 40), TimestampReadDenied, asked, 41), now.Add(-day)),
			verdict:  Proven,
			headroom: 29 * day,
		},
		{
			name: "with resumeFrom Cursor the headroom is the cursor's: the committed record's is not judged",
			part: undated(part(0, 0, 100, 40), TimestampReadDenied, time.Time{}, 0),
			policy: func(p Policy) Policy {
				p.Cursor = &CursorPolicy{ResumeFrom: ResumeFromCursor}
				return p
			},
			verdict: Unknown, reason: ReasonCursorUnreadable, headroom: -1,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pol := policy("outbox")
			if c.policy != nil {
				pol = c.policy(pol)
			}
			r := Evaluate(observation(topic("outbox", c.part)), pol, now)
			if r.Verdict != c.verdict {
				t.Fatalf("verdict %s, want %s; violations %+v", r.Verdict, c.verdict, r.Violations)
			}
			if c.reason != "" {
				ready := conditionOf(t, r, ClauseReady)
				if ready.Reason != c.reason {
					t.Fatalf("Ready %+v, want reason %s", ready, c.reason)
				}
			}
			for _, v := range r.Violations {
				if v.Reason == c.reason && !strings.Contains(v.Message, c.message) {
					t.Errorf("message %q, want it to contain %q", v.Message, c.message)
				}
				if v.Reason == ReasonRecoveryHeadroomShorterThanWindow && (!v.ExpiresAt.Equal(now) || v.Committed != NoOffset || v.LogStart != -1) {
					t.Errorf("violation %+v: want expiresAt now (any moment), facts topic and partition only", v)
				}
				if v.Reason == ReasonRecordTimestampUnread && (v.Clause != ClauseRetentionCoversWindow || !strings.Contains(v.Message, "Read on topic outbox")) {
					if c.part.TimestampUnread == TimestampReadDenied {
						t.Errorf("violation %+v: want RetentionCoversWindow's, naming the grant", v)
					}
				}
			}
			pr := r.Partitions[0]
			if (c.headroom == -1) == pr.HasHeadroom || (pr.HasHeadroom && pr.Headroom != c.headroom) {
				t.Errorf("headroom %v (has %v), want %v", pr.Headroom, pr.HasHeadroom, c.headroom)
			}
			var got string
			for _, w := range r.Warnings {
				if w.Type == WarningRecoveryHeadroom {
					got = w.Reason
				}
			}
			if got != c.warning {
				t.Errorf("recoveryHeadroom warning %q, want %q (%+v)", got, c.warning, r.Warnings)
			}
			if c.reason == ReasonRecoveryHeadroomShorterThanWindow && !IsRisk(conditionOf(t, r, ClauseReady).Reason) {
				t.Errorf("Ready's reason is not a risk")
			}
		})
	}
}
