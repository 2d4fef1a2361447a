package controllers

import (
	"slices"
	"strconv"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/assemble"
	"github.com/retentionguard/retention-guard/internal/gather"
	"github.com/retentionguard/retention-guard/internal/proof"
	"github.com/retentionguard/retention-guard/internal/proofstatus"
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
	// ConsumerGaps are the unselected consumers: the workloads the group's
	// live members run in that the policy does not guard (gathered with an
	// observation); status.proof.configWarnings carries their prose and
	// warningFacts their facts.
	ConsumerGaps []gather.UnselectedConsumer
	// ScaledToZero are the workloads the policy selects that KEDA holds
	// at zero while the group has no member (gathered with the
	// unselected consumers):
	// status.proof.warnings say so, with when the offsets may expire.
	ScaledToZero []assemble.ScaledToZero
}

// statusOutcome is the computed status and the proof result behind it (nil
// while pending: the status then keeps its last proof).
type statusOutcome struct {
	Status rgv1.ConsumerRetentionPolicyStatus
	Result *proof.Result
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
		st.Proof = keepCheckedAt(cur.Proof, ps)
		st.Heartbeat = nil
		if in.HandledRequestedAt != "" {
			st.LastHandledRequestedAt = in.HandledRequestedAt
		}
		return statusOutcome{Status: st, Result: &res}

	case in.Observation != nil:
		res, ps := gather.ObservedProof(assemble.Input{Policy: in.Policy, Observation: *in.Observation, CronJobs: in.CronJobs,
			ScaledToZero: in.ScaledToZero, Prior: gather.PriorProof(cur, in.Generation), Now: in.Observation.ObservedAt}, in.ConsumerGaps)
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
		if in.Heartbeat != nil && sameFacts(cur, st) && !refreshDue(cur.Proof, st.Proof, in.Interval) {
			// Nothing a person or the webhook decides on changed: the
			// status stays as it is (no write; its messages and numbers
			// are as of its checkedAt), and the heartbeat confirms it. A
			// requested re-check that this observation answers is a
			// change: the fresh proof is written with it.
			st = *cur.DeepCopy()
		}
		return statusOutcome{Status: st, Result: &res}
	}

	if cur.Proof != nil && cur.ObservedGeneration == in.Generation &&
		!meta.IsStatusConditionTrue(cur.Conditions, ConditionStalled) {
		return statusOutcome{Status: st}
	}
	msg := "observing the brokers for the first proof of generation " + strconv.FormatInt(in.Generation, 10)
	setCondition(&st.Conditions, metav1.Condition{
		Type: ConditionReconciling, Status: metav1.ConditionTrue, Reason: ReasonProofPending, Message: msg,
	}, in.Generation, now)
	setCondition(&st.Conditions, metav1.Condition{
		Type: proof.ClauseReady, Status: metav1.ConditionUnknown, Reason: ReasonProofPending, Message: msg,
	}, in.Generation, now)
	meta.RemoveStatusCondition(&st.Conditions, ConditionStalled)
	return statusOutcome{Status: st}
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
	c.Message = truncate(c.Message, maxConditionMessage)
	c.ObservedGeneration = generation
	c.LastTransitionTime = now
	meta.SetStatusCondition(conds, c)
}

// keepCheckedAt keeps the previous checkedAt when nothing else in the proof
// changed, so that re-deciding the same spec problem does not patch the
// status again.
func keepCheckedAt(prev, next *rgv1.ProofStatus) *rgv1.ProofStatus {
	if prev == nil || next == nil {
		return next
	}
	a, b := prev.DeepCopy(), next.DeepCopy()
	a.CheckedAt, b.CheckedAt = metav1.Time{}, metav1.Time{}
	if apiequality.Semantic.DeepEqual(a, b) {
		next.CheckedAt = prev.CheckedAt
	}
	return next
}

// sameFacts reports whether next says what cur says, so that cur may stay
// as it is: the same generation, heartbeat, conditions (type, status and
// reason: their messages explain the proof's facts as of checkedAt, and
// some carry live figures such as the total lag), and proof — compared
// without checkedAt; with the durations and the time measured from now
// (recoveryHeadroom, groupOffsetsExpireIn, offsetExpiry.soonestAt, and
// which partition is the soonest, each violation's expiresAt) within
// durationTolerance; with violations compared by their facts (reason,
// topic, partition and numbers, not their messages, which explain them as
// of checkedAt); and with warnings compared by their facts (type, reason,
// subject, offset, the durations they state; the time they foresee from
// now within durationTolerance), not their prose.
// A stopped consumer's headroom shrinks by an interval each check, a live
// one's stays about the same while its commits move its offsets' expiry
// forward: neither is news until it moves by 1%. Anything else — a
// verdict, a reason, a violation or its committed offset, log start,
// cursor or expired records, a topic's configuration, a group's state, a
// new warning — is written at once. A violation's logEnd moves with every
// write to the topic: it is news only when the violation is about it (a
// position beyond log end).
func sameFacts(cur, next rgv1.ConsumerRetentionPolicyStatus) bool {
	if cur.ObservedGeneration != next.ObservedGeneration || !apiequality.Semantic.DeepEqual(cur.Heartbeat, next.Heartbeat) ||
		cur.LastHandledRequestedAt != next.LastHandledRequestedAt || len(cur.Conditions) != len(next.Conditions) {
		return false
	}
	for _, c := range next.Conditions {
		was := meta.FindStatusCondition(cur.Conditions, c.Type)
		if was == nil || was.Status != c.Status || was.Reason != c.Reason || was.ObservedGeneration != c.ObservedGeneration {
			return false
		}
	}
	a, b := cur.Proof, next.Proof
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if !closeDurations(a.RecoveryHeadroom, b.RecoveryHeadroom) ||
		!closeDurations(a.GroupOffsetsExpireIn, b.GroupOffsetsExpireIn) ||
		!closeSoonest(a, b) || !closeViolationExpiries(a, b) || !closeWarningClocks(a, b) {
		return false
	}
	return apiequality.Semantic.DeepEqual(comparableProof(a), comparableProof(b))
}

