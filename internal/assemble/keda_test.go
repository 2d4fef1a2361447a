package assemble

import (
	"testing"
	"time"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// Seed 003 under KEDA, before the loss: each workload KEDA holds at zero
// gets a scaledToZero warning with the time left on the group's clock (in
// Duration, so it moves with the clock and travels as data), the
// expiry's time, and what keeps the offsets; without a running clock the
// expiry is said to be unknown, never guessed.
func TestScaledToZeroWarnings(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	held := []ScaledToZero{{Workload: "Deployment/settle", Scaler: "ScaledObject settle"}, {Workload: "ScaledJob/settle-batch", Scaler: "ScaledJob settle-batch"}}
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
