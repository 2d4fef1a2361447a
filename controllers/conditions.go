package controllers

import "github.com/retentionguard/retention-guard/internal/resolve"

// Condition types kstatus reads, besides the clauses and Ready.
const (
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
)

// ReasonProofPending: the brokers are being observed for the first proof
// of the current spec (condition Reconciling, and Ready Unknown). Like the
// proof's reasons (internal/proof) and the resolver's (internal/resolve),
// it is an API: CamelCase and stable.
const ReasonProofPending = "ProofPending"

// SpecProblem is a problem with the policy or what it references that only
// a person (or another controller) can fix: the policy is Stalled. The
// resolver returns it for connections and cursors; the reconcilers make
// their own (an invalid selector, an invalid discovery pattern) of the same
// type, so the status treats them alike.
type SpecProblem = resolve.SpecProblem
