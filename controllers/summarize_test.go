package controllers

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/proof"
	"github.com/retentionguard/retention-guard/internal/testenv"
)

// summarizeFixture is a policy before its first proof and the status
// computed for a healthy group's observation (seed-free: a Proven proof
// is all the processors need).
func summarizeFixture(t *testing.T, patchErr error) (*ConsumerRetentionPolicyReconciler, *events.FakeRecorder, *rgv1.ConsumerRetentionPolicy, reconcileSummary) {
	t.Helper()
	policy := &rgv1.ConsumerRetentionPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "summarize", Name: "orders", UID: "uid-summarize", Generation: 1},
		Spec:       rgv1.ConsumerRetentionPolicySpec{GroupID: "orders", Topics: []string{"orders"}},
	}
	c := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(policy.DeepCopy()).
		WithStatusSubresource(&rgv1.ConsumerRetentionPolicy{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if patchErr != nil {
				return patchErr
			}
			return cl.SubResource(sub).Patch(ctx, o, p, opts...)
		}}).Build()
	rec := events.NewFakeRecorder(10)
	r := &ConsumerRetentionPolicyReconciler{Client: c, Recorder: rec}
	ready := metav1.Condition{Type: proof.ClauseReady, Status: metav1.ConditionTrue, Reason: proof.ReasonProven,
		Message: "proof holds", LastTransitionTime: metav1.NewTime(time.Unix(1_700_000_000, 0))}
	res := &proof.Result{Verdict: proof.Proven, ProofID: "p1"}
	st := rgv1.ConsumerRetentionPolicyStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{ready},
		Proof: &rgv1.ProofStatus{Verdict: rgv1.VerdictProven, ProofID: "p1", CheckedAt: ready.LastTransitionTime}}
	t.Cleanup(func() { metricsState.forget(client.ObjectKeyFromObject(policy)) })
	return r, rec, policy, reconcileSummary{before: policy.DeepCopy(), outcome: statusOutcome{Status: st, Result: res}}
}

// A written proof is announced once: the patch lands, the first proof's
// event is recorded, and the verdict is remembered so the next reconcile
// (whose cached status may still be empty) announces nothing.
func TestSummarizeAndPatchWritesThenAnnounces(t *testing.T) {
	g := NewWithT(t)
	r, rec, policy, s := summarizeFixture(t, nil)
	g.Expect(r.summarizeAndPatch(context.Background(), policy, s)).To(Succeed())

	var got rgv1.ConsumerRetentionPolicy
	g.Expect(r.Client.Get(context.Background(), client.ObjectKeyFromObject(policy), &got)).To(Succeed())
	g.Expect(got.Status.Proof).NotTo(BeNil())
	g.Expect(got.Status.Proof.Verdict).To(Equal(rgv1.VerdictProven))
	g.Expect(rec.Events).To(Receive(ContainSubstring(EventReasonProven)))

	g.Expect(r.summarizeAndPatch(context.Background(), policy, s)).To(Succeed())
	g.Expect(rec.Events).NotTo(Receive(), "the same verdict again is no transition")
}

// A status that cannot be written is not announced: no event, no verdict
// remembered (the retry judges the transition again), and the error says
// it was the patch.
func TestSummarizeAndPatchFailedPatchAnnouncesNothing(t *testing.T) {
	g := NewWithT(t)
	r, rec, policy, s := summarizeFixture(t, errors.New("etcd is down"))
	err := r.summarizeAndPatch(context.Background(), policy, s)
	g.Expect(err).To(MatchError(ContainSubstring("patching status: etcd is down")))
	g.Expect(rec.Events).NotTo(Receive())
	g.Expect(r.verdicts.swap(client.ObjectKeyFromObject(policy), policy.UID, rgv1.VerdictProven, "")).To(Equal(rgv1.Verdict("")),
		"nothing remembered from a proof that was not written")
}

// transitionEvent: a verdict change is verdictEvent's; loss under an
// already Violated verdict is judged against Ready's reason before.
func TestTransitionEvent(t *testing.T) {
	lost := metav1.Condition{Type: proof.ClauseReady, Status: metav1.ConditionFalse, Reason: proof.ReasonCommittedOffsetExpired, Message: "m"}
	res := &proof.Result{Verdict: proof.Violated, ProofID: "abcd1234", Violations: []proof.Violation{
		{Clause: proof.ClauseOffsetsInRange, Reason: proof.ReasonCommittedOffsetExpired, Partition: 0, Message: "7 records expired"},
	}}
	riskBefore := rgv1.ConsumerRetentionPolicyStatus{Conditions: []metav1.Condition{
		{Type: proof.ClauseReady, Status: metav1.ConditionFalse, Reason: proof.ReasonRecoveryHeadroomShorterThanWindow}}}
	lossBefore := rgv1.ConsumerRetentionPolicyStatus{Conditions: []metav1.Condition{
		{Type: proof.ClauseReady, Status: metav1.ConditionFalse, Reason: proof.ReasonCommittedOffsetExpired}}}
	for _, tc := range []struct {
		name       string
		prev       rgv1.Verdict
		before     rgv1.ConsumerRetentionPolicyStatus
		wantReason string // "" for no event
	}{
		{"Proven to Violated (seed 000)", rgv1.VerdictProven, rgv1.ConsumerRetentionPolicyStatus{}, proof.ReasonCommittedOffsetExpired},
		{"a risk turns into loss", rgv1.VerdictViolated, riskBefore, proof.ReasonCommittedOffsetExpired},
		{"the same loss again", rgv1.VerdictViolated, lossBefore, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ev := transitionEvent(tc.prev, tc.before, lost, res)
			if tc.wantReason == "" {
				g.Expect(ev).To(BeNil())
				return
			}
			g.Expect(ev).NotTo(BeNil())
			g.Expect(ev.Reason).To(Equal(tc.wantReason))
		})
	}
}

// The metric labels come from the spec (enforcement defaulted) and Ready.
func TestPolicyMetricFacts(t *testing.T) {
	g := NewWithT(t)
	p := &rgv1.ConsumerRetentionPolicy{Spec: rgv1.ConsumerRetentionPolicySpec{GroupID: "orders"}}
	in := statusInput{Policy: proof.Policy{RecoveryWindow: 7 * 24 * time.Hour}}
	f := policyMetricFacts(p, in, &metav1.Condition{Reason: proof.ReasonProven})
	g.Expect(f).To(Equal(policyFacts{GroupID: "orders", Enforcement: string(rgv1.DefaultEnforcement),
		RecoveryWindow: 7 * 24 * time.Hour, ReadyReason: proof.ReasonProven}))
	g.Expect(policyMetricFacts(p, in, nil).ReadyReason).To(BeEmpty())
	g.Expect(statusVerdict(rgv1.ConsumerRetentionPolicyStatus{})).To(Equal(rgv1.Verdict("")))
}
