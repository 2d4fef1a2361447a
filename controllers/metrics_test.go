package controllers

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// labelsOf returns the label sets of the series of name whose labels
// include labels.
func labelsOf(name string, labels map[string]string) []map[string]string {
	var out []map[string]string
	for _, m := range seriesOf(name, labels) {
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		out = append(out, l)
	}
	return out
}

// The series alerts join on: the recovery window, the info series (group,
// enforcement, Ready's reason) and the offsets expiry with its clock. A
// policy has one series of each at a time: a new clock or reason replaces
// the old series, and a deleted policy has none. The expiries are
// absolute (unix seconds, from the proof's own times), beside the
// deprecated relative gauges, with the same labels.
func TestPolicySeriesFollowTheProof(t *testing.T) {
	g := NewWithT(t)
	m := metricsState // the collector on the registry
	key := types.NamespacedName{Namespace: "metrics-unit", Name: "settle"}
	policy := map[string]string{"namespace": key.Namespace, "policy": key.Name}
	facts := policyFacts{GroupID: "ledger-settle-consumer", Enforcement: "Deny", RecoveryWindow: 72 * time.Hour, ReadyReason: proof.ReasonProven}
	checkedAt := time.Date(2026, 3, 9, 14, 0, 0, 0, time.UTC)
	const (
		offsetsAt  = "retentionguard_group_offsets_expiration_timestamp_seconds"
		offsetsIn  = "retentionguard_group_offsets_expiry_seconds"
		headroomAt = "retentionguard_recovery_headroom_expiration_timestamp_seconds"
		headroomIn = "retentionguard_recovery_headroom_seconds"
	)

	empty := &proof.Result{Verdict: proof.Proven, HasGroupOffsetsExpireIn: true, GroupOffsetsExpireIn: 100 * time.Hour,
		OffsetExpiry:        proof.OffsetExpiry{Clock: proof.ExpiryClockGroupEmpty, HasSoonest: true, Soonest: checkedAt.Add(100 * time.Hour)},
		HasRecoveryHeadroom: true, RecoveryHeadroom: 5*24*time.Hour + 1500*time.Millisecond,
		RecoveryHeadroomExpiresAt: checkedAt.Add(5*24*time.Hour + 1500*time.Millisecond)}
	m.record(key, facts, empty)
	g.Expect(gauge(g, "retentionguard_policy_recovery_window_seconds", policy)).To(Equal((72 * time.Hour).Seconds()))
	g.Expect(labelsOf("retentionguard_policy_info", policy)).To(ConsistOf(map[string]string{
		"namespace": "metrics-unit", "policy": "settle", "consumer_group": "ledger-settle-consumer", "enforcement": "Deny", "reason": "Proven",
	}))
	g.Expect(gauge(g, "retentionguard_policy_info", with(with(with(policy, "consumer_group", "ledger-settle-consumer"),
		"enforcement", "Deny"), "reason", "Proven"))).To(Equal(1.0))
	g.Expect(labelsOf(offsetsAt, policy)).To(ConsistOf(HaveKeyWithValue("clock", "GroupEmpty")))
	g.Expect(gauge(g, offsetsAt, with(policy, "clock", "GroupEmpty"))).To(Equal(float64(checkedAt.Unix() + 100*3600)))
	g.Expect(gauge(g, offsetsIn, with(policy, "clock", "GroupEmpty"))).To(Equal((100 * time.Hour).Seconds()))
	g.Expect(gauge(g, headroomAt, policy)).To(Equal(float64(checkedAt.Unix()+5*24*3600)+1.5), "to the millisecond")
	g.Expect(gauge(g, headroomIn, policy)).To(Equal(5*24*3600 + 1.5))
	// Cardinality unchanged: each absolute gauge has the labels of the
	// relative one it replaces.
	g.Expect(labelsOf(offsetsAt, policy)).To(Equal(labelsOf(offsetsIn, policy)))
	g.Expect(labelsOf(headroomAt, policy)).To(Equal(labelsOf(headroomIn, policy)))

	// The group's offsets now expire per commit, the proof fails and the
	// window changed: one series each, with the new values; no headroom.
	perCommit := &proof.Result{Verdict: proof.Unknown, HasGroupOffsetsExpireIn: true, GroupOffsetsExpireIn: 50 * time.Hour,
		OffsetExpiry: proof.OffsetExpiry{Clock: proof.ExpiryClockLastCommit, HasSoonest: true, Soonest: checkedAt.Add(50 * time.Hour)}}
	facts.ReadyReason, facts.RecoveryWindow = proof.ReasonOffsetsMayExpireBeforeWindow, 96*time.Hour
	m.record(key, facts, perCommit)
	for _, name := range []string{offsetsAt, offsetsIn} {
		g.Expect(labelsOf(name, policy)).To(ConsistOf(HaveKeyWithValue("clock", "LastCommit")), name)
	}
	g.Expect(gauge(g, offsetsAt, with(policy, "clock", "LastCommit"))).To(Equal(float64(checkedAt.Unix() + 50*3600)))
	g.Expect(seriesOf(headroomAt, policy)).To(BeEmpty())
	g.Expect(seriesOf(headroomIn, policy)).To(BeEmpty())
	g.Expect(labelsOf("retentionguard_policy_info", policy)).To(ConsistOf(
		HaveKeyWithValue("reason", "OffsetsMayExpireBeforeWindow")))
	g.Expect(gauge(g, "retentionguard_policy_recovery_window_seconds", policy)).To(Equal((96 * time.Hour).Seconds()))

	// No clock runs (a member joined): no expiry series.
	m.record(key, facts, &proof.Result{Verdict: proof.Proven})
	g.Expect(seriesOf(offsetsAt, policy)).To(BeEmpty())
	g.Expect(seriesOf(offsetsIn, policy)).To(BeEmpty())

	m.record(key, facts, empty)
	m.forget(key)
	for _, name := range []string{"retentionguard_policy_info", "retentionguard_policy_recovery_window_seconds",
		offsetsAt, offsetsIn, headroomAt, headroomIn, "retentionguard_policy_verdict"} {
		g.Expect(seriesOf(name, policy)).To(BeEmpty(), name)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	g.Expect(m.policies).NotTo(HaveKey(key), "forget drops what it remembered of the policy")
}
