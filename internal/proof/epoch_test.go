package proof

import (
	"strings"
	"testing"
	"time"
)

// Issue 33 item 1, seed 000's silent skip by another road: a partition
// truncated below the group's position (an unclean leader election) that
// grew back past it. The committed offset is in range again; only its
// leader epoch, or a log end the observer saw go down, tells. Offsets 0-4
// in epoch 0, 5-14 in epoch 2 (the leader's log as
// test/realkafka/proof's TestCommitPastItsLeaderEpochIsADivergence builds
// it on a real broker).
func TestCommitEpoch(t *testing.T) {
	seen := now.Add(-time.Hour)
	withEpoch := func(committed int64, epoch, endEpoch int32, end int64) PartitionObservation {
		po := part(0, 0, 15, committed)
		po.CommitEpoch = CommitEpoch{HasEpoch: true, Epoch: epoch, EndKnown: true, EndEpoch: endEpoch, EndOffset: end}
		return po
	}
	// witnessed: the guard first saw the commit in epoch, which the
	// leader now says ends at end (its floor endEpoch); lastCommit is the
	// commit's exact time (zero: not read).
	witnessed := func(po PartitionObservation, epoch, endEpoch int32, end int64, lastCommit time.Time) PartitionObservation {
		po.CommitWitness = CommitWitness{Known: true, Epoch: epoch, SeenAt: seen, EndKnown: true, EndEpoch: endEpoch, EndOffset: end}
		po.LastCommit = lastCommit
		return po
	}
	diverged := func(po PartitionObservation) PartitionObservation {
		po.LogDiverged, po.DivergedFrom, po.DivergedTo, po.DivergedSeenAt = true, 12, 5, seen
		return po
	}
	inRange := func(verdict Verdict, status ConditionStatus, reason string) want {
		return want{verdict: verdict, conditions: map[string]condWant{ClauseOffsetsInRange: {status, reason}, ClauseReady: {status, reason}},
			violations: []violationWant{{ClauseOffsetsInRange, reason, "settle-task", 0}}}
	}
	cases := []struct {
		name     string
		po       PartitionObservation
		want     want
		diverged int64
		says     []string
	}{
		// Issue 32: the consumer validates a commit with its epoch and
		// rewinds (the oracle's false alarms): a risk, not a loss.
		{name: "seed000 diverged: commit 10 in epoch 0, which ends at 5: 5 records read and truncated, the consumer rewinds to 5",
			po: withEpoch(10, 0, 0, 5), want: inRange(Violated, ConditionFalse, ReasonCommittedEpochDiverged), diverged: 5,
			says: []string{"settle-task[0]", "committed offset 10", "leader epoch 0", "ends at offset 5", "5 records", "offsets 5 to 9",
				"rewinds to 5", "LogTruncationException", "nothing is skipped silently", "gone from the log",
				"must be undone", "next commit ends this warning", "--reset-offsets --to-offset 5"}},
		{name: "seed000 diverged: the leader answers an older epoch than the commit's (the floor it knows)",
			po: withEpoch(10, 1, 0, 5), want: inRange(Violated, ConditionFalse, ReasonCommittedEpochDiverged), diverged: 5,
			says: []string{"leader epoch 1", "the last epoch it knows up to it is 0"}},
		{name: "commit 5 in epoch 0 ending at 5: the next record is the first of epoch 2, nothing diverged",
			po: withEpoch(5, 0, 0, 5), want: proven()},
		{name: "commit 10 in the current epoch: the leader answers its log end",
			po: withEpoch(10, 2, 2, 15), want: proven()},
		{name: "commit in an epoch above the leader's: undefined, the consumer stalls",
			po: withEpoch(10, 7, -1, -1), want: inRange(Unknown, ConditionUnknown, ReasonCommittedLeaderEpochUnknown),
			says: []string{"leader epoch 7", "does not know", "--reset-offsets --to-offset"}},
		{name: "epoch end not known (not asked, the leader did not answer): nothing judged",
			po: func() PartitionObservation {
				po := part(0, 0, 15, 10)
				po.CommitEpoch = CommitEpoch{HasEpoch: true, Epoch: 0}
				return po
			}(), want: proven()},
		{name: "seed000 diverged without an epoch: a reset's commit of 10 over a log seen to fall from 12 to 5",
			po: diverged(part(0, 0, 15, 10)), want: inRange(Unknown, ConditionUnknown, ReasonCommittedOffsetOnDivergedLog),
			says: []string{"committed offset 10", "no leader epoch", "from 12 to 5", seen.Format(time.RFC3339), "offsets 5 to 9",
				"auto.offset.reset=none", "--to-offset 5"}},
		{name: "no epoch, the log fell to 5, commit at 5: nothing read above the fall",
			po: diverged(part(0, 0, 15, 5)), want: proven()},
		{name: "an epoch on a log seen to fall: the epoch decides (the consumer validates it)",
			po: diverged(withEpoch(10, 2, 2, 15)), want: proven()},
		{name: "no epoch, no fall witnessed: proven as before",
			po: part(0, 0, 15, 10), want: proven()},
		{name: "seed000 diverged between two passes: a reset's commit of 10, first seen in epoch 0, which now ends at 5, committed before that sighting",
			po: witnessed(part(0, 0, 15, 10), 0, 0, 5, seen.Add(-time.Minute)), want: inRange(Violated, ConditionFalse, ReasonCommittedOffsetDiverged), diverged: 5,
			says: []string{"committed offset 10", "no leader epoch", "in leader epoch 0", seen.Format(time.RFC3339), "ends at offset 5",
				"offsets 5 to 9", "5 records", "auto.offset.reset=none", "--to-offset 5"}},
		{name: "the same without the commit's time: the offset may have been committed again after the regrowth",
			po: witnessed(part(0, 0, 15, 10), 0, 0, 5, time.Time{}), want: inRange(Unknown, ConditionUnknown, ReasonCommittedOffsetOnDivergedLog),
			says: []string{"in leader epoch 0", "ends at offset 5", "commit time is unknown", "offsets 5 to 9", "--to-offset 5"}},
		{name: "the same offset committed again after the sighting: Unknown, not a count",
			po: witnessed(part(0, 0, 15, 10), 0, 0, 5, seen.Add(time.Minute)), want: inRange(Unknown, ConditionUnknown, ReasonCommittedOffsetOnDivergedLog),
			says: []string{"repeats the same offset"}},
		{name: "witnessed in epoch 0, which the leader answers with an older floor ending at 5",
			po: witnessed(part(0, 0, 15, 10), 1, 0, 5, seen.Add(-time.Minute)), want: inRange(Violated, ConditionFalse, ReasonCommittedOffsetDiverged), diverged: 5,
			says: []string{"in leader epoch 1", "the last epoch it knows up to it is 0"}},
		{name: "witnessed in an epoch the leader no longer knows (the topic recreated)",
			po: witnessed(part(0, 0, 15, 10), 4, -1, -1, seen.Add(-time.Minute)), want: inRange(Unknown, ConditionUnknown, ReasonCommittedOffsetOnDivergedLog),
			says: []string{"no longer knows that epoch"}},
		{name: "witnessed in epoch 2, the leader's current: its log end, nothing diverged",
			po: witnessed(part(0, 0, 15, 10), 2, 2, 15, seen.Add(-time.Minute)), want: proven()},
		{name: "witnessed in epoch 0, which ends exactly at the commit: nothing read above it was replaced",
			po: witnessed(part(0, 0, 15, 5), 0, 0, 5, seen.Add(-time.Minute)), want: proven()},
		{name: "a commit with its own epoch: the witness is not asked (the consumer validates the commit's)",
			po: witnessed(withEpoch(10, 2, 2, 15), 0, 0, 5, seen.Add(-time.Minute)), want: proven()},
		{name: "beyond log end keeps its own reason",
			po: withEpoch(20, 0, 0, 5), want: inRange(Violated, ConditionFalse, ReasonCommittedOffsetBeyondLogEnd)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Evaluate(observation(topic("settle-task", tc.po)), policy("settle-task"), now)
			tc.want.check(t, r)
			if len(r.Partitions) != 1 || r.Partitions[0].DivergedRecords != tc.diverged {
				t.Errorf("partitions %+v, want %d diverged records", r.Partitions, tc.diverged)
			}
			if tc.diverged > 0 && (len(r.Violations) != 1 || r.Violations[0].DivergedRecords != tc.diverged || r.Violations[0].Committed != tc.po.Committed) {
				t.Errorf("violations %+v, want the count %d and the committed offset as data", r.Violations, tc.diverged)
			}
			for _, s := range tc.says {
				if len(r.Violations) == 0 || !strings.Contains(r.Violations[0].Message, s) {
					t.Errorf("message lacks %q: %+v", s, r.Violations)
				}
			}
		})
	}
}

