package proof

import (
	"cmp"
	"slices"
	"time"
)

// ReasonGroupTopicsUnknown: a discovered group holds no committed offset,
// so nothing says which topics it reads or where it would resume (a
// restart starts wherever auto.offset.reset says): it cannot be proven
// (Unknown). A policy naming its topics proves it.
const ReasonGroupTopicsUnknown = "GroupTopicsUnknown"

// Judgement is the proof of one group found by discovery (a connection's
// spec.discovery, `retention-guard scan`), against one recovery window for
// every group.
type Judgement struct {
	Group    string
	State    string
	Protocol string
	Topics   []string
	Verdict  Verdict
	// Reason is the one that decided the verdict (Ready's reason).
	Reason string
	// Reasons are every distinct violation reason, in the proof's order
	// (loss that happened first), Reason first.
	Reasons          []string
	ExpiredRecords   int64
	RecoveryHeadroom time.Duration
	HasHeadroom      bool
	// Result is the full proof; nil for a group without topics.
	Result *Result
}

// DiscoveryPolicy is how discovery judges every group: one window, the
// same allowances for all.
type DiscoveryPolicy struct {
	RecoveryWindow            time.Duration
	AllowInfiniteRetention    bool
	AllowSizeBoundedRetention bool
}

// JudgeGroup proves one discovered group on the topics it committed on. A
// group without topics is Unknown (ReasonGroupTopicsUnknown), unless the
// observation carries a failure, whose reason it takes.
func JudgeGroup(obs Observation, topics []string, dp DiscoveryPolicy, now time.Time) Judgement {
	j := Judgement{Group: obs.Group.ID, State: obs.Group.State, Protocol: obs.Group.Protocol, Topics: slices.Clone(topics)}
	if len(topics) == 0 {
		j.Verdict, j.Reason = Unknown, ReasonGroupTopicsUnknown
		if len(obs.Failures) > 0 {
			j.Reason = obs.Failures[0].Reason
		}
		j.Reasons = []string{j.Reason}
		return j
	}
	res := Evaluate(obs, Policy{
		GroupID:                   obs.Group.ID,
		Topics:                    topics,
		RecoveryWindow:            dp.RecoveryWindow,
		AllowInfiniteRetention:    dp.AllowInfiniteRetention,
		AllowSizeBoundedRetention: dp.AllowSizeBoundedRetention,
	}, now)
	j.Result = &res
	j.Verdict = res.Verdict
	for _, c := range res.Conditions {
		if c.Type == ClauseReady {
			j.Reason = c.Reason
		}
	}
	if j.Verdict != Proven {
		j.Reasons = append(j.Reasons, j.Reason)
	}
	for _, v := range res.Violations {
		if !slices.Contains(j.Reasons, v.Reason) {
			j.Reasons = append(j.Reasons, v.Reason)
		}
	}
	j.ExpiredRecords = res.ExpiredRecords
	j.RecoveryHeadroom, j.HasHeadroom = res.RecoveryHeadroom, res.HasRecoveryHeadroom
	return j
}

// verdictRank orders verdicts worst first.
func verdictRank(v Verdict) int {
	switch v {
	case Violated:
		return 0
	case Unknown:
		return 1
	}
	return 2
}

// SortWorstFirst orders judgements worst first: Violated, then Unknown,
// then Proven; within a verdict, more expired records first, then less
// recovery headroom (a group without headroom after those with), then by
// group id.
func SortWorstFirst(js []Judgement) {
	slices.SortStableFunc(js, func(a, b Judgement) int {
		if c := cmp.Compare(verdictRank(a.Verdict), verdictRank(b.Verdict)); c != 0 {
			return c
		}
		if c := cmp.Compare(b.ExpiredRecords, a.ExpiredRecords); c != 0 {
			return c
		}
		switch {
		case a.HasHeadroom && !b.HasHeadroom:
			return -1
		case !a.HasHeadroom && b.HasHeadroom:
			return 1
		case a.HasHeadroom && b.HasHeadroom:
			if c := cmp.Compare(a.RecoveryHeadroom, b.RecoveryHeadroom); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.Group, b.Group)
	})
}
