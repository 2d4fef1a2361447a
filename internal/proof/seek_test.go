package proof

import (
	"strings"
	"testing"
	"time"
)

// Issue 22: a partition added to the topic (no committed offset, log start
// 0) is proven — nothing expired — but with spec.consumer the client is
// held to auto.offset.reset=none, which throws
// NoOffsetForPartitionException there (pinned on the real Java client by
// test/realkafka/clients). The proof says the group needs a seek instead
// of calling it a fresh start; without spec.consumer it stays silent, and a
// consumer that resumes from its cursor seeks by itself.
func TestSeekRequiredForAPartitionWithoutCommittedOffset(t *testing.T) {
	obs := observation(topic("orders", part(0, 0, 40, 40), part(1, 0, 35, 35), part(2, 0, 3, NoOffset)))
	now := obs.ObservedAt

	held := policy("orders")
	held.ResetFailsLoudly = true
	r := Evaluate(obs, held, now)
	if r.Verdict != Proven {
		t.Fatalf("verdict %s, want Proven: nothing expired", r.Verdict)
	}
	var seek *Warning
	for i := range r.Warnings {
		if r.Warnings[i].Type == WarningSeekRequired {
			seek = &r.Warnings[i]
		}
	}
	if seek == nil {
		t.Fatalf("no %s warning for orders[2] without a committed offset: %+v", WarningSeekRequired, r.Warnings)
	}
	for _, s := range []string{"orders[2]", "NoOffsetForPartitionException", "--to-earliest", "--group " + held.GroupID} {
		if !strings.Contains(seek.Message, s) {
			t.Errorf("warning %q lacks %q", seek.Message, s)
		}
	}
	if len(seek.Message) > 256 {
		t.Errorf("warning of %d bytes: the status keeps 256", len(seek.Message))
	}
	if ConfigWarning(seek.Type) {
		t.Errorf("%s is a risk at the next start, not configuration advice: admission must repeat it", seek.Type)
	}

	for name, p := range map[string]Policy{
		"without spec.consumer": policy("orders"),
		"resuming from the cursor": func() Policy {
			p := held
			p.Cursor = &CursorPolicy{ResumeFrom: ResumeFromCursor}
			return p
		}(),
	} {
		for _, w := range Evaluate(obs, p, now).Warnings {
			if w.Type == WarningSeekRequired {
				t.Errorf("%s: unexpected %s: %s", name, w.Type, w.Message)
			}
		}
	}

	// Every partition committed: no warning.
	all := observation(topic("orders", part(0, 0, 40, 40)))
	for _, w := range Evaluate(all, held, all.ObservedAt).Warnings {
		if w.Type == WarningSeekRequired {
			t.Errorf("every partition committed: unexpected %s", w.Message)
		}
	}
}

// Seed 003 on a young topic: the group's offsets expired while it was
// Empty, and the log still starts at 0. One observation cannot tell that
// from a fresh group, but the manager's observer saw the offset (10) and
// reports it vanished: not a fresh start — a latest restart skips what was
// written since. Without that memory it stays a fresh group.
func TestVanishedOffsetOnALogStartingAtZeroIsNotFresh(t *testing.T) {
	po := part(0, 0, 15, NoOffset)
	fresh := Evaluate(observation(topic("settlements", po)), policy("settlements"), now)
	if fresh.Verdict != Proven {
		t.Fatalf("without memory: %s, want Proven (a fresh group bootstraps from 0)", fresh.Verdict)
	}
	po.OffsetVanished, po.VanishedOffset, po.VanishedSeenAt = true, 10, now.Add(-2*time.Minute)
	r := Evaluate(observation(topic("settlements", po)), policy("settlements"), now)
	if r.Verdict != Violated || len(r.Violations) != 1 || r.Violations[0].Reason != ReasonNoCommittedOffset {
		t.Fatalf("vanished offset: %s %+v, want Violated by %s", r.Verdict, r.Violations, ReasonNoCommittedOffset)
	}
	for _, s := range []string{"had committed 10", "latest skips the 5 records"} {
		if !strings.Contains(r.Violations[0].Message, s) {
			t.Errorf("message %q lacks %q", r.Violations[0].Message, s)
		}
	}
}

