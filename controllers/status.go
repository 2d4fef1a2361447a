package controllers

import (
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/assemble"
	"github.com/retentionguard/retention-guard/internal/gather"
	"github.com/retentionguard/retention-guard/internal/proof"
	"github.com/retentionguard/retention-guard/internal/writerule"
)

// The status is computed here by pure functions of the current status and
// what this reconcile learned, in the habit of Cluster API's
// machineset_controller_status.go: the reconciler gathers, these decide,
// and the reconciler patches once.

// maxConditionMessage stays well under metav1.Condition's 32768.
const maxConditionMessage = 4096

// statusInput is what one reconcile learned. Exactly one of Problem and
// Observation is set, or neither while the proof is pending.
type statusInput struct {
	// Generation is the policy's metadata.generation.
	Generation int64
	// Policy is the spec as the proof sees it.
	Policy proof.Policy
	// Now stamps condition transitions and the proof of a spec problem.
	Now time.Time
	// Problem is a spec problem that keeps the brokers from being
	// observed at all (the policy is Stalled).
	Problem *SpecProblem
	// Observation is a fresh observation of the policy's target.
	Observation *proof.Observation
	// CronJobs are the CronJobs the policy selects, with their schedules'
	// longest gaps (gathered with an observation).
	CronJobs []assemble.CronJob
	// Heartbeat is the Lease that confirms the proof between writes (see
	// Heartbeats); nil when there is none, and the status is then written
	// on every check (checkedAt moves).
	Heartbeat *rgv1.HeartbeatReference
	// Interval and Servers are the policy's checkInterval and the
	// connection's bootstrap servers (for the heartbeat Lease).
	Interval time.Duration
	Servers  []string
	// CursorProblem is a spec problem of spec.cursor (Secret or key
	// missing, host not allowed): Kafka is observed all the same and the
	// proof says CursorUnreadable, and the policy is Stalled while it
	// lasts.
	CursorProblem *SpecProblem
	// HandledRequestedAt is the retentionguard.io/requestedAt value this
	// reconcile answers (with a fresh observation or a spec problem).
	HandledRequestedAt string
	// Unselected are the unselected consumers: the workloads the group's
	// live members run in that the policy does not guard (gathered with an
	// observation); status.proof.configWarnings carries their prose and
	// warningFacts their facts.
	Unselected []gather.UnselectedConsumer
	// ScaledToZero are the workloads the policy selects that KEDA holds
	// at zero while the group has no member (gathered with the
	// unselected consumers):
	// status.proof.warnings say so, with when the offsets may expire.
	ScaledToZero []assemble.ScaledToZero
	// Held: the first-proof hold is on (firstProofs.hold): a pending
	// status owed is not written yet (writerule.ReasonPendingHeld).
	Held bool
}

// statusOutcome is the computed status and the proof result behind it (nil
// while pending: the status then keeps its last proof).
type statusOutcome struct {
	Status rgv1.ConsumerRetentionPolicyStatus
	Result *proof.Result
	// Decision is the write rule's: written or kept, and why.
	Decision writerule.Decision
}