// Issue 32: a diverged commit that carries its epoch is a risk (the
// consumer validates it and rewinds: it skips nothing it has not read), an
// epoch-less one dated before the divergence a loss (the consumer resumes
// at it silently); the two that cannot be proven are missing facts
// (Unknown), neither.
func TestCommitEpochReasonsRank(t *testing.T) {
	if !IsRisk(ReasonCommittedEpochDiverged) || IsLoss(ReasonCommittedEpochDiverged) || missingFact(ReasonCommittedEpochDiverged) {
		t.Errorf("%s: want a risk (Violated)", ReasonCommittedEpochDiverged)
	}
	if !IsLoss(ReasonCommittedOffsetDiverged) || IsRisk(ReasonCommittedOffsetDiverged) {
		t.Errorf("%s: want a loss", ReasonCommittedOffsetDiverged)
	}
	for _, r := range []string{ReasonCommittedLeaderEpochUnknown, ReasonCommittedOffsetOnDivergedLog} {
		if IsLoss(r) || IsRisk(r) || !missingFact(r) {
			t.Errorf("%s: want a missing fact, neither loss nor risk", r)
		}
	}
}

// Issue 32, seed 000's diverged log read two ways: a commit of 10 that
// carries epoch 0 (ending at 5) is a risk, Ready's reason and the whole
// verdict's, while the same offset committed without an epoch, first seen
// in epoch 0 and dated before that sighting, is a loss that ranks first
// beside it on another partition. Each remedy the risk's message offers
// ends it: the group's next commit (its consumer, rewound to 5, commits 5
// in epoch 0, or further in epoch 2) and a reset to 5 (no epoch, a new
// offset: seen in epoch 2, which ends at the log end).
func TestCommitEpochDivergedIsARisk(t *testing.T) {
	seen := now.Add(-time.Hour)
	withEpoch := func(p int32, committed int64, epoch int32, end int64) PartitionObservation {
		po := part(p, 0, 15, committed)
		po.CommitEpoch = CommitEpoch{HasEpoch: true, Epoch: epoch, EndKnown: true, EndEpoch: epoch, EndOffset: end}
		return po
	}
	r := Evaluate(observation(topic("settle-task", withEpoch(0, 10, 0, 5))), policy("settle-task"), now)
	if r.Verdict != Violated || len(r.Violations) != 1 || r.Violations[0].Reason != ReasonCommittedEpochDiverged {
		t.Fatalf("%s %+v, want Violated by %s alone", r.Verdict, r.Violations, ReasonCommittedEpochDiverged)
	}
	if ready := conditionOf(t, r, ClauseReady); ready.Reason != ReasonCommittedEpochDiverged || !IsRisk(ready.Reason) {
		t.Errorf("Ready %+v, want the risk %s", ready, ReasonCommittedEpochDiverged)
	}

	epochless := part(1, 0, 15, 10)
	epochless.CommitWitness = CommitWitness{Known: true, Epoch: 0, SeenAt: seen, EndKnown: true, EndEpoch: 0, EndOffset: 5}
	epochless.LastCommit = seen.Add(-time.Minute)
	r = Evaluate(observation(topic("settle-task", withEpoch(0, 10, 0, 5), epochless)), policy("settle-task"), now)
	if r.Verdict != Violated || len(r.Violations) != 2 {
		t.Fatalf("%s %+v, want Violated by two", r.Verdict, r.Violations)
	}
	if ready := conditionOf(t, r, ClauseReady); ready.Reason != ReasonCommittedOffsetDiverged || !IsLoss(ready.Reason) {
		t.Errorf("Ready %+v, want the loss %s first", ready, ReasonCommittedOffsetDiverged)
	}

	// Retention deleted the epoch's end since (log start 8): the consumer
	// rewinds to 5, out of range, and resets past 5 to 7, records it never
	// read: a loss, not a risk.
	gone := part(0, 8, 15, 10)
	gone.CommitEpoch = CommitEpoch{HasEpoch: true, Epoch: 0, EndKnown: true, EndEpoch: 0, EndOffset: 5}
	r = Evaluate(observation(topic("settle-task", gone)), policy("settle-task"), now)
	if r.Verdict != Violated || len(r.Violations) != 1 || r.Violations[0].Reason != ReasonCommittedOffsetExpired {
		t.Fatalf("%s %+v, want Violated by %s", r.Verdict, r.Violations, ReasonCommittedOffsetExpired)
	}
	if got := r.Partitions[0]; got.ExpiredRecords != 3 || got.DivergedRecords != 5 {
		t.Errorf("expired %d, diverged %d records; want 3 (offsets 5 to 7) and 5", got.ExpiredRecords, got.DivergedRecords)
	}
	if ready := conditionOf(t, r, ClauseReady); !IsLoss(ready.Reason) {
		t.Errorf("Ready %+v, want a loss", ready)
	}

	// The memory forgets the old sighting once the offset changes
	// (internal/groupmemory): the reset's offset is first seen in epoch 2.
	reset := part(0, 0, 15, 5)
	reset.CommitWitness = CommitWitness{Known: true, Epoch: 2, SeenAt: now.Add(-time.Minute), EndKnown: true, EndEpoch: 2, EndOffset: 15}
	reset.LastCommit = now.Add(-2 * time.Minute)
	for name, po := range map[string]PartitionObservation{
		"the consumer commits where it rewound, 5 in epoch 0": withEpoch(0, 5, 0, 5),
		"the consumer commits 12 in epoch 2 (the log end 15)": withEpoch(0, 12, 2, 15),
		"reset to 5 without an epoch":                         reset,
	} {
		if r := Evaluate(observation(topic("settle-task", po)), policy("settle-task"), now); r.Verdict != Proven {
			t.Errorf("%s: %s %+v, want Proven", name, r.Verdict, r.Violations)
		}
	}
}

