// Package freshness is the one rule by which a proof in a policy's status
// is recent enough to decide a rollout on without a live check: it was
// last confirmed (its checkedAt, or the renewTime of the heartbeat Lease
// it names) at most 2 × checkInterval + 30s ago, and at most 30s in the
// future (clock skew). The webhook judges status proofs by it; the
// manager writes its window as each heartbeat Lease's
// leaseDurationSeconds.
package freshness

import "time"

// Slack is added to twice the check interval (one check may be missed,
// or late), and tolerated as clock skew for a confirmation in the future.
const Slack = 30 * time.Second

// Window is how long a proof of a policy checked every interval stays
// fresh: 2 × interval + Slack.
func Window(interval time.Duration) time.Duration {
	return 2*interval + Slack
}

// State is what the rule says of a confirmation.
type State int

const (
	// Fresh: confirmed within the window, and not more than Slack ahead.
	Fresh State = iota
	// Stale: confirmed longer ago than the window.
	Stale
	// Future: confirmed more than Slack after now (a skewed clock).
	Future
)

// Of judges a proof last confirmed at confirmed, at now, for a policy
// checked every interval, and returns how old the confirmation is
// (negative when it is in the future).
func Of(confirmed, now time.Time, interval time.Duration) (State, time.Duration) {
	age := now.Sub(confirmed)
	switch {
	case age > Window(interval):
		return Stale, age
	case age < -Slack:
		return Future, age
	}
	return Fresh, age
}
