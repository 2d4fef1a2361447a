package proof

import "time"

// The exact times read from __consumer_offsets — a commit's
// commitTimestamp, an explicit expireTimestamp, an Empty classic group's
// currentStateTimestamp — are the group coordinator's clock, and the
// coordinator expires offsets by that clock
// (OffsetExpirationConditionImpl.isOffsetExpired compares them with its own
// time.milliseconds()). The guard compares them with its own clock: when
// the coordinator's runs ahead by s, an offset goes s earlier, by the
// guard's clock, than the time read plus offsets.retention.minutes. A
// coordinator behind the guard's clock expires later: nothing to allow for.
//
// The lead is measured where it shows: a record of __consumer_offsets
// stamped after the guard's clock read the answer that carried it
// (OffsetsTopicRead.CoordinatorAhead; the coordinator stamps its records
// with the same clock). A lead is only seen when a record was written
// within it before the read, so the measure is a lower bound; the rest is
// CoordinatorClockAllowance, what clock synchronisation (NTP, chrony, a
// cloud's time service: Kubernetes nodes and brokers are expected to run
// one) keeps hosts within.

// CoordinatorClockAllowance is how far ahead of the guard's clock a
// coordinator's clock is allowed to run beyond what was measured.
const CoordinatorClockAllowance = time.Second

// CoordinatorSkew is how much earlier, by the guard's clock, a coordinator
// may act on a time it stamped: the lead measured plus the allowance.
func CoordinatorSkew(r OffsetsTopicRead) time.Duration {
	return max(r.CoordinatorAhead, 0) + CoordinatorClockAllowance
}

// withinSkew says, of a time left before an expiry that is not before the
// window's end (left ≥ window) yet counts as before it only by the
// coordinator's allowed clock lead, why; "" otherwise.
func withinSkew(left, window, skew time.Duration) string {
	if left < window {
		return ""
	}
	return " (by the guard's clock " + FormatDuration(left-window) + " after it: within the " +
		FormatDuration(skew) + " allowed for the coordinator's clock running ahead of the guard's)"
}
