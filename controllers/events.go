package controllers

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Event reasons besides the proof's own (a Violated or Unknown event
// carries the reason that decided the verdict, e.g. CommittedOffsetExpired
// or BrokerUnreachable).
const (
	// EventReasonProven: the first proof of a policy holds.
	EventReasonProven = "Proven"
	// EventReasonRecovered: the proof holds again after Violated or
	// Unknown.
	EventReasonRecovered = "Recovered"
	// EventActionProve is the events.k8s.io action of every event.
	EventActionProve = "Prove"
)

// maxEventNote stays under events.k8s.io/v1's 1 KiB limit on note.
const maxEventNote = 1000

// eventSpec is one event to record on the policy.
type eventSpec struct {
	Type   string // corev1.EventTypeNormal or corev1.EventTypeWarning
	Reason string
	Note   string
}

// verdictEvent decides the event of a verdict transition, or nil when the
// verdict did not change (events mark transitions, not checks). prev is the
// verdict in status before this reconcile ("" for none), ready the Ready
// condition after it, res the proof behind the new verdict.
//
//	→ Violated  Warning, the reason and message (with its numbers) of the
//	            first violation that decided the verdict, how many more,
//	            and the proofID
//	→ Unknown   Warning, Ready's reason and message
//	→ Proven    Normal Recovered (Normal Proven for a policy's first proof)
func verdictEvent(prev rgv1.Verdict, ready metav1.Condition, res *proof.Result) *eventSpec {
	if res == nil {
		return nil
	}
	next := rgv1.Verdict(res.Verdict)
	if next == prev {
		return nil
	}
	was := "first check"
	if prev != "" {
		was = "was " + string(prev)
	}
	switch next {
	case rgv1.VerdictProven:
		if prev == "" {
			return &eventSpec{Type: corev1.EventTypeNormal, Reason: EventReasonProven,
				Note: proof.Truncate("proof holds ("+was+"): "+ready.Message, maxEventNote)}
		}
		return &eventSpec{Type: corev1.EventTypeNormal, Reason: EventReasonRecovered,
			Note: proof.Truncate("recovered, the proof holds again ("+was+"): "+ready.Message, maxEventNote)}

	case rgv1.VerdictViolated:
		return violatedEvent(was, ready, res)

	default:
		return &eventSpec{Type: corev1.EventTypeWarning, Reason: ready.Reason,
			Note: proof.Truncate("proof unknown ("+was+"): "+ready.Message, maxEventNote)}
	}
}

// violatedEvent is the Warning of a Violated proof: the reason and message
// of the violation that decided it, how many more, and the proofID.
func violatedEvent(was string, ready metav1.Condition, res *proof.Result) *eventSpec {
	first := decidingViolation(ready, res.Violations)
	if first < 0 {
		return &eventSpec{Type: corev1.EventTypeWarning, Reason: ready.Reason,
			Note: proof.Truncate("proof violated ("+was+"): "+ready.Message+"; proofID "+res.ProofID, maxEventNote)}
	}
	v := res.Violations[first]
	note := "proof violated (" + was + "): " + v.Message
	if more := len(res.Violations) - 1; more > 0 {
		note += " (and " + proof.Plural(int64(more), "more violation") + ")"
	}
	if res.ExpiredRecords > 0 {
		note += "; " + proof.Plural(res.ExpiredRecords, "record") + " expired in total"
	}
	note += "; proofID " + res.ProofID
	return &eventSpec{Type: corev1.EventTypeWarning, Reason: v.Reason, Note: proof.Truncate(note, maxEventNote)}
}

// lossEvent marks loss that happens while a policy is already Violated by
// a risk (a headroom or an expiry below the window, issue 22): the verdict
// does not change, but Ready's reason turns from a risk to loss (IsLoss, LossRank),
// and that is an event. prevReason is Ready's reason before; nil otherwise.
func lossEvent(prev rgv1.Verdict, prevReason string, ready metav1.Condition, res *proof.Result) *eventSpec {
	if res == nil || prev != rgv1.VerdictViolated || rgv1.Verdict(res.Verdict) != rgv1.VerdictViolated ||
		!proof.IsLoss(ready.Reason) || proof.LossRank(ready.Reason) >= proof.LossRank(prevReason) {
		return nil
	}
	return violatedEvent("was Violated: "+prevReason, ready, res)
}

// decidingViolation is the index of the first violation with Ready's reason
// outside KafkaReachable (the one that made the verdict Violated), else of
// the first violation outside KafkaReachable, else -1.
func decidingViolation(ready metav1.Condition, vs []proof.Violation) int {
	fallback := -1
	for i, v := range vs {
		if v.Clause == proof.ClauseKafkaReachable {
			continue
		}
		if v.Reason == ready.Reason {
			return i
		}
		if fallback < 0 {
			fallback = i
		}
	}
	return fallback
}