// Issue 33 item 1, found by the oracle (an epoch-less commit on a log an
// unclean election truncated and grew back, Proven by one `check`, the
// Java consumer skipping the replaced records): without an epoch and
// without the group memory's witnessed fall, one observation still sees
// the divergence when the record before the committed offset was appended
// after the commit was written. Seed 000's silent skip by that road.
func TestEpochlessCommitBelowLaterRecords(t *testing.T) {
	committedAt := now.Add(-2 * time.Hour)
	obs := func(preceding time.Time, timestampType, afterMax string, epoch bool) TopicObservation {
		po := part(0, 0, 15, 10)
		po.LastCommit, po.PrecedingTimestamp = committedAt, preceding
		if epoch {
			po.CommitEpoch = CommitEpoch{HasEpoch: true, Epoch: 2, EndKnown: true, EndEpoch: 2, EndOffset: 15}
		}
		to := topic("settle-task", po)
		if timestampType != "" {
			to.TimestampType = ConfigValue{Present: true, Value: timestampType}
		}
		if afterMax != "" {
			to.TimestampAfterMaxMs = ConfigValue{Present: true, Value: afterMax}
		}
		return to
	}
	onDiverged := want{verdict: Unknown,
		conditions: map[string]condWant{ClauseOffsetsInRange: {ConditionUnknown, ReasonCommittedOffsetOnDivergedLog}, ClauseReady: {ConditionUnknown, ReasonCommittedOffsetOnDivergedLog}},
		violations: []violationWant{{ClauseOffsetsInRange, ReasonCommittedOffsetOnDivergedLog, "settle-task", 0}}}
	cases := []struct {
		name string
		to   TopicObservation
		want want
		says []string
	}{
		{name: "CreateTime bounded at 1h, the record before stamped 110 min after the commit: appended at least 50 min after",
			to: obs(committedAt.Add(110*time.Minute), "CreateTime", "3600000", false), want: onDiverged,
			says: []string{"committed offset 10", "no leader epoch", "offset 9", "at least 50m", committedAt.UTC().Format(time.RFC3339),
				"auto.offset.reset=none", "--to-datetime " + committedAt.UTC().Format("2006-01-02T15:04:05.000")}},
		{name: "LogAppendTime, appended 5 s after the commit", to: obs(committedAt.Add(5*time.Second), "LogAppendTime", "", false), want: onDiverged},
		{name: "LogAppendTime, 0.5 s after: within the brokers' clock allowance", to: obs(committedAt.Add(500*time.Millisecond), "LogAppendTime", "", false), want: proven()},
		{name: "CreateTime 30 min after, bounded at 1h: the producer's clock may run ahead that far", to: obs(committedAt.Add(30*time.Minute), "CreateTime", "3600000", false), want: proven()},
		{name: "CreateTime unbounded (3.x's default): the record's timestamp says nothing", to: obs(committedAt.Add(110*time.Minute), "CreateTime", "9223372036854775807", false), want: proven()},
		{name: "the record before written before the commit: a consumer read it", to: obs(committedAt.Add(-time.Minute), "LogAppendTime", "", false), want: proven()},
		{name: "a commit with its epoch: the epoch decides", to: obs(committedAt.Add(time.Hour), "LogAppendTime", "", true), want: proven()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Evaluate(observation(tc.to), policy("settle-task"), now)
			tc.want.check(t, r)
			for _, s := range tc.says {
				if len(r.Violations) == 0 || !strings.Contains(r.Violations[0].Message, s) {
					t.Errorf("message lacks %q: %+v", s, r.Violations)
				}
			}
		})
	}
	// Without the exact commit time (the offsets topic not read) nothing
	// dates the commit: the memory's witnessed fall is the only evidence.
	to := obs(committedAt.Add(time.Hour), "LogAppendTime", "", false)
	to.Partitions[0].LastCommit = time.Time{}
	for _, v := range Evaluate(observation(to), policy("settle-task"), now).Violations {
		if v.Reason == ReasonCommittedOffsetOnDivergedLog {
			t.Errorf("no commit time read, yet %+v", v)
		}
	}
}

