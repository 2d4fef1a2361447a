package assemble

import (
	"strconv"
	"strings"
	"time"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// ScaledToZero is a workload the policy selects that KEDA holds at zero
// while the group has no member (workloads.Index.HeldAtZero): the manager
// reads it, the proof only reports it.
type ScaledToZero struct {
	// Workload is the workload, e.g. "Deployment/settle".
	Workload string
	// Scaler is the KEDA object holding it, e.g. "ScaledObject settle" or
	// "ScaledJob settle".
	Scaler string
}

// maxScaledToZeroWarnings bounds the scaledToZero warnings in
// status.proof.warnings (a policy selects a few workloads).
const maxScaledToZeroWarnings = 5

// ScaledToZeroWarnings says, for each workload KEDA holds at zero, that
// the group is Empty and when its offsets may expire (res's soonest
// expiry, measured from now): KEDA scales on lag, and a topic quiet for
// offsets.retention.minutes lets the offsets expire before KEDA starts
// the consumer again (seed 003 under KEDA). A warning, never a verdict:
// the proof's own clauses (GroupOffsetsRetained, the Empty-clock risk)
// decide; this names who keeps the group Empty and what keeps its offsets.
func ScaledToZeroWarnings(held []ScaledToZero, res *proof.Result, window time.Duration, now time.Time) []proof.Warning {
	var out []proof.Warning
	for i, h := range held {
		if i == maxScaledToZeroWarnings {
			break
		}
		w := proof.Warning{Type: proof.WarningScaledToZero, Reason: proof.WarningReasonHeldByKEDAExpiryUnknown,
			Subject: h.Workload + " (" + h.Scaler + ")", Limit: window}
		if res.OffsetExpiry.HasSoonest {
			w.Reason, w.Duration = proof.WarningReasonHeldByKEDA, res.OffsetExpiry.Soonest.Sub(now)
		}
		w.Message = scaledToZeroMessage(w, res.OffsetExpiry, h)
		out = append(out, w)
	}
	return out
}

func scaledToZeroMessage(w proof.Warning, e proof.OffsetExpiry, h ScaledToZero) string {
	var b strings.Builder
	job := strings.HasPrefix(h.Scaler, "ScaledJob ")
	if job {
		b.WriteString(h.Workload + ": KEDA's " + h.Scaler + " runs it only on lag")
	} else {
		b.WriteString(h.Workload + ": KEDA's " + h.Scaler + " holds it at zero")
	}
	b.WriteString("; the group has no members")
	switch {
	case w.Reason == proof.WarningReasonHeldByKEDAExpiryUnknown:
		b.WriteString(" and when its offsets expire is not known")
	case w.Duration <= 0:
		b.WriteString(" and its offsets may have expired (" + e.Soonest.UTC().Format(time.RFC3339) + ")")
	default:
		b.WriteString(" and its offsets may expire in " + shortDuration(w.Duration) + " (" + e.Soonest.UTC().Format(time.RFC3339) + ")")
		if w.Duration < w.Limit {
			b.WriteString(", within recoveryWindow")
		}
	}
	if job {
		b.WriteString(". Let a Job run before then (a cron trigger)")
	} else {
		b.WriteString(". Keep a member (minReplicaCount: 1) or add a cron trigger")
	}
	return b.String()
}

// shortDuration renders d in days and hours, or hours and minutes under
// a day, rounded down (the expiry errs early): "6d23h", "5h12m".
func shortDuration(d time.Duration) string {
	const day = 24 * time.Hour
	if d >= day {
		return strconv.FormatInt(int64(d/day), 10) + "d" + strconv.FormatInt(int64(d%day/time.Hour), 10) + "h"
	}
	return strconv.FormatInt(int64(d/time.Hour), 10) + "h" + strconv.FormatInt(int64(d%time.Hour/time.Minute), 10) + "m"
}
