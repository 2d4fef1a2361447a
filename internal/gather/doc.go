// Package gather learns what one policy's proof needs, once, for the two
// callers that prove a policy: the reconciler (status.proof) and the
// admission webhook's live check (LiveChecker). Gatherer.Gather checks the
// selector, resolves the connection and the business cursor, builds the
// Kafka target, has the observation through the caller's Observer, and
// gathers beside it the CronJobs the policy selects with their schedule
// gaps (schedule.go) and the unselected consumers: the workloads the
// group's live members run in that the policy's selector misses
// (unselected.go). The two callers differ only in how the observation is
// had: the reconciler asks the Coalescer without waiting
// (Coalescer.RequestSince), the live check waits for one bounded by its
// context (Coalescer.ObserveNow). Proof and ProblemProof assemble and
// render the gathered facts as status.proof for both, so a live proof says
// what the status says.
package gather
