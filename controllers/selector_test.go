package controllers

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/gather"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// A selector that does not parse matches no workload: the webhook guards
// nothing. A policy stored before the CRD refused such selectors (operator
// "in" in lower case read Ready=True, "can be down for recoveryWindow 48h
// and resume without losing a record"), or with a key or value no label
// can have (the CRD cannot check those within CEL's cost budget), is
// Stalled with InvalidSelector naming the selector, never Ready. (Seed 000:
// the rollout that resets to earliest must not pass unguarded.)
func TestInvalidSelectorStallsThePolicy(t *testing.T) {
	expr := func(key string, op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelector {
		return metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	for _, tc := range []struct {
		name     string
		selector metav1.LabelSelector
		names    string // in the message
	}{
		{"operator in lower case", expr("app", "in", "settle"), `"app" in ["settle"]`},
		{"In without values", expr("app", metav1.LabelSelectorOpIn), `"app" In []`},
		{"Exists with values", expr("app", metav1.LabelSelectorOpExists, "settle"), `"app" Exists`},
		{"key with a space", expr("app name", metav1.LabelSelectorOpIn, "settle"), `"app name"`},
		{"value with a slash", expr("app", metav1.LabelSelectorOpIn, "settle/consumer"), `settle/consumer`},
		{"matchLabels value too long", metav1.LabelSelector{MatchLabels: map[string]string{"app": strings.Repeat("s", 64)}}, `"app"`},
		{"empty", metav1.LabelSelector{}, "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			pol := policyWithSelector(tc.selector)
			problem := gather.SelectorProblem(pol)
			g.Expect(problem).NotTo(BeNil())
			g.Expect(problem.Reason).To(Equal(gather.ReasonInvalidSelector))
			g.Expect(problem.Message).To(ContainSubstring(tc.names))

			out := computeStatus(pol.Status, statusInput{Generation: 1, Policy: testPolicy(), Now: statusNow, Problem: problem})
			ready := condition(out.Status, proof.ClauseReady)
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ready.Reason).To(Equal(gather.ReasonInvalidSelector))
			g.Expect(ready.Message).To(ContainSubstring("spec.selector"))
			stalled := condition(out.Status, ConditionStalled)
			g.Expect(stalled).NotTo(BeNil())
			g.Expect(stalled.Reason).To(Equal(gather.ReasonInvalidSelector))
			pol.Status = out.Status
			g.Expect(kstatusOfObject(g, pol, "ConsumerRetentionPolicy").Status).To(Equal(status.FailedStatus))
		})
	}
	for _, sel := range []metav1.LabelSelector{
		{MatchLabels: map[string]string{"app.kubernetes.io/name": "settle", "tier": ""}},
		expr("app", metav1.LabelSelectorOpNotIn, "canary"),
		expr("consumer", metav1.LabelSelectorOpDoesNotExist),
	} {
		if problem := gather.SelectorProblem(policyWithSelector(sel)); problem != nil {
			t.Errorf("selector %v: %v", sel, problem)
		}
	}
}

func policyWithSelector(sel metav1.LabelSelector) *rgv1.ConsumerRetentionPolicy {
	return &rgv1.ConsumerRetentionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "settle", Namespace: "payments", Generation: 1},
		Spec:       rgv1.ConsumerRetentionPolicySpec{GroupID: "ledger-settle-consumer", Topics: []string{"settle-task"}, Selector: sel},
	}
}
