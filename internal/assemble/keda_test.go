package assemble

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Seed 003 under KEDA, before the loss: each workload KEDA holds at zero
// gets a scaledToZero warning with the time left on the group's clock (in
// Duration, so it moves with the clock and travels as data), the
// expiry's time, and what keeps the offsets; without a running clock the
// expiry is said to be unknown, never guessed.
func TestScaledToZeroWarnings(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	held := []ScaledToZero{
		{Workload: rgv1.KindName{Kind: "Deployment", Name: "settle"}, Scaler: rgv1.KindName{Kind: "ScaledObject", Name: "settle"}},
		{Workload: rgv1.KindName{Kind: "ScaledJob", Name: "settle-batch"}, Scaler: rgv1.KindName{Kind: "ScaledJob", Name: "settle-batch"}},
	}
	window := 72 * time.Hour
	res := proof.Result{OffsetExpiry: proof.OffsetExpiry{Clock: proof.ExpiryClockGroupEmpty, HasSoonest: true, Soonest: now.Add(26*time.Hour + 30*time.Minute)}}
	got := ScaledToZeroWarnings(held, &res, window, now)
	want := []proof.Warning{{
		Type: proof.WarningScaledToZero, Reason: proof.WarningReasonHeldByKEDA, Subject: "Deployment/settle (ScaledObject settle)",
		Duration: 26*time.Hour + 30*time.Minute, Limit: window,
		Message: "Deployment/settle: KEDA's ScaledObject settle holds it at zero; the group has no members and its offsets may expire in 1d2h " +
			"(2026-12-04T14:30:00Z), within recoveryWindow. Keep a member (minReplicaCount: 1) or add a cron trigger",
	}, {
		Type: proof.WarningScaledToZero, Reason: proof.WarningReasonHeldByKEDA, Subject: "ScaledJob/settle-batch (ScaledJob settle-batch)",
		Duration: 26*time.Hour + 30*time.Minute, Limit: window,
		Message: "ScaledJob/settle-batch: KEDA's ScaledJob settle-batch runs it only on lag; the group has no members and its offsets may expire in 1d2h " +
			"(2026-12-04T14:30:00Z), within recoveryWindow. Let a Job run before then (a cron trigger)",
	}}
	if len(got) != len(want) {
		t.Fatalf("got %d warnings, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("warning %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
		if len(got[i].Message) > 256 {
			t.Errorf("warning %d is %d characters: the status cuts it at 256", i, len(got[i].Message))
		}
	}

	unknown := ScaledToZeroWarnings(held[:1], &proof.Result{}, window, now)
	if len(unknown) != 1 || unknown[0].Reason != proof.WarningReasonHeldByKEDAExpiryUnknown || unknown[0].Duration != 0 ||
		unknown[0].Message != "Deployment/settle: KEDA's ScaledObject settle holds it at zero; the group has no members and when its offsets expire is not known. "+
			"Keep a member (minReplicaCount: 1) or add a cron trigger" {
		t.Errorf("no clock: %+v", unknown)
	}
	past := ScaledToZeroWarnings(held[:1], &proof.Result{OffsetExpiry: proof.OffsetExpiry{HasSoonest: true, Soonest: now.Add(-time.Hour)}}, window, now)
	if len(past) != 1 || past[0].Duration != -time.Hour || past[0].Message != "Deployment/settle: KEDA's ScaledObject settle holds it at zero; "+
		"the group has no members and its offsets may have expired (2026-12-03T11:00:00Z). Keep a member (minReplicaCount: 1) or add a cron trigger" {
		t.Errorf("past: %+v", past)
	}
}

// Seed 003 under KEDA (a batch consumer parked at zero, its group Empty):
// status.proof.scaledToZero names the workload, the ScaledObject holding
// it, KEDA's lastActiveTime, and when the offsets may expire, as data;
// the GroupOffsetsRetained condition says the same in words after the
// proof's own message, whose verdict and reason it leaves alone. Past the
// expiry (the offsets expired), the condition says they may have expired;
// with no clock, the time is absent, never guessed.
func TestScaledToZeroStatusAndCondition(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	lastActive := time.Date(2026, 11, 27, 11, 55, 0, 0, time.UTC)
	expiry := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	held := []ScaledToZero{
		{Workload: rgv1.KindName{Kind: "Deployment", Name: "settle"}, Scaler: rgv1.KindName{Kind: "ScaledObject", Name: "settle"}, LastActive: lastActive},
		{Workload: rgv1.KindName{Kind: "ScaledJob", Name: "settle-batch"}, Scaler: rgv1.KindName{Kind: "ScaledJob", Name: "settle-batch"}},
	}
	proven := proof.Condition{Type: proof.ClauseGroupOffsetsRetained, Status: proof.ConditionTrue, Reason: "OffsetsRetentionCoversWindow",
		Message: "offsets.retention.minutes 10080 (7d) covers recoveryWindow 3d"}
	res := proof.Result{
		OffsetExpiry: proof.OffsetExpiry{Clock: proof.ExpiryClockGroupEmpty, HasSoonest: true, Soonest: expiry},
		Conditions:   []proof.Condition{{Type: proof.ClauseKafkaReachable, Status: proof.ConditionTrue, Message: "reached"}, proven},
	}

	st := ScaledToZeroStatus(held, &res)
	want := []rgv1.ScaledToZeroStatus{
		{Workload: held[0].Workload, Scaler: held[0].Scaler, LastActiveTime: &metav1.Time{Time: lastActive}, OffsetsExpireAt: &metav1.Time{Time: expiry}},
		{Workload: held[1].Workload, Scaler: held[1].Scaler, OffsetsExpireAt: &metav1.Time{Time: expiry}},
	}
	if len(st) != len(want) {
		t.Fatalf("status: %+v", st)
	}
	for i := range want {
		g, w := st[i], want[i]
		if g.Workload != w.Workload || g.Scaler != w.Scaler || !g.LastActiveTime.Equal(w.LastActiveTime) || !g.OffsetsExpireAt.Equal(w.OffsetsExpireAt) {
			t.Errorf("status[%d] = %+v, want %+v", i, g, w)
		}
	}

	scaledToZeroCondition(held, &res, now)
	c := res.Conditions[1]
	if c.Status != proven.Status || c.Reason != proven.Reason {
		t.Errorf("the condition's verdict changed: %+v", c)
	}
	if wantMsg := proven.Message + "; Deployment/settle is held at zero by KEDA's ScaledObject settle (last active 2026-11-27T11:55:00Z), " +
		"which starts it only on new lag (and 1 more): the group's offsets may expire at 2026-12-04T12:00:00Z (status.proof.scaledToZero)"; c.Message != wantMsg {
		t.Errorf("condition message:\n got %q\nwant %q", c.Message, wantMsg)
	}
	if res.Conditions[0].Message != "reached" {
		t.Errorf("another clause's message changed: %q", res.Conditions[0].Message)
	}

	// Seed 003's end: a week parked, the offsets expired.
	expired := proof.Result{OffsetExpiry: proof.OffsetExpiry{HasSoonest: true, Soonest: now.Add(-time.Hour)},
		Conditions: []proof.Condition{{Type: proof.ClauseGroupOffsetsRetained, Status: proof.ConditionFalse, Reason: proof.ReasonEmptyGroupOffsetsExpireBeforeWindow, Message: "lost"}}}
	scaledToZeroCondition(held[:1], &expired, now)
	if m := expired.Conditions[0].Message; !strings.HasSuffix(m, "which starts it only on new lag: the group's offsets may have expired at 2026-12-03T11:00:00Z (status.proof.scaledToZero)") {
		t.Errorf("expired: %q", m)
	}
	if st := ScaledToZeroStatus(held[:1], &expired); len(st) != 1 || !st[0].OffsetsExpireAt.Time.Equal(now.Add(-time.Hour)) {
		t.Errorf("expired status: %+v", st)
	}

	// Past it, kfake or the coordinator deleted them: nothing to resume
	// from.
	gone := proof.Result{
		Conditions: []proof.Condition{proven, {Type: proof.ClauseOffsetsInRange, Status: proof.ConditionFalse, Reason: proof.ReasonNoCommittedOffset}},
		Violations: []proof.Violation{{Reason: proof.ReasonNoCommittedOffset, Topic: "settle-task"}},
	}
	scaledToZeroCondition(held[:1], &gone, now)
	if m := gone.Conditions[0].Message; !strings.HasSuffix(m, "which starts it only on new lag: the group has no committed offset to resume from "+
		"(NoCommittedOffset), so KEDA's next activation resumes where auto.offset.reset says (status.proof.scaledToZero)") {
		t.Errorf("offsets gone: %q", m)
	}

	noClock := proof.Result{Conditions: []proof.Condition{proven}}
	scaledToZeroCondition(held[1:], &noClock, now)
	if m := noClock.Conditions[0].Message; !strings.HasSuffix(m, "ScaledJob/settle-batch is held at zero by KEDA's ScaledJob settle-batch, which starts it only on new lag: "+
		"when the group's offsets expire is not known (status.proof.scaledToZero)") {
		t.Errorf("no clock: %q", m)
	}
	if st := ScaledToZeroStatus(held[1:], &noClock); len(st) != 1 || st[0].OffsetsExpireAt != nil || st[0].LastActiveTime != nil {
		t.Errorf("no clock status: %+v", st)
	}

	nothing := proof.Result{Conditions: []proof.Condition{proven}}
	scaledToZeroCondition(nil, &nothing, now)
	if nothing.Conditions[0] != proven {
		t.Errorf("nothing held, the condition changed: %+v", nothing.Conditions[0])
	}
}
