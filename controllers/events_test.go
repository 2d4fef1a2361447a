package controllers

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/proof"
)

func TestVerdictEvent(t *testing.T) {
	evaluate := func(obs proof.Observation) (*proof.Result, metav1.Condition) {
		out := computeStatus(rgv1.ConsumerRetentionPolicyStatus{}, statusInput{
			Generation: 1, Policy: testPolicy(), Now: statusNow, Observation: &obs,
		})
		return out.Result, *condition(out.Status, proof.ClauseReady)
	}
	proven, provenReady := evaluate(healthyObs())
	violated, violatedReady := evaluate(obsWith([3]int64{0, 10, 10}, [3]int64{4200, 5000, 0}, [3]int64{300, 400, 100}))
	unknown, unknownReady := evaluate(proof.Observation{
		ObservedAt: statusNow, Group: proof.GroupObservation{ID: "fanout"},
		Failures: []proof.Failure{{Reason: proof.ReasonBrokerUnreachable, Partition: -1, Message: "cannot connect"}},
	})
	stalled := computeStatus(rgv1.ConsumerRetentionPolicyStatus{}, statusInput{
		Generation: 1, Policy: testPolicy(), Now: statusNow,
		Problem: &SpecProblem{Reason: proof.ReasonBootstrapServerNotAllowed, Message: "bootstrap server evil:9092 is not allowed"},
	})

	cases := []struct {
		name      string
		prev      rgv1.Verdict
		ready     metav1.Condition
		res       *proof.Result
		want      *eventSpec
		noteParts []string
	}{
		{name: "no verdict change, no event", prev: rgv1.VerdictProven, ready: provenReady, res: proven},
		{name: "still violated, no event", prev: rgv1.VerdictViolated, ready: violatedReady, res: violated},
		{name: "pending (no result), no event", prev: rgv1.VerdictProven},
		{
			name: "first proof holds", ready: provenReady, res: proven,
			want:      &eventSpec{Type: corev1.EventTypeNormal, Reason: EventReasonProven},
			noteParts: []string{"proof holds", "first check"},
		},
		{
			name: "Proven to Violated names the first violation and its numbers", prev: rgv1.VerdictProven,
			ready: violatedReady, res: violated,
			want: &eventSpec{Type: corev1.EventTypeWarning, Reason: proof.ReasonCommittedOffsetExpired},
			noteParts: []string{"was Proven", "outbox[1]", "committed offset 0", "log start 4200",
				"4200 records expired", "(and 1 more violation)", "4400 records expired in total", "proofID " + violated.ProofID},
		},
		{
			name: "Proven to Unknown names the reason", prev: rgv1.VerdictProven, ready: unknownReady, res: unknown,
			want:      &eventSpec{Type: corev1.EventTypeWarning, Reason: proof.ReasonBrokerUnreachable},
			noteParts: []string{"proof unknown (was Proven)", "cannot connect"},
		},
		{
			name: "a spec problem on the first check is Unknown with the problem's reason", ready: *condition(stalled.Status, proof.ClauseReady),
			res:       stalled.Result,
			want:      &eventSpec{Type: corev1.EventTypeWarning, Reason: proof.ReasonBootstrapServerNotAllowed},
			noteParts: []string{"first check", "evil:9092"},
		},
		{
			name: "Violated to Proven says recovered", prev: rgv1.VerdictViolated, ready: provenReady, res: proven,
			want:      &eventSpec{Type: corev1.EventTypeNormal, Reason: EventReasonRecovered},
			noteParts: []string{"recovered", "was Violated"},
		},
		{
			name: "Unknown to Proven says recovered", prev: rgv1.VerdictUnknown, ready: provenReady, res: proven,
			want:      &eventSpec{Type: corev1.EventTypeNormal, Reason: EventReasonRecovered},
			noteParts: []string{"recovered", "was Unknown"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ev := verdictEvent(tc.prev, tc.ready, tc.res)
			if tc.want == nil {
				g.Expect(ev).To(BeNil())
				return
			}
			g.Expect(ev).NotTo(BeNil())
			g.Expect(ev.Type).To(Equal(tc.want.Type))
			g.Expect(ev.Reason).To(Equal(tc.want.Reason))
			for _, part := range tc.noteParts {
				g.Expect(ev.Note).To(ContainSubstring(part))
			}
			g.Expect(len(ev.Note)).To(BeNumerically("<=", maxEventNote))
		})
	}
}