// Issue 32 follow-up, seed 000's lagging group after an unclean election:
// its commit of 10 carries leader epoch 0, which the leader says ends at
// 5, so the Java consumer rewinds to 5 and re-reads from there. The
// oldest record it has not read is the one at 5: the headroom is measured
// from its timestamp (RewindTimestamp), not the committed record's, on a
// topic of 30 days of retention.ms and a 10-day window. Below the window
// it is RecoveryHeadroomShorterThanWindow beside CommittedEpochDiverged,
// both risks; undated, there is no headroom and the message says so.
func TestRewindHeadroom(t *testing.T) {
	diverged := func(rewind time.Time) PartitionObservation {
		po := part(0, 0, 15, 10)
		po.CommitEpoch = CommitEpoch{HasEpoch: true, Epoch: 0, EndKnown: true, EndEpoch: 0, EndOffset: 5}
		// The record at the committed offset is younger: a headroom from
		// it would say 29 days.
		po.CommittedTimestamp = now.Add(-day)
		po.RewindTimestamp = rewind
		return po
	}
	cases := []struct {
		name        string
		rewind      time.Time
		hasHeadroom bool
		headroom    time.Duration
		shorter     bool     // RecoveryHeadroomShorterThanWindow beside CommittedEpochDiverged
		says        []string // the CommittedEpochDiverged message
		shorterSays []string // the RecoveryHeadroomShorterThanWindow message and the warning
	}{
		{name: "seed000 rewind point written 2 days ago: 28 days of headroom, inside the window's margin",
			rewind: now.Add(-2 * day), hasHeadroom: true, headroom: 28 * day,
			says: []string{"rewinds to 5", "nothing is skipped silently while retention keeps the records from 5 on, until " +
				now.Add(28*day).UTC().Format(time.RFC3339), "the record at 5's timestamp plus retention.ms"}},
		{name: "seed000 rewind point written 25 days ago: 5 days, below the 10-day window",
			rewind: now.Add(-25 * day), hasHeadroom: true, headroom: 5 * day, shorter: true,
			says:        []string{"until " + now.Add(5*day).UTC().Format(time.RFC3339)},
			shorterSays: []string{"settle-task[0]", "offset 5", "rewinds to", "in 120h (5d), sooner than recoveryWindow 240h (10d)"}},
		{name: "seed000 rewind point past retention by a day: deletable any moment",
			rewind: now.Add(-31 * day), hasHeadroom: true, headroom: -day, shorter: true,
			shorterSays: []string{"offset 5", "past retention by 24h (1d)"}},
		{name: "seed000 rewind point not dated: no headroom, not the committed record's",
			says: []string{"nothing is skipped silently while retention keeps the record at 5, whose age was not read"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Evaluate(observation(topic("settle-task", diverged(tc.rewind))), policy("settle-task"), now)
			pr := r.Partitions[0]
			if pr.Reason != ReasonCommittedEpochDiverged || pr.HasHeadroom != tc.hasHeadroom || pr.Headroom != tc.headroom {
				t.Fatalf("partition %s headroom %v (%v), want %s with %v (%v)", pr.Reason, pr.Headroom, pr.HasHeadroom,
					ReasonCommittedEpochDiverged, tc.headroom, tc.hasHeadroom)
			}
			if r.HasRecoveryHeadroom != tc.hasHeadroom || r.RecoveryHeadroom != tc.headroom ||
				(tc.hasHeadroom && !r.RecoveryHeadroomExpiresAt.Equal(now.Add(tc.headroom))) {
				t.Errorf("recovery headroom %v (%v, expires %v), want %v (%v)", r.RecoveryHeadroom, r.HasRecoveryHeadroom,
					r.RecoveryHeadroomExpiresAt, tc.headroom, tc.hasHeadroom)
			}
			reasons := map[string]Violation{}
			for _, v := range r.Violations {
				reasons[v.Reason] = v
				if !IsRisk(v.Reason) {
					t.Errorf("%s: not a risk; admission would change", v.Reason)
				}
			}
			if r.Verdict != Violated || len(r.Violations) != 1+btoi(tc.shorter) {
				t.Fatalf("%s %+v, want Violated by %s (and RecoveryHeadroomShorterThanWindow: %v)", r.Verdict, r.Violations, ReasonCommittedEpochDiverged, tc.shorter)
			}
			for _, s := range tc.says {
				if msg := reasons[ReasonCommittedEpochDiverged].Message; !strings.Contains(msg, s) {
					t.Errorf("message %q does not say %q", msg, s)
				}
			}
			var warning *Warning
			for i := range r.Warnings {
				if r.Warnings[i].Type == WarningRecoveryHeadroom {
					warning = &r.Warnings[i]
				}
			}
			if !tc.shorter {
				if warning != nil {
					t.Errorf("headroom warning %+v, want none", warning)
				}
				return
			}
			v, ok := reasons[ReasonRecoveryHeadroomShorterThanWindow]
			if !ok || v.Topic != "settle-task" || v.Partition != 0 || !v.ExpiresAt.Equal(now.Add(tc.headroom)) {
				t.Fatalf("violations %+v, want %s on settle-task[0] expiring at %v", r.Violations, ReasonRecoveryHeadroomShorterThanWindow, now.Add(tc.headroom))
			}
			if warning == nil || warning.Reason != WarningReasonRewindShorterThanWindow || warning.Offset == nil || *warning.Offset != 5 ||
				warning.Duration != tc.headroom {
				t.Fatalf("warning %+v, want %s at offset 5 for %v", warning, WarningReasonRewindShorterThanWindow, tc.headroom)
			}
			for _, s := range tc.shorterSays {
				if !strings.Contains(v.Message, s) || !strings.Contains(warning.Message, s) {
					t.Errorf("violation %q or warning %q does not say %q", v.Message, warning.Message, s)
				}
			}
			if strings.Contains(v.Message, "committed offset 10 in") || strings.Contains(warning.Message, "committed offset 10") {
				t.Errorf("%q / %q speak of the committed record, not the rewind point", v.Message, warning.Message)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
