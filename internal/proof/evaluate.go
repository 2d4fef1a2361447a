package proof

import (
	"time"
)

// Evaluate proves, from one observation, whether the policy's consumer
// group can be down for its recovery window and resume without losing a
// record. It is pure and deterministic: the same inputs give the same
// Result, whatever the order of topics, partitions or failures in the
// observation.
//
// The proof covers every topic the policy names and every topic in the
// observation. A fact the observation lacks is never taken as passing: it
// makes its clause Unknown, and the verdict at best Unknown. A fact that
// fails makes its clause False and the verdict Violated, which dominates
// Unknown.
func Evaluate(obs Observation, p Policy, now time.Time) Result {
	f := gatherFacts(&obs, p, now)

	reachable, reachableV := kafkaReachable(f)
	offsetsRetained, offsetsRetainedV := groupOffsetsRetained(f)
	dateOffsetExpiries(offsetsRetainedV, f)
	inRange, inRangeV, partitions := offsetsInRange(f)
	var cursorV []Violation
	var cursorSum *CursorSummary
	var cursor Condition
	if p.Cursor != nil {
		cursor, cursorV, cursorSum = cursorInRange(f, partitions)
	}
	// Retention is judged last: its headroom rule reads the partitions'
	// headroom, measured from the cursor with resumeFrom Cursor.
	retention, retentionV := retentionCoversWindow(f, partitions)

	conditions := make([]Condition, 0, len(ClauseTypes))
	conditions = append(conditions, reachable, retention, offsetsRetained, inRange)
	if p.Cursor != nil {
		conditions = append(conditions, cursor)
	}

	// With resumeFrom Cursor the group's offsets are a cache: their
	// clauses keep their conditions (the facts) but do not decide, and
	// what fails in them is a warning.
	var advisory []Warning
	if p.Cursor.ResumesFromCursor() {
		for i := range conditions {
			c := &conditions[i]
			if decides(p, c.Type) || c.Status == ConditionTrue {
				continue
			}
			// Short first words: admission warnings are cut at 120 bytes.
			advisory = append(advisory, Warning{Type: WarningGroupOffsets, Reason: c.Reason, Subject: c.Type,
				Message: "seek to the cursor on start: group offsets " + c.Reason + " (" + c.Type + ", not deciding: " + c.Message + ")"})
			c.Message = "not deciding (spec.cursor.resumeFrom Cursor: the consumer resumes from its cursor): " + c.Message
		}
		offsetsRetainedV, inRangeV = nil, nil
	}

	verdict := verdictOf(p, conditions)
	conditions = append(conditions, ready(verdict, conditions, f))

	// Each clause sorted its own violations; clauses come in ClauseTypes
	// order, so the concatenation is sorted.
	violations := make([]Violation, 0, len(reachableV)+len(retentionV)+len(offsetsRetainedV)+len(inRangeV)+len(cursorV))
	violations = append(violations, reachableV...)
	violations = append(violations, retentionV...)
	violations = append(violations, offsetsRetainedV...)
	violations = append(violations, inRangeV...)
	violations = append(violations, cursorV...)

	r := Result{
		Verdict:      verdict,
		ProofID:      proofID(verdict, p.UID, violations),
		Conditions:   conditions,
		Violations:   violations,
		Partitions:   partitions,
		Summary:      summarizePartitions(partitions),
		Cursor:       cursorSum,
		OffsetsTopic: obs.OffsetsTopic,
	}
	for i := range partitions {
		r.ExpiredRecords = addSaturating(r.ExpiredRecords, partitions[i].ExpiredRecords)
	}

	var w *Warning
	r.RecoveryHeadroom, r.HasRecoveryHeadroom, w = recoveryHeadroom(p.RecoveryWindow, partitions)
	if r.HasRecoveryHeadroom {
		r.RecoveryHeadroomExpiresAt = now.Add(r.RecoveryHeadroom)
	}
	if w != nil {
		r.Warnings = append(r.Warnings, *w)
	}
	setOffsetExpiries(partitions, f.expiry.commits)
	r.OffsetExpiry, w = offsetExpiry(f)
	if w != nil && !p.Cursor.ResumesFromCursor() {
		r.Warnings = append(r.Warnings, *w)
	}
	r.Warnings = append(r.Warnings, advisory...)
	if w := seekWarning(p, partitions); w != nil {
		r.Warnings = append(r.Warnings, *w)
	}
	if r.OffsetExpiry.HasSoonest {
		r.GroupOffsetsExpireIn, r.HasGroupOffsetsExpireIn = r.OffsetExpiry.Soonest.Sub(now), true
	}
	r.Warnings = append(r.Warnings, recordTimestampWarnings(f)...)
	if w := offsetsTopicWarning(obs); w != nil {
		r.Warnings = append(r.Warnings, *w)
	}
	return r
}

