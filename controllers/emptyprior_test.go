package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Seed 003's batch group between runs, met by a manager that has just
// restarted (an upgrade, a node drain): its memory never saw the group go
// Empty, so on its own the proof is Unknown
// (EmptyGroupOffsetsMayExpireBeforeWindow) for every batch group until its
// next run, paging RetentionGuardPolicyUnknown on each upgrade. The
// policy's status remembers what the last manager saw; a lower bound from
// it dates the clock, on the same cluster and generation only.
func TestPriorProofDatesTheEmptyClock(t *testing.T) {
	const gen = 4
	hourAgo := metav1.NewTime(statusNow.Add(-time.Hour))
	prior := func(state, protocolType, cluster string, emptySince *metav1.Time) rgv1.ConsumerRetentionPolicyStatus {
		return rgv1.ConsumerRetentionPolicyStatus{ObservedGeneration: gen, Proof: &rgv1.ProofStatus{
			Verdict: rgv1.VerdictProven, CheckedAt: hourAgo, ClusterID: cluster,
			GroupState: state, GroupProtocol: proof.ProtocolClassic, GroupProtocolType: protocolType, GroupEmptySince: emptySince,
		}}
	}
	ago := func(d time.Duration) *metav1.Time { t := metav1.NewTime(statusNow.Add(-d)); return &t }
	// Empty now, since a time the observer did not see; 7 days of offsets
	// retention (10080 minutes), a 72h window.
	emptyNow := func() proof.Observation {
		o := healthyObs()
		o.ClusterID = "prod-a"
		o.Group.State = proof.GroupStateEmpty
		return o
	}
	for _, tc := range []struct {
		name       string
		cur        rgv1.ConsumerRetentionPolicyStatus
		generation int64
		obs        func() proof.Observation
		want       rgv1.Verdict
		wantSince  *metav1.Time // status.proof.groupEmptySince
	}{
		{"seen Stable an hour ago: Empty after that, 7 days of offsets outlive 72h", prior("Stable", "consumer", "prod-a", nil), gen, emptyNow,
			rgv1.VerdictProven, &hourAgo},
		{"seen Empty, Empty since a day ago: that bound holds", prior("Empty", "consumer", "prod-a", ago(24*time.Hour)), gen, emptyNow,
			rgv1.VerdictProven, ago(24 * time.Hour)},
		{"seen Empty since 5 days ago: 2 days left at least, the window is 3: may expire", prior("Empty", "consumer", "prod-a", ago(5*24*time.Hour)), gen, emptyNow,
			rgv1.VerdictUnknown, ago(5 * 24 * time.Hour)},
		{"seen Empty as a simple group: a member joined since", prior("Empty", "", "prod-a", nil), gen, emptyNow,
			rgv1.VerdictProven, &hourAgo},
		{"seen Empty since a time nobody saw: nothing to date", prior("Empty", "consumer", "prod-a", nil), gen, emptyNow,
			rgv1.VerdictUnknown, nil},
		{"another cluster's proof proves nothing", prior("Stable", "consumer", "prod-b", nil), gen, emptyNow,
			rgv1.VerdictUnknown, nil},
		{"no cluster ID in the last proof", prior("Stable", "consumer", "", nil), gen, emptyNow,
			rgv1.VerdictUnknown, nil},
		{"the policy changed since (another group, another connection)", prior("Stable", "consumer", "prod-a", nil), gen + 1, emptyNow,
			rgv1.VerdictUnknown, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := tc.obs()
			out := computeStatus(tc.cur, statusInput{Generation: tc.generation, Policy: testPolicy(), Now: statusNow, Observation: &obs})
			ps := out.Status.Proof
			if ps.Verdict != tc.want {
				t.Fatalf("verdict %s (%v), want %s", ps.Verdict, ps.Violations, tc.want)
			}
			if tc.want == rgv1.VerdictUnknown && (len(ps.Violations) != 1 || ps.Violations[0].Reason != proof.ReasonEmptyGroupOffsetsMayExpireBeforeWindow) {
				t.Errorf("violations %+v, want only %s", ps.Violations, proof.ReasonEmptyGroupOffsetsMayExpireBeforeWindow)
			}
			switch {
			case tc.wantSince == nil && ps.GroupEmptySince != nil:
				t.Errorf("groupEmptySince %v, want none", ps.GroupEmptySince)
			case tc.wantSince != nil && (ps.GroupEmptySince == nil || !ps.GroupEmptySince.Equal(tc.wantSince)):
				t.Errorf("groupEmptySince %v, want %v (the bound carried on)", ps.GroupEmptySince, tc.wantSince)
			}
			if ps.ClusterID != "prod-a" {
				t.Errorf("clusterID %q, want the observation's", ps.ClusterID)
			}
		})
	}
}
