package assemble

import (
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// ScaledToZero is a workload the policy selects that KEDA holds at zero
// while the group has no member (workloads.Index.HeldAtZero): the manager
// reads it, the proof only reports it.
type ScaledToZero struct {
	// Workload is the workload, e.g. Deployment settle, or a ScaledJob.
	Workload rgv1.KindName
	// Scaler is the KEDA object holding it: a ScaledObject, or the
	// ScaledJob itself.
	Scaler rgv1.KindName
	// LastActive is the scaler's status.lastActiveTime; zero when KEDA
	// wrote none.
	LastActive time.Time
}

func (h ScaledToZero) workload() string { return h.Workload.Kind + "/" + h.Workload.Name }
func (h ScaledToZero) scaler() string   { return h.Scaler.Kind + " " + h.Scaler.Name }

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
			Subject: h.workload() + " (" + h.scaler() + ")", Limit: window}
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
	job := h.Scaler.Kind == "ScaledJob"
	if job {
		b.WriteString(h.workload() + ": KEDA's " + h.scaler() + " runs it only on lag")
	} else {
		b.WriteString(h.workload() + ": KEDA's " + h.scaler() + " holds it at zero")
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

// ScaledToZeroStatus is status.proof.scaledToZero: each workload KEDA
// holds at zero (at most maxScaledToZeroWarnings, as the warnings), its
// scaler and the scaler's lastActiveTime, and when the group's offsets
// may expire (res's soonest expiry, while a clock runs), as data.
func ScaledToZeroStatus(held []ScaledToZero, res *proof.Result) []rgv1.ScaledToZeroStatus {
	var out []rgv1.ScaledToZeroStatus
	for i, h := range held {
		if i == maxScaledToZeroWarnings {
			break
		}
		s := rgv1.ScaledToZeroStatus{Workload: h.Workload, Scaler: h.Scaler}
		if !h.LastActive.IsZero() {
			s.LastActiveTime = &metav1.Time{Time: h.LastActive.UTC()}
		}
		if res.OffsetExpiry.HasSoonest {
			s.OffsetsExpireAt = &metav1.Time{Time: res.OffsetExpiry.Soonest.UTC()}
		}
		out = append(out, s)
	}
	return out
}

// scaledToZeroCondition adds to the GroupOffsetsRetained condition's
// message who holds the consumer at zero and when the offsets may expire
// (the first workload, and how many more): the condition a person reads
// first says why the group stays Empty. The verdict and reason stay the
// proof's.
func scaledToZeroCondition(held []ScaledToZero, res *proof.Result, now time.Time) {
	if len(held) == 0 {
		return
	}
	i := slices.IndexFunc(res.Conditions, func(c proof.Condition) bool { return c.Type == proof.ClauseGroupOffsetsRetained })
	if i < 0 {
		return
	}
	h := held[0]
	var b strings.Builder
	b.WriteString(h.workload() + " is held at zero by KEDA's " + h.scaler())
	if !h.LastActive.IsZero() {
		b.WriteString(" (last active " + h.LastActive.UTC().Format(time.RFC3339) + ")")
	}
	b.WriteString(", which starts it only on new lag")
	if more := len(held) - 1; more > 0 {
		b.WriteString(" (and " + strconv.Itoa(more) + " more)")
	}
	e := res.OffsetExpiry
	switch {
	case slices.ContainsFunc(res.Violations, func(v proof.Violation) bool { return v.Reason == proof.ReasonNoCommittedOffset }):
		// Seed 003's end: the offsets expired (or were never committed).
		b.WriteString(": the group has no committed offset to resume from (" + proof.ReasonNoCommittedOffset +
			"), so KEDA's next activation resumes where auto.offset.reset says")
	case !e.HasSoonest:
		b.WriteString(": when the group's offsets expire is not known")
	case !e.Soonest.After(now):
		b.WriteString(": the group's offsets may have expired at " + e.Soonest.UTC().Format(time.RFC3339))
	default:
		b.WriteString(": the group's offsets may expire at " + e.Soonest.UTC().Format(time.RFC3339))
	}
	b.WriteString(" (status.proof.scaledToZero)")
	c := &res.Conditions[i]
	if c.Message != "" {
		c.Message += "; "
	}
	c.Message += b.String()
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