// decides reports whether a clause decides the verdict for p: every clause
// does, but the group's offset clauses when the consumer resumes from its
// cursor.
func decides(p Policy, clause string) bool {
	if p.Cursor.ResumesFromCursor() {
		return clause != ClauseGroupOffsetsRetained && clause != ClauseOffsetsInRange
	}
	return true
}

// verdictOf combines the conditions of the clauses that decide: Violated
// when a clause is False on the facts, Unknown when a fact is missing or a
// request failed (KafkaReachable False proves no loss), else Proven.
func verdictOf(p Policy, conditions []Condition) Verdict {
	verdict := Proven
	for _, c := range conditions {
		switch {
		case !decides(p, c.Type):
		case c.Status == ConditionFalse && c.Type != ClauseKafkaReachable:
			return Violated
		case c.Status != ConditionTrue:
			verdict = Unknown
		}
	}
	return verdict
}

// ready is the Ready condition: True when proven; otherwise the reason and
// message of the clause that decided the verdict — when Violated, the False
// clause whose reason says data is already lost (LossRank), else the first
// False clause; when Unknown, the first clause that does not hold.
func ready(verdict Verdict, conditions []Condition, f *facts) Condition {
	c := Condition{Type: ClauseReady}
	switch verdict {
	case Proven:
		c.Status, c.Reason = ConditionTrue, ReasonProven
		c.Message = "group " + groupName(f) + " can be down for recoveryWindow " + FormatDuration(f.policy.RecoveryWindow) +
			" and resume without losing a record"
		if f.policy.Cursor.ResumesFromCursor() {
			c.Message = "group " + groupName(f) + " can be down for recoveryWindow " + FormatDuration(f.policy.RecoveryWindow) +
				" and resume from its business cursor without losing a record"
		}
		return c
	case Violated:
		c.Status = ConditionFalse
	default:
		c.Status = ConditionUnknown
	}
	best := -1
	for i, cl := range conditions {
		if !decides(f.policy, cl.Type) {
			continue
		}
		decides := cl.Status != ConditionTrue
		if verdict == Violated {
			decides = cl.Status == ConditionFalse && cl.Type != ClauseKafkaReachable
		}
		if decides && (best < 0 || LossRank(cl.Reason) < LossRank(conditions[best].Reason)) {
			best = i
		}
	}
	if best >= 0 {
		c.Reason, c.Message = conditions[best].Reason, conditions[best].Type+": "+conditions[best].Message
	}
	return c
}

func summarizePartitions(partitions []PartitionResult) PartitionSummary {
	s := PartitionSummary{Total: len(partitions)}
	for i := range partitions {
		switch partitions[i].Reason {
		case "":
			if partitions[i].Verdict == Proven {
				s.InRange++
			}
		case ReasonCommittedOffsetExpired, ReasonShareRecordsExpired, ReasonCursorExpired:
			s.Expired++
		case ReasonNoCommittedOffset, ReasonNoShareStartOffset, ReasonNoCursor,
			ReasonResetToLatestSkipsRecords, ReasonOffsetResetMaySkipRecords:
			s.Missing++
		case ReasonCommittedOffsetBeyondLogEnd, ReasonCursorBeyondLogEnd:
			s.BeyondEnd++
		}
	}
	return s
}

// offsetsTopicWarning says, as configuration advice, that exact commit and
// Empty times were asked of __consumer_offsets and not read, why (the
// reason as data: Warning.Reason), and what a person does about it. A
// group without a committed offset has nothing to date: no warning when
// the topic is merely absent (a cluster where no group committed yet).
func offsetsTopicWarning(obs Observation) *Warning {
	r := obs.OffsetsTopic
	if !r.Requested || r.Reason == "" {
		return nil
	}
	if r.Reason == OffsetsTopicAbsent && !observedCommit(obs) {
		return nil
	}
	msg := "exact commit and Empty times were not read from __consumer_offsets (" + r.Problem +
		"): they are bounded from record timestamps and the changes the guard saw"
	switch r.Reason {
	case OffsetsTopicDenied:
		msg += "; grant the guard's principal Read on topic __consumer_offsets: " + GrantOffsetsTopicRead
	case OffsetsTopicUndecodable:
		msg += "; upgrade retention-guard to a version that decodes them"
	case OffsetsTopicAbsent:
		msg += "; a cluster without that topic gives no exact times: on CreateTime topics, bound " +
			"message.timestamp.after.max.ms so that records date commits, or set readOffsetsTopic: false to turn the read off"
	}
	// The warning's reason is the read's: Denied, Absent, Undecodable or
	// NotRead (WarningReasonNotRead).
	return &Warning{Type: WarningOffsetsTopic, Reason: r.Reason,
		Subject: "__consumer_offsets", Detail: r.Problem, Message: msg}
}

// observedCommit reports whether the observation holds a committed offset.
func observedCommit(obs Observation) bool {
	for _, t := range obs.Topics {
		for _, p := range t.Partitions {
			if p.Committed >= 0 {
				return true
			}
		}
	}
	return false
}