func TestVerdictEventNoteIsBounded(t *testing.T) {
	g := NewWithT(t)
	ready := metav1.Condition{Type: proof.ClauseReady, Status: metav1.ConditionUnknown, Reason: proof.ReasonBrokerUnreachable,
		Message: strings.Repeat("x", 5000)}
	ev := verdictEvent(rgv1.VerdictProven, ready, &proof.Result{Verdict: proof.Unknown})
	g.Expect(len(ev.Note)).To(BeNumerically("<=", maxEventNote))
}

// The verdict this process last wrote wins over a status the cache has not
// caught up with, so a transition is announced once.
func TestLastVerdictsOutrunTheCache(t *testing.T) {
	g := NewWithT(t)
	var l lastVerdicts
	key := types.NamespacedName{Namespace: "ns", Name: "policy-1"}
	// After a restart: the status is the reference.
	g.Expect(l.swap(key, "uid-1", rgv1.VerdictViolated, rgv1.VerdictProven)).To(Equal(rgv1.VerdictProven))
	// The cache still shows Proven: the remembered Violated wins.
	g.Expect(l.swap(key, "uid-1", rgv1.VerdictViolated, rgv1.VerdictProven)).To(Equal(rgv1.VerdictViolated))
	// Recreated under the same name: a new UID, the status is the reference.
	g.Expect(l.swap(key, "uid-2", rgv1.VerdictProven, "")).To(Equal(rgv1.Verdict("")))
	l.forget(key)
	g.Expect(l.swap(key, "uid-2", rgv1.VerdictProven, rgv1.VerdictUnknown)).To(Equal(rgv1.VerdictUnknown))
}

// Issue 22 item 6 makes a headroom below the window Violated before any
// loss: when retention then deletes unread records the verdict stays
// Violated, but the loss is an event of its own.
func TestLossEventWhileViolatedByARisk(t *testing.T) {
	g := NewWithT(t)
	lost := metav1.Condition{Type: proof.ClauseReady, Status: metav1.ConditionFalse, Reason: proof.ReasonCommittedOffsetExpired, Message: "m"}
	res := &proof.Result{Verdict: proof.Violated, ProofID: "abcd1234", ExpiredRecords: 7, Violations: []proof.Violation{
		{Clause: proof.ClauseOffsetsInRange, Reason: proof.ReasonCommittedOffsetExpired, Partition: 0, Message: "7 records expired"},
	}}
	ev := lossEvent(rgv1.VerdictViolated, proof.ReasonRecoveryHeadroomShorterThanWindow, lost, res)
	g.Expect(ev).NotTo(BeNil())
	g.Expect(ev.Reason).To(Equal(proof.ReasonCommittedOffsetExpired))
	g.Expect(ev.Note).To(ContainSubstring("was Violated: RecoveryHeadroomShorterThanWindow"))
	g.Expect(ev.Note).To(ContainSubstring("abcd1234"))
	// The same loss on the next check, or a risk after a risk: no event.
	g.Expect(lossEvent(rgv1.VerdictViolated, proof.ReasonCommittedOffsetExpired, lost, res)).To(BeNil())
	risk := lost
	risk.Reason = proof.ReasonOffsetsExpireBeforeWindow
	g.Expect(lossEvent(rgv1.VerdictViolated, proof.ReasonRecoveryHeadroomShorterThanWindow, risk, res)).To(BeNil())
	g.Expect(lossEvent(rgv1.VerdictProven, proof.ReasonProven, lost, res)).To(BeNil(), "a transition is verdictEvent's")
}