// The same vanished offset while the group's coordinator does not answer
// in full in the same check (test/realkafka/faults TestGroupCoordinatorMoved
// without __consumer_offsets read: the new coordinator answered OffsetFetch
// with none while StreamsGroupDescribe said COORDINATOR_LOAD_IN_PROGRESS,
// and the guard said Violated on a group that lost nothing): Unknown, and
// Violated again once the coordinator answers in full.
func TestVanishedOffsetWhileTheCoordinatorMovesIsUnknown(t *testing.T) {
	po := part(0, 0, 10, NoOffset)
	po.OffsetVanished, po.VanishedOffset, po.VanishedSeenAt = true, 6, now.Add(-time.Minute)
	obs := observation(topic("settle-task", po))
	obs.Failures = []Failure{{Reason: ReasonBrokerUnreachable, API: APIStreamsGroupDescribe, Partition: -1,
		Message: "StreamsGroupDescribe: state of group settle: Kafka answered COORDINATOR_LOAD_IN_PROGRESS"}}
	r := Evaluate(obs, policy("settle-task"), now)
	var v *Violation
	for i := range r.Violations {
		if r.Violations[i].Clause == ClauseOffsetsInRange {
			v = &r.Violations[i]
		}
	}
	if r.Verdict != Unknown || v == nil || v.Reason != ReasonNotEvaluated || !strings.Contains(v.Message, "had committed 6") ||
		!strings.Contains(v.Message, "did not answer in full") {
		t.Fatalf("coordinator loading: %s %+v, want Unknown, the offsets-in-range violation %s naming the commit", r.Verdict, r.Violations, ReasonNotEvaluated)
	}
	obs.Failures = nil
	if r := Evaluate(obs, policy("settle-task"), now); r.Verdict != Violated || r.Violations[0].Reason != ReasonNoCommittedOffset {
		t.Fatalf("coordinator settled: %s %+v, want Violated by %s", r.Verdict, r.Violations, ReasonNoCommittedOffset)
	}
}

// Seed 003's group while its coordinator moves (test/realkafka/faults
// TestGroupCoordinatorMoved, on a loaded Apache Kafka 4.4 cluster): the
// broker that took __consumer_offsets over answered OffsetFetch with no
// committed offset for a while, though nothing expired, because it
// answers at a high watermark its followers had not yet moved past the
// commit. The manager remembered the commit of 6 and said Violated (the
// offsets gone); a manager that had just restarted would have said Proven
// (a fresh group bootstraps from 0) — and a latest restart would skip 4
// records. __consumer_offsets still holds the commit with no tombstone
// after it (expiry and deletion write one): Unknown, with or without the
// memory, until the coordinator and the log agree.
func TestCommitTheLogHoldsButTheCoordinatorDoesNotAnswer(t *testing.T) {
	po := part(0, 0, 10, NoOffset)
	po.LoggedOffset, po.LoggedOffsetKnown = 6, true
	for name, vanished := range map[string]bool{"a manager that just started": false, "a manager that saw the commit": true} {
		if vanished {
			po.OffsetVanished, po.VanishedOffset, po.VanishedSeenAt = true, 6, now.Add(-time.Minute)
		}
		r := Evaluate(observation(topic("settle-task", po)), policy("settle-task"), now)
		if r.Verdict != Unknown || len(r.Violations) != 1 || r.Violations[0].Reason != ReasonNotEvaluated {
			t.Fatalf("%s: %s %+v, want Unknown (%s)", name, r.Verdict, r.Violations, ReasonNotEvaluated)
		}
		if msg := r.Violations[0].Message; !strings.Contains(msg, "still holds its commit of 6") {
			t.Errorf("%s: message %q does not name the commit the log holds", name, msg)
		}
	}
}
