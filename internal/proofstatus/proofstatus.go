// Package proofstatus turns a proof (internal/proof) and the observation it
// was made from into the API's ProofStatus: the one shape shared by a
// policy's status.proof and `retention-guard check --output json`.
package proofstatus

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// MaxViolations is how many violations status.proof lists; the rest are
// counted in violationsOmitted, and by reason in violationsOmittedByReason.
const MaxViolations = 20

// From builds the ProofStatus for a result.
func From(res proof.Result, obs proof.Observation) *rgv1.ProofStatus {
	ps := &rgv1.ProofStatus{
		Verdict:           rgv1.Verdict(res.Verdict),
		ProofID:           res.ProofID,
		CheckedAt:         metav1.NewTime(obs.ObservedAt.UTC().Truncate(time.Second)),
		ClusterID:         obs.ClusterID,
		GroupState:        obs.Group.State,
		GroupProtocol:     obs.Group.Protocol,
		GroupProtocolType: obs.Group.ProtocolType,
		PartitionSummary: rgv1.PartitionSummary{
			Total:     int32(res.Summary.Total),
			InRange:   int32(res.Summary.InRange),
			Expired:   int32(res.Summary.Expired),
			Missing:   int32(res.Summary.Missing),
			BeyondEnd: int32(res.Summary.BeyondEnd),
		},
		ExpiredRecords: res.ExpiredRecords,
	}
	if !obs.Group.EmptySince.IsZero() {
		t := metav1.NewTime(obs.Group.EmptySince.UTC().Truncate(time.Second))
		ps.GroupEmptySince = &t
	}
	ps.OffsetsRetentionMinutes = ConfigInt(obs.OffsetsRetentionMinutes)
	for _, t := range obs.Topics {
		ts := rgv1.TopicRetentionStatus{
			Name:           t.Name,
			RetentionMs:    ConfigInt(t.RetentionMs),
			RetentionBytes: ConfigInt(t.RetentionBytes),
		}
		if t.CleanupPolicy.Present && !t.CleanupPolicy.Null {
			ts.CleanupPolicy = t.CleanupPolicy.Value
		}
		if t.CleanupPolicy.Compacts() {
			ts.DeleteRetentionMs = ConfigInt(t.DeleteRetentionMs)
		}
		ts.Source = cmp.Or(t.RetentionMs.Source, t.RetentionBytes.Source, t.CleanupPolicy.Source)
		ps.Topics = append(ps.Topics, ts)
	}
	if res.HasRecoveryHeadroom {
		ps.RecoveryHeadroom = &metav1.Duration{Duration: res.RecoveryHeadroom.Round(time.Second)}
	}
	if res.HasGroupOffsetsExpireIn {
		ps.GroupOffsetsExpireIn = &metav1.Duration{Duration: res.GroupOffsetsExpireIn.Round(time.Second)}
	}
	if e := res.OffsetExpiry; e.Clock != "" {
		ps.OffsetExpiry = &rgv1.OffsetExpiryStatus{Clock: e.Clock, Exact: e.HasSoonest && e.Exact}
		if e.HasSoonest {
			t := metav1.NewTime(e.Soonest.UTC().Truncate(time.Second))
			ps.OffsetExpiry.SoonestAt = &t
			if e.Partition >= 0 {
				ps.OffsetExpiry.SoonestPartition = e.Topic + "[" + strconv.Itoa(int(e.Partition)) + "]"
			}
		}
	}
	if c := res.Cursor; c != nil {
		ps.Cursor = &rgv1.CursorStatus{ResumeFrom: rgv1.ResumeFrom(c.ResumeFrom), ReplayRecords: c.ReplayRecords, AheadRecords: c.AheadRecords}
	}
	keep := listed(res.Violations)
	for _, i := range keep {
		ps.Violations = append(ps.Violations, violationStatus(res.Violations[i]))
	}
	ps.ViolationsOmitted = int32(len(res.Violations) - len(ps.Violations))
	ps.ViolationsOmittedByReason = omittedByReason(res.Violations, keep)
	var configFacts []rgv1.WarningFact
	for _, w := range res.Warnings {
		if proof.ConfigWarning(w.Type) {
			ps.ConfigWarnings = append(ps.ConfigWarnings, w.Message)
			configFacts = append(configFacts, warningFact(w))
			continue
		}
		ps.Warnings = append(ps.Warnings, w.Message)
		ps.WarningFacts = append(ps.WarningFacts, warningFact(w))
	}
	ps.WarningFacts = append(ps.WarningFacts, configFacts...)
	return ps
}

