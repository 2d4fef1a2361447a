// Package writerule is the one rule by which the manager writes a
// policy's status or keeps it as it is: Decide, a pure function of the
// status as it is, the status a reconcile computed, the check interval and
// the first-proof hold, returns write or keep with its reason. The
// webhook's freshness rule (internal/freshness) stays the one rule by
// which a proof is fresh; this one only keeps what that rule relies on.
package writerule

import (
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// The mechanisms that decide when a status is written, and when a proof
// is fresh, with their constants:
//
//	mechanism         constant                       where                         what the freshness rule relies on
//	----------------  -----------------------------  ----------------------------  -------------------------------------------
//	pending hold      PendingGrace = 3s              Decide (ReasonPendingHeld);   nothing: there is no proof of this
//	                                                 the timer: firstProofs,       generation yet; the webhook finds none
//	                                                 controllers/firstproof.go     and checks live
//	same facts        Tolerance: 1% of a duration,   SameFacts (samefacts.go)      a kept status names a Lease that
//	                  at least MinTolerance = 1m                                   confirms it; its figures are as of
//	                                                                               checkedAt
//	forced refresh    RefreshEvery: max(1h,          RefreshDue                    nothing: it keeps checkedAt (Proof Age)
//	                  10 × interval)                                               true for readers without the Lease
//	kept checkedAt    none: the same spec problem    keepCheckedAt                 nothing: a Stalled proof is Unknown and
//	                  keeps its checkedAt                                          names no Lease
//	Lease renewals    heartbeat tick 5s              internal/heartbeat            renewTime: the oldest re-proof of every
//	                                                 (Leases.Confirm, Start)       policy naming the Lease, kept or written
//	freshness window  freshness.Window: 2 × interval internal/freshness (the one   fresh while the later of checkedAt and
//	                  + freshness.Slack (30s)        rule), webhook/freshness.go   renewTime is within the window
//
// What ties them: the status of a fresh observation is kept only when it
// names a heartbeat Lease (ReasonSameFacts); without one every check is
// written (ReasonNoHeartbeat), so its checkedAt alone stays within
// freshness.Window. A kept status is confirmed (Leases.Confirm) as a
// written one is, so the Lease's renewTime carries it.

// PendingGrace is how long a policy waits for its first observation of a
// generation before its pending status (Reconciling, Ready Unknown) is
// written: the Coalescer usually serves it within a pass, and the proof is
// then the policy's first write (issue 26).
const PendingGrace = 3 * time.Second

// MinTolerance is the least a duration measured from now may drift
// before it is news (Tolerance).
const MinTolerance = time.Minute

// Tolerance is how far a duration d measured from now (a headroom, the
// time left before offsets expire) may move between checks before it is
// news: 1% of d, at least MinTolerance.
func Tolerance(d time.Duration) time.Duration {
	return max(MinTolerance, max(d, -d)/100)
}

// RefreshEvery is how old an unchanged proof's checkedAt may grow before
// the status is written anyway: the "Proof Age" column (kubectl get) and
// anyone reading the status without its heartbeat Lease see a proof at
// most this old (plus an interval) while a manager is proving it, and one
// far older as stale. Ten intervals, at least an hour: at 5,000 policies on
// a one-minute interval, 1.4 writes a second on average. It is how often
// an unchanged proof is rewritten at most: a change is written at once.
func RefreshEvery(interval time.Duration) time.Duration {
	return max(time.Hour, 10*interval)
}

// RefreshDue reports whether next, the same facts as cur, is to be written
// all the same because cur's checkedAt is RefreshEvery old at next's.
func RefreshDue(cur, next *rgv1.ProofStatus, interval time.Duration) bool {
	return cur != nil && next != nil && next.CheckedAt.Sub(cur.CheckedAt.Time) >= RefreshEvery(interval)
}

// Learned is what one reconcile learned of its policy.
type Learned int

const (
	// Pending: neither an observation nor a spec problem; one is on its
	// way.
	Pending Learned = iota
	// Observed: a fresh observation, proved.
	Observed
	// SpecProblem: a spec problem keeps the brokers from being observed
	// (the policy is Stalled).
	SpecProblem
)

// Reason says why a status is written or kept.
type Reason string

const (
	// ReasonNewVerdict: the proof's verdict changed (or there was none): written.
	ReasonNewVerdict Reason = "NewVerdict"
	// ReasonFactsChanged: a fact a person or the webhook decides on changed
	// (SameFacts is false): written.
	ReasonFactsChanged Reason = "FactsChanged"
	// ReasonNoHeartbeat: the status names no heartbeat Lease, so nothing else
	// confirms the proof between writes: every check is written.
	ReasonNoHeartbeat Reason = "NoHeartbeat"
	// ReasonRefreshDue: the same facts, but the status's checkedAt is
	// RefreshEvery old: written.
	ReasonRefreshDue Reason = "RefreshDue"
	// ReasonSameFacts: the same facts; the heartbeat Lease confirms them: kept.
	ReasonSameFacts Reason = "SameFacts"
	// ReasonNewSpecProblem: a spec problem the status does not hold yet (or
	// holds for another generation): written, with the last checkedAt when
	// only the generation changed.
	ReasonNewSpecProblem Reason = "NewSpecProblem"
	// ReasonSameSpecProblem: the spec problem the status holds, decided again:
	// kept, checkedAt included.
	ReasonSameSpecProblem Reason = "SameSpecProblem"
	// ReasonProofStands: pending, and the status holds a proof of this
	// generation (a periodic check waits for its pass): kept.
	ReasonProofStands Reason = "ProofStands"
	// ReasonPendingHeld: pending, the status owes the pending conditions, and
	// the first-proof hold (PendingGrace) is on: kept, nothing is
	// summarized; the observation usually comes first.
	ReasonPendingHeld Reason = "PendingHeld"
	// ReasonPendingOwed: pending, the status owes the pending conditions and
	// the hold is over (or there is none): written.
	ReasonPendingOwed Reason = "PendingOwed"
)

// Input is what Decide needs.
type Input struct {
	// Current is the status as it is (read at the start of the reconcile).
	Current rgv1.ConsumerRetentionPolicyStatus
	// Computed is the status the reconcile computed from what it learned.
	Computed rgv1.ConsumerRetentionPolicyStatus
	// Learned is what the reconcile learned.
	Learned Learned
	// Generation is the policy's metadata.generation.
	Generation int64
	// Interval is the policy's checkInterval.
	Interval time.Duration
	// Held: the first-proof hold is on (pending, the pending status owed,
	// within PendingGrace of the first reconcile that waited).
	Held bool
}

// Decision is write or keep, and why.
type Decision struct {
	Write  bool
	Reason Reason
}

// Decide says whether the computed status is written or the current one
// kept, and why, and returns the status to patch to: the computed one
// (a spec problem's with its checkedAt kept when only that changed), or a
// copy of the current one when kept. It modifies neither input.
func Decide(in Input) (rgv1.ConsumerRetentionPolicyStatus, Decision) {
	keep := func(r Reason) (rgv1.ConsumerRetentionPolicyStatus, Decision) {
		return *in.Current.DeepCopy(), Decision{Reason: r}
	}
	write := func(r Reason, st rgv1.ConsumerRetentionPolicyStatus) (rgv1.ConsumerRetentionPolicyStatus, Decision) {
		return st, Decision{Write: true, Reason: r}
	}
	next := in.Computed
	switch in.Learned {
	case SpecProblem:
		next.Proof = keepCheckedAt(in.Current.Proof, next.Proof.DeepCopy())
		if apiequality.Semantic.DeepEqual(in.Current, next) {
			return keep(ReasonSameSpecProblem)
		}
		return write(ReasonNewSpecProblem, next)
	case Observed:
		cur := in.Current.Proof
		switch {
		case cur == nil || next.Proof == nil || cur.Verdict != next.Proof.Verdict:
			return write(ReasonNewVerdict, next)
		case !SameFacts(in.Current, next):
			return write(ReasonFactsChanged, next)
		case next.Heartbeat == nil:
			return write(ReasonNoHeartbeat, next)
		case RefreshDue(cur, next.Proof, in.Interval):
			return write(ReasonRefreshDue, next)
		}
		return keep(ReasonSameFacts)
	}
	switch {
	case !OwesPending(in.Current, in.Generation):
		return keep(ReasonProofStands)
	case in.Held:
		return keep(ReasonPendingHeld)
	}
	return write(ReasonPendingOwed, next)
}

// conditionStalled is kstatus's Stalled condition type (controllers.ConditionStalled).
const conditionStalled = "Stalled"

// OwesPending says whether a reconcile without an observation would write
// the pending status: the status holds no proof of this generation, or it
// is Stalled (a spec problem just fixed). A periodic check waiting for its
// pass writes nothing, and is not held.
func OwesPending(cur rgv1.ConsumerRetentionPolicyStatus, generation int64) bool {
	return cur.Proof == nil || cur.ObservedGeneration != generation || meta.IsStatusConditionTrue(cur.Conditions, conditionStalled)
}

// keepCheckedAt keeps the previous checkedAt when nothing else in the proof
// changed, so that re-deciding the same spec problem does not patch the
// status again. next is modified.
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
