package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// The end of a policy reconcile, in the shape of Flux's summarize.Helper:
// one patch of the status computed in memory, then result processors that
// act on what was written (heartbeat confirmation, metrics, verdict memory,
// events). Each step is a small function of its inputs.

// reconcileSummary is what one reconcile decided, handed to
// summarizeAndPatch: the policy as it was read (before), the inputs
// gathered and the status computed from them.
type reconcileSummary struct {
	before  *rgv1.ConsumerRetentionPolicy
	in      statusInput
	outcome statusOutcome
}

// summarizeAndPatch writes the computed status (one merge patch, when it
// changed) and then runs the result processors on it: confirm the
// heartbeat, and — for a reconcile that proved (outcome.Result set) —
// record the metrics, swap the remembered verdict, record a transition
// event and log a proof that does not hold. A failed patch stops there:
// nothing is confirmed, counted or announced that was not written.
func (r *ConsumerRetentionPolicyReconciler) summarizeAndPatch(ctx context.Context, policy *rgv1.ConsumerRetentionPolicy, s reconcileSummary) error {
	policy.Status = s.outcome.Status
	if err := r.patchStatus(ctx, s.before, policy); err != nil {
		return fmt.Errorf("patching status: %w", err)
	}
	key := client.ObjectKeyFromObject(policy)
	r.confirm(key, policy, s.in)
	res := s.outcome.Result
	if res == nil {
		return nil
	}
	ready := meta.FindStatusCondition(policy.Status.Conditions, proof.ClauseReady)
	recordPolicyMetrics(key, policy, s.in, ready, res)
	prev := r.verdicts.swap(key, policy.UID, rgv1.Verdict(res.Verdict), statusVerdict(s.before.Status))
	if ready == nil {
		return nil
	}
	// The routine first Proven events share a budget of their own
	// (firstproof.go); the others are always recorded.
	if ev := r.first.event(transitionEvent(prev, s.before.Status, *ready, res)); ev != nil {
		r.Recorder.Eventf(policy, nil, ev.Type, ev.Reason, EventActionProve, "%s", ev.Note)
	}
	if res.Verdict != proof.Proven {
		ctrl.LoggerFrom(ctx).V(1).Info("proof does not hold", "verdict", res.Verdict, "reason", ready.Reason, "proofID", res.ProofID)
	}
	return nil
}

// recordPolicyMetrics sets the policy's gauges from the proof just
// written and its CronJobs' schedule gaps.
func recordPolicyMetrics(key types.NamespacedName, policy *rgv1.ConsumerRetentionPolicy, in statusInput, ready *metav1.Condition, res *proof.Result) {
	metricsState.record(key, policyMetricFacts(policy, in, ready), res)
	metricsState.recordSchedules(key, in.CronJobs)
}

// policyMetricFacts are the labels and figures of the policy's series
// that come from its spec and Ready condition rather than the proof.
func policyMetricFacts(policy *rgv1.ConsumerRetentionPolicy, in statusInput, ready *metav1.Condition) policyFacts {
	facts := policyFacts{GroupID: policy.Spec.GroupID, Enforcement: string(policy.Spec.EnforcementOrDefault()),
		RecoveryWindow: in.Policy.RecoveryWindow}
	if ready != nil {
		facts.ReadyReason = ready.Reason
	}
	return facts
}

// statusVerdict is the verdict a status holds ("" before its first proof).
func statusVerdict(st rgv1.ConsumerRetentionPolicyStatus) rgv1.Verdict {
	if st.Proof == nil {
		return ""
	}
	return st.Proof.Verdict
}

// transitionEvent is the event this reconcile earns, or nil: a verdict
// transition from prev (verdictEvent), else loss while already Violated
// by a risk, judged against Ready's reason in the status before
// (lossEvent).
func transitionEvent(prev rgv1.Verdict, before rgv1.ConsumerRetentionPolicyStatus, ready metav1.Condition, res *proof.Result) *eventSpec {
	if ev := verdictEvent(prev, ready, res); ev != nil {
		return ev
	}
	prevReason := ""
	if c := meta.FindStatusCondition(before.Conditions, proof.ClauseReady); c != nil {
		prevReason = c.Reason
	}
	return lossEvent(prev, prevReason, ready, res)
}