// computeStatus returns the policy's next status.
//
//   - A spec problem: the proof is Unknown with the problem as its only
//     KafkaReachable failure, Ready=False and Stalled=True carry the
//     problem's reason, observedGeneration is current (the problem is the
//     answer for this generation).
//   - An observation: the proof, one condition per clause plus Ready, no
//     Reconciling or Stalled, observedGeneration current. The proof is
//     assembled as every proof is (assemble.Proof): the last proof of this
//     generation dates an Empty group's clock, and the selected CronJobs
//     add their warnings to the proof's, judged against the
//     offsets.retention.minutes just observed.
//   - Neither: when the status already holds a proof of this generation,
//     nothing changes (a periodic re-check is on its way and the last proof
//     stands). Otherwise the first proof of this generation is pending:
//     Reconciling=True and Ready=Unknown (reason ProofPending), Stalled
//     cleared, and observedGeneration left at the generation the proof in
//     status describes.
//
// Whether the status computed is written or the current one kept is the
// write rule's (writerule.Decide: the same facts with a heartbeat, the
// same spec problem, a proof that stands, a pending status held); the
// outcome carries its decision.
func computeStatus(cur rgv1.ConsumerRetentionPolicyStatus, in statusInput) statusOutcome {
	st := *cur.DeepCopy()
	now := metav1.NewTime(in.Now.UTC().Truncate(time.Second))
	switch {
	case in.Problem != nil:
		res, ps := gather.ProblemProof(in.Policy, in.Problem, in.Now)
		// The proof's own Ready (Unknown) is replaced by Ready=False: set
		// only the clauses, so Ready's transition time moves only when its
		// status really changes.
		clauses := slices.DeleteFunc(slices.Clone(res.Conditions), func(c proof.Condition) bool {
			return c.Type == proof.ClauseReady
		})
		setClauseConditions(&st.Conditions, clauses, in.Generation, now)
		setCondition(&st.Conditions, metav1.Condition{
			Type: proof.ClauseReady, Status: metav1.ConditionFalse,
			Reason: in.Problem.Reason, Message: in.Problem.Message,
		}, in.Generation, now)
		setCondition(&st.Conditions, metav1.Condition{
			Type: ConditionStalled, Status: metav1.ConditionTrue,
			Reason: in.Problem.Reason, Message: in.Problem.Message,
		}, in.Generation, now)
		meta.RemoveStatusCondition(&st.Conditions, ConditionReconciling)
		st.ObservedGeneration = in.Generation
		st.Proof = ps
		st.Heartbeat = nil
		if in.HandledRequestedAt != "" {
			st.LastHandledRequestedAt = in.HandledRequestedAt
		}
		return decided(cur, st, in, writerule.SpecProblem, &res)

	case in.Observation != nil:
		res, ps := gather.ObservedProof(assemble.Input{Policy: in.Policy, Observation: *in.Observation, CronJobs: in.CronJobs,
			ScaledToZero: in.ScaledToZero, Prior: gather.PriorProof(cur, in.Generation), Now: in.Observation.ObservedAt}, in.Unselected)
		setClauseConditions(&st.Conditions, res.Conditions, in.Generation, now)
		meta.RemoveStatusCondition(&st.Conditions, ConditionReconciling)
		if in.Policy.Cursor == nil {
			meta.RemoveStatusCondition(&st.Conditions, proof.ClauseCursorInRange)
		}
		if p := in.CursorProblem; p != nil {
			setCondition(&st.Conditions, metav1.Condition{
				Type: ConditionStalled, Status: metav1.ConditionTrue, Reason: p.Reason, Message: p.Message,
			}, in.Generation, now)
		} else {
			meta.RemoveStatusCondition(&st.Conditions, ConditionStalled)
		}
		st.ObservedGeneration = in.Generation
		st.Proof = ps
		if in.HandledRequestedAt != "" {
			st.LastHandledRequestedAt = in.HandledRequestedAt
		}
		st.Heartbeat = in.Heartbeat
		// Written, or kept when nothing a person or the webhook decides on
		// changed and the heartbeat confirms it (internal/writerule). A
		// requested re-check that this observation answers is a change:
		// the fresh proof is written with it.
		return decided(cur, st, in, writerule.Observed, &res)
	}

	msg := "observing the brokers for the first proof of generation " + strconv.FormatInt(in.Generation, 10)
	setCondition(&st.Conditions, metav1.Condition{
		Type: ConditionReconciling, Status: metav1.ConditionTrue, Reason: ReasonProofPending, Message: msg,
	}, in.Generation, now)
	setCondition(&st.Conditions, metav1.Condition{
		Type: proof.ClauseReady, Status: metav1.ConditionUnknown, Reason: ReasonProofPending, Message: msg,
	}, in.Generation, now)
	meta.RemoveStatusCondition(&st.Conditions, ConditionStalled)
	return decided(cur, st, in, writerule.Pending, nil)
}

// decided is the outcome of computeStatus: the computed status st, or cur
// kept as it is, by the write rule (internal/writerule).
func decided(cur, st rgv1.ConsumerRetentionPolicyStatus, in statusInput, learned writerule.Learned, res *proof.Result) statusOutcome {
	next, d := writerule.Decide(writerule.Input{Current: cur, Computed: st, Learned: learned, Generation: in.Generation,
		Interval: in.Interval, Held: in.Held})
	return statusOutcome{Status: next, Result: res, Decision: d}
}

// setClauseConditions sets one condition per clause of the proof, Ready
// included.
func setClauseConditions(conds *[]metav1.Condition, clauses []proof.Condition, generation int64, now metav1.Time) {
	for _, c := range clauses {
		setCondition(conds, metav1.Condition{
			Type:    c.Type,
			Status:  metav1.ConditionStatus(c.Status),
			Reason:  c.Reason,
			Message: c.Message,
		}, generation, now)
	}
}

// setCondition sets c, keeping its last transition time unless its status
// changes. Reason is never empty (the API server requires one).
func setCondition(conds *[]metav1.Condition, c metav1.Condition, generation int64, now metav1.Time) {
	if c.Reason == "" {
		c.Reason = proof.ReasonNotEvaluated
	}
	switch c.Status {
	case metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown:
	default:
		c.Status = metav1.ConditionUnknown
	}
	c.Message = proof.Truncate(c.Message, maxConditionMessage)
	c.ObservedGeneration = generation
	c.LastTransitionTime = now
	meta.SetStatusCondition(conds, c)
}
