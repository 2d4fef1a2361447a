package webhook

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// Admission contract, "decision": the proof from status is used when
// checked (or confirmed by its heartbeat Lease) within 2 × checkInterval +
// 30s and for the current generation.
func TestStatusProofFreshness(t *testing.T) {
	renewedFor := map[*rgv1.ConsumerRetentionPolicy]time.Time{}
	interval := func(d time.Duration) func(*rgv1.ConsumerRetentionPolicy) {
		return func(p *rgv1.ConsumerRetentionPolicy) { p.Spec.CheckInterval = &metav1.Duration{Duration: d} }
	}
	cases := []struct {
		name       string
		policy     *rgv1.ConsumerRetentionPolicy
		wantFresh  bool
		wantReason string
		wantDetail string
	}{
		{"just checked", settlePolicy(withProof(proven(), 0)), true, "", ""},
		{"at the limit: 2×1m+30s", settlePolicy(withProof(proven(), 150*time.Second)), true, "", ""},
		{"one second past the limit", settlePolicy(withProof(proven(), 151*time.Second)), false, ReasonProofStale, "checked 2m31s ago, limit 2 × checkInterval + 30s = 2m30s"},
		{"default interval when unset", settlePolicy(interval(0), withProof(proven(), 149*time.Second)), true, "", ""},
		{"10m interval allows 20m30s", settlePolicy(interval(10*time.Minute), withProof(proven(), 20*time.Minute)), true, "", ""},
		{"10m interval, 21m old", settlePolicy(interval(10*time.Minute), withProof(proven(), 21*time.Minute)), false, ReasonProofStale, "21m ago"},
		{"no proof yet", settlePolicy(), false, ReasonProofMissing, "no proof"},
		{"proof of an older generation", settlePolicy(withProof(proven(), 0), func(p *rgv1.ConsumerRetentionPolicy) { p.Generation = 2 }),
			false, ReasonProofStale, "generation 1, policy at 2"},
		{"checkedAt slightly in the future (skew)", settlePolicy(withProof(proven(), -20*time.Second)), true, "", ""},
		{"checkedAt far in the future", settlePolicy(withProof(proven(), -5*time.Minute)), false, ReasonProofStale, "5m in the future"},
		{"no checkedAt", settlePolicy(withProof(proven(), 0), func(p *rgv1.ConsumerRetentionPolicy) { p.Status.Proof.CheckedAt = metav1.Time{} }),
			false, ReasonProofStale, "no checkedAt"},
	}
	// The status is written when the proof changes; the manager's heartbeat
	// Lease says when every policy naming it was last re-proved.
	heartbeat := func(p *rgv1.ConsumerRetentionPolicy) {
		p.Status.Heartbeat = &rgv1.HeartbeatReference{Namespace: "retention-guard", Name: "retention-guard-heartbeat-0a1b2c3d4e5f"}
	}
	hbCases := []struct {
		name       string
		policy     *rgv1.ConsumerRetentionPolicy
		renewed    time.Time
		wantFresh  bool
		wantReason string
		wantDetail string
	}{
		{"checked an hour ago, confirmed a minute ago", settlePolicy(withProof(proven(), time.Hour), heartbeat), testNow.Add(-time.Minute), true, "", ""},
		{"confirmed 2m31s ago", settlePolicy(withProof(proven(), time.Hour), heartbeat), testNow.Add(-151 * time.Second), false, ReasonProofStale,
			"last confirmed by heartbeat Lease retention-guard/retention-guard-heartbeat-0a1b2c3d4e5f 2m31s ago"},
		{"a renewal older than checkedAt does not age a new proof", settlePolicy(withProof(proven(), 0), heartbeat), testNow.Add(-time.Hour), true, "", ""},
		{"no Lease: checkedAt alone", settlePolicy(withProof(proven(), time.Hour), heartbeat), time.Time{}, false, ReasonProofStale, "checked 1h ago"},
		{"a Lease the status does not name counts for nothing", settlePolicy(withProof(proven(), time.Hour)), testNow, false, ReasonProofStale, "checked 1h ago"},
		{"renewTime far in the future", settlePolicy(withProof(proven(), time.Hour), heartbeat), testNow.Add(5 * time.Minute), false, ReasonProofStale,
			"renewTime is 5m in the future"},
		{"proof of an older generation, however recent the Lease", settlePolicy(withProof(proven(), 0), heartbeat,
			func(p *rgv1.ConsumerRetentionPolicy) { p.Generation = 2 }), testNow, false, ReasonProofStale, "generation 1, policy at 2"},
	}
	for _, tc := range hbCases {
		cases = append(cases, struct {
			name       string
			policy     *rgv1.ConsumerRetentionPolicy
			wantFresh  bool
			wantReason string
			wantDetail string
		}{tc.name, tc.policy, tc.wantFresh, tc.wantReason, tc.wantDetail})
		renewedFor[tc.policy] = tc.renewed
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fresh, reason, detail := statusProofFreshness(tc.policy, renewedFor[tc.policy], testNow)
			if fresh != tc.wantFresh || reason != tc.wantReason {
				t.Fatalf("fresh=%v reason=%q (%s), want fresh=%v reason=%q", fresh, reason, detail, tc.wantFresh, tc.wantReason)
			}
			if !strings.Contains(detail, tc.wantDetail) {
				t.Errorf("detail %q does not say %q", detail, tc.wantDetail)
			}
		})
	}
}

// The webhook's own Unknown proof ID stays put while the situation does and
// moves with the policy's generation, UID, reason or a newer proof.
func TestWebhookProofIDIsStable(t *testing.T) {
	stale := settlePolicy(withProof(noCommittedOffset(), time.Hour))
	id := webhookProofID(stale, ReasonLiveCheckFailed)
	if len(id) != 8 {
		t.Fatalf("id %q: want 8 hex digits like the proof's own IDs", id)
	}
	if again := webhookProofID(stale.DeepCopy(), ReasonLiveCheckFailed); again != id {
		t.Errorf("same situation, different id: %s vs %s", id, again)
	}
	for name, p := range map[string]*rgv1.ConsumerRetentionPolicy{
		"newer proof":    settlePolicy(withProof(noCommittedOffset(), 30*time.Minute)),
		"new generation": settlePolicy(withProof(noCommittedOffset(), time.Hour), func(p *rgv1.ConsumerRetentionPolicy) { p.Generation = 2 }),
		"other policy":   settlePolicy(withProof(noCommittedOffset(), time.Hour), func(p *rgv1.ConsumerRetentionPolicy) { p.UID = "other" }),
	} {
		if other := webhookProofID(p, ReasonLiveCheckFailed); other == id {
			t.Errorf("%s: id unchanged (%s)", name, id)
		}
	}
	if other := webhookProofID(stale, ReasonProofStale); other == id {
		t.Errorf("another reason kept the id %s", id)
	}
}