// warningFact copies a warning's facts (status.proof.warningFacts), its
// durations to the second as the status's others.
func warningFact(w proof.Warning) rgv1.WarningFact {
	f := rgv1.WarningFact{Type: w.Type, Reason: w.Reason, Subject: w.Subject, Detail: w.Detail}
	if w.Offset != nil {
		o := *w.Offset
		f.Offset = &o
	}
	duration := func(d time.Duration) *metav1.Duration {
		if d == 0 {
			return nil
		}
		return &metav1.Duration{Duration: d.Round(time.Second)}
	}
	f.Span, f.Limit = duration(w.Span), duration(w.Limit)
	if proof.ForeseesTime(w.Type) {
		// Foreseen from now: zero is a fact (due now), not an absence.
		f.In = &metav1.Duration{Duration: w.Duration.Round(time.Second)}
	}
	return f
}

// violationStatus copies a violation's facts: the numbers the proof
// marks absent (NoOffset, -1; no expired records; no expiry time) are
// left out.
func violationStatus(v proof.Violation) rgv1.ViolationStatus {
	vs := rgv1.ViolationStatus{Reason: v.Reason, Topic: v.Topic, Message: v.Message}
	if v.Partition >= 0 {
		p := v.Partition
		vs.Partition = &p
	}
	offset := func(n int64) *int64 {
		if n < 0 {
			return nil
		}
		return &n
	}
	vs.Committed, vs.LogStart, vs.LogEnd, vs.Cursor = offset(v.Committed), offset(v.LogStart), offset(v.LogEnd), offset(v.Cursor)
	if v.ExpiredRecords > 0 {
		n := v.ExpiredRecords
		vs.ExpiredRecords = &n
	}
	if v.SkippedRecords > 0 {
		n := v.SkippedRecords
		vs.SkippedRecords = &n
	}
	if v.DivergedRecords > 0 {
		n := v.DivergedRecords
		vs.DivergedRecords = &n
	}
	if !v.ExpiresAt.IsZero() {
		t := metav1.NewTime(v.ExpiresAt.UTC().Truncate(time.Second))
		vs.ExpiresAt = &t
	}
	return vs
}

// listed chooses the violations status.proof lists when there are more
// than MaxViolations, as indexes in the proof's order: first one of each
// reason, loss first (proof.LossRank: the business cursor's facts, then
// the group's), then the rest loss first. A cursor fact is never left out
// behind twenty partitions of expired group offsets, and every kind of
// problem keeps an example.
func listed(vs []proof.Violation) []int {
	idx := make([]int, len(vs))
	for i := range idx {
		idx[i] = i
	}
	if len(vs) <= MaxViolations {
		return idx
	}
	slices.SortStableFunc(idx, func(a, b int) int { return proof.LossRank(vs[a].Reason) - proof.LossRank(vs[b].Reason) })
	var out []int
	taken := make(map[int]bool, MaxViolations)
	seen := map[string]bool{}
	for _, i := range idx {
		if len(out) < MaxViolations && !seen[vs[i].Reason] {
			seen[vs[i].Reason] = true
			taken[i] = true
			out = append(out, i)
		}
	}
	for _, i := range idx {
		if len(out) < MaxViolations && !taken[i] {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out
}

// omittedByReason counts the violations listed leaves out, by reason
// (status.proof.violationsOmittedByReason), loss first as listed orders
// them and by name among equals: nil when none is left out. Counted here,
// over all of the proof's violations, so that what the cut leaves out
// still travels as data — admission needs every reason to tell a proof
// failing only by risks (proof.IsRisk) from one that lost records.
func omittedByReason(vs []proof.Violation, keep []int) []rgv1.ReasonCount {
	if len(keep) == len(vs) {
		return nil
	}
	counts := map[string]int32{}
	kept := 0
	for i, v := range vs {
		if kept < len(keep) && keep[kept] == i {
			kept++
			continue
		}
		counts[v.Reason]++
	}
	out := make([]rgv1.ReasonCount, 0, len(counts))
	for reason, n := range counts {
		out = append(out, rgv1.ReasonCount{Reason: reason, Count: n})
	}
	slices.SortFunc(out, func(a, b rgv1.ReasonCount) int {
		return cmp.Or(proof.LossRank(a.Reason)-proof.LossRank(b.Reason), strings.Compare(a.Reason, b.Reason))
	})
	return out
}

// ConfigInt is an integer config value for the status; nil when unknown
// (proof.ConfigValue.IntOrNil: the proof reports those as unreadable).
func ConfigInt(v proof.ConfigValue) *int64 { return v.IntOrNil() }
