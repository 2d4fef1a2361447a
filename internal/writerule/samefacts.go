package writerule

import (
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// SameFacts reports whether next says what cur says, so that cur may stay
// as it is: the same generation, heartbeat, conditions (type, status and
// reason: their messages explain the proof's facts as of checkedAt, and
// some carry live figures such as the total lag), and proof — compared
// without checkedAt; with the durations and the time measured from now
// (recoveryHeadroom, groupOffsetsExpireIn, offsetExpiry.soonestAt, and
// which partition is the soonest, each violation's expiresAt) within
// Tolerance; with violations compared by their facts (reason,
// topic, partition and numbers, not their messages, which explain them as
// of checkedAt); and with warnings compared by their facts (type, reason,
// subject, offset, the durations they state; the time they foresee from
// now within Tolerance), not their prose.
// A stopped consumer's headroom shrinks by an interval each check, a live
// one's stays about the same while its commits move its offsets' expiry
// forward: neither is news until it moves by 1%. Anything else — a
// verdict, a reason, a violation or its committed offset, log start,
// cursor or expired records, a topic's configuration, a group's state, a
// new warning — is written at once. A violation's logEnd moves with every
// write to the topic: it is news only when the violation is about it (a
// position beyond log end).
func SameFacts(cur, next rgv1.ConsumerRetentionPolicyStatus) bool {
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

// comparableProof is p without what SameFacts compares with tolerance or
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
	// compared within Tolerance (closeWarningClocks).
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
// warn of within Tolerance of each other — a stopped consumer's
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
// Tolerance of how far each was from cur's checkedAt. An expiry
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
		if max(d, -d) > Tolerance(x.Sub(a.CheckedAt.Time)) {
			return false
		}
	}
	return true
}

// closeSoonest: the soonest offset expiry of both proofs is absent, or
// within Tolerance of how far it was from cur's checkedAt.
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
	return max(d, -d) <= Tolerance(x.Sub(a.CheckedAt.Time))
}

// closeDurations: both absent, or both present and within
// Tolerance of the first.
func closeDurations(a, b *metav1.Duration) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	d := a.Duration - b.Duration
	return max(d, -d) <= Tolerance(a.Duration)
}