// statusRefreshEvery is how old an unchanged proof's checkedAt may grow
// before the status is written anyway: the "Proof Age" column (kubectl
// get) and anyone reading the status without its heartbeat Lease see a
// proof at most this old (plus an interval) while a manager is proving it,
// and one far older as stale. Ten intervals, at least an hour: at 5,000
// policies on a one-minute interval, 1.4 writes a second on average.
func statusRefreshEvery(interval time.Duration) time.Duration {
	return max(time.Hour, 10*interval)
}

// refreshDue reports whether next, the same facts as cur, is to be written
// all the same because cur's checkedAt is statusRefreshEvery old.
func refreshDue(cur, next *rgv1.ProofStatus, interval time.Duration) bool {
	return cur != nil && next != nil && next.CheckedAt.Sub(cur.CheckedAt.Time) >= statusRefreshEvery(interval)
}

// comparableProof is p without what sameFacts compares with tolerance or
// not at all: its violations as their facts (no message, no expiresAt, a
// logEnd only when the violation is about it), its warnings as their
// facts without the time they foresee.
func comparableProof(p *rgv1.ProofStatus) *rgv1.ProofStatus {
	c := p.DeepCopy()
	c.CheckedAt, c.RecoveryHeadroom, c.GroupOffsetsExpireIn = metav1.Time{}, nil, nil
	if c.OffsetExpiry != nil {
		c.OffsetExpiry.SoonestAt, c.OffsetExpiry.SoonestPartition = nil, ""
	}
	// Each scaledToZero entry's offsetsExpireAt is offsetExpiry.soonestAt,
	// compared within tolerance by closeSoonest.
	for i := range c.ScaledToZero {
		c.ScaledToZero[i].OffsetsExpireAt = nil
	}
	for i := range c.Violations {
		v := &c.Violations[i]
		// skippedRecords is logEnd − logStart: it moves with every write.
		v.Message, v.ExpiresAt, v.SkippedRecords = "", nil, nil
		if !aboutLogEnd(v.Reason) {
			v.LogEnd = nil
		}
	}
	// Warnings are compared as their facts (warningFacts), the prose
	// rendered from them left out; the time each foresees from now is
	// compared within durationTolerance (closeWarningClocks).
	c.Warnings, c.ConfigWarnings = nil, nil
	for i := range c.WarningFacts {
		c.WarningFacts[i].In = nil
	}
	return c
}

// aboutLogEnd: the violation's reason is a position beyond log end, so
// its logEnd is one of its facts rather than a live figure.
func aboutLogEnd(reason string) bool {
	return reason == proof.ReasonCommittedOffsetBeyondLogEnd || reason == proof.ReasonCursorBeyondLogEnd
}

// closeWarningClocks: the warnings of both proofs (the same number:
// comparableProof compares the rest of their facts) foresee what they
// warn of within durationTolerance of each other — a stopped consumer's
// headroom shrinks by an interval each check, and that alone is not news.
func closeWarningClocks(a, b *rgv1.ProofStatus) bool {
	if len(a.WarningFacts) != len(b.WarningFacts) {
		return false
	}
	for i := range a.WarningFacts {
		if !closeDurations(a.WarningFacts[i].In, b.WarningFacts[i].In) {
			return false
		}
	}
	return true
}

// closeViolationExpiries: the violations of both proofs (the same number:
// comparableProof compares the rest) expire at the same times, within
// durationTolerance of how far each was from cur's checkedAt. An expiry
// bounded by record timestamps moves a little with each check; a commit
// that restarts an offset's clock moves it by hours.
func closeViolationExpiries(a, b *rgv1.ProofStatus) bool {
	if len(a.Violations) != len(b.Violations) {
		return false
	}
	for i := range a.Violations {
		x, y := a.Violations[i].ExpiresAt, b.Violations[i].ExpiresAt
		if x == nil || y == nil {
			if x != y {
				return false
			}
			continue
		}
		d := x.Sub(y.Time)
		if max(d, -d) > durationTolerance(x.Sub(a.CheckedAt.Time)) {
			return false
		}
	}
	return true
}

// closeSoonest: the soonest offset expiry of both proofs is absent, or
// within durationTolerance of how far it was from cur's checkedAt.
func closeSoonest(a, b *rgv1.ProofStatus) bool {
	var x, y *metav1.Time
	if a.OffsetExpiry != nil {
		x = a.OffsetExpiry.SoonestAt
	}
	if b.OffsetExpiry != nil {
		y = b.OffsetExpiry.SoonestAt
	}
	if x == nil || y == nil {
		return x == nil && y == nil
	}
	d := x.Sub(y.Time)
	return max(d, -d) <= durationTolerance(x.Sub(a.CheckedAt.Time))
}

// closeDurations: both absent, or both present and within
// durationTolerance of the first.
func closeDurations(a, b *metav1.Duration) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	d := a.Duration - b.Duration
	return max(d, -d) <= durationTolerance(a.Duration)
}

// durationTolerance is 1% of d, at least a minute.
func durationTolerance(d time.Duration) time.Duration {
	return max(time.Minute, max(d, -d)/100)
}

// truncate shortens s to at most n bytes (proofstatus.Truncate).
func truncate(s string, n int) string { return proofstatus.Truncate(s, n) }
