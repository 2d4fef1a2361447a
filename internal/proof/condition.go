package proof

import "slices"

// lossReasons are the reasons that say data is already lost or cannot be
// located, most definite first; everything else is a risk that may yet
// happen (…ShorterThanWindow) or a missing fact.
var lossReasons = []string{
	// The business cursor is the authority on what was processed: its
	// loss leads.
	ReasonCursorExpired,
	ReasonNoCursor,
	ReasonCursorBeyondLogEnd,
	ReasonCommittedOffsetExpired,
	ReasonShareRecordsExpired,
	ReasonNoCommittedOffset,
	ReasonNoShareStartOffset,
	// Records the consumers skip when they start (a reset to latest on a
	// partition without a commit): the start is the loss.
	ReasonResetToLatestSkipsRecords,
	ReasonCommittedOffsetBeyondLogEnd,
	ReasonCommittedOffsetOfDeletedTopic,
	// An epoch-less commit past a diverged log: the consumer resumes at it
	// silently, past records it never read (CommittedEpochDiverged, the
	// same log under a commit with its epoch, is a risk).
	ReasonCommittedOffsetDiverged,
	// Records a restart from the group's offsets would skip.
	ReasonGroupAheadOfCursor,
}

// riskReasons are the violations under which a restart skips nothing the
// group has not read (yet): the group cannot be down for its whole window
// from now while nothing is lost yet — the oldest record it has not read
// expires first (a lagging group, seed 000 before the loss), or an Empty
// classic group's offsets expire, or may expire, first (seed 003 before
// the loss) — or the log diverged below a commit that carries its leader
// epoch, which the consumer validates and rewinds from (the records it
// read there are gone from the log; it re-reads what is there now).
// Admission warns on a proof failing (Violated or Unknown) only by them and
// refuses nothing (the rollout is the way out, or harmless), and the
// critical Violated alert leaves them to their own warning alerts.
var riskReasons = []string{
	ReasonRecoveryHeadroomShorterThanWindow,
	// A tombstone the lagging group has not read may be dropped first.
	ReasonTombstoneHeadroomShorterThanWindow,
	ReasonEmptyGroupOffsetsExpireBeforeWindow,
	// Unknown rather than Violated (missingFact), a risk all the same.
	ReasonEmptyGroupOffsetsMayExpireBeforeWindow,
	// A restart rewinds to where the log diverged (KIP-320 validation)
	// and re-reads: nothing skipped, what the group read there gone.
	ReasonCommittedEpochDiverged,
}

// IsRisk reports whether reason is one of the risks (riskReasons): a
// violation under which a restart skips nothing the group has not read
// (yet).
func IsRisk(reason string) bool { return slices.Contains(riskReasons, reason) }

// RiskReasons lists the risks (IsRisk), for what must know them all (the
// chart's alert tests).
func RiskReasons() []string { return slices.Clone(riskReasons) }

// IsLoss reports whether reason says data is already lost or cannot be
// located (lossReasons).
func IsLoss(reason string) bool { return slices.Contains(lossReasons, reason) }

// LossRank orders reasons so that loss that already happened comes before
// every other violation, and risks (IsRisk) come last: the Ready
// condition's reason, the kubectl reason column and the first line of a
// denial lead with it. Loss reasons rank 0, 1, 2...; every other reason
// ranks after them, equally, and the risks after those. So Ready's reason
// is a risk only when every violation of the proof is one (what the
// RetentionGuardPolicyViolated alert relies on).
func LossRank(reason string) int {
	if i := slices.Index(lossReasons, reason); i >= 0 {
		return i
	}
	if IsRisk(reason) {
		return len(lossReasons) + 1
	}
	return len(lossReasons)
}

// clauseOutcome collects what one clause found, and turns it into the
// clause's condition.
type clauseOutcome struct {
	clause string
	// violations: facts that fail, and facts that are missing (see
	// missingFact).
	violations []Violation
	// notEvaluated describes facts that a KafkaReachable failure already
	// explains: they make the clause Unknown without a violation of their
	// own (the failure's violation says what happened).
	notEvaluated []string
}

// missingFact reports whether a violation reason speaks of a fact that could
// not be read (Unknown) rather than a fact that fails (False).
func missingFact(reason string) bool {
	switch reason {
	case ReasonRetentionUnreadable, ReasonOffsetsRetentionUnreadable, ReasonNotEvaluated,
		ReasonOffsetsMayExpireBeforeWindow, ReasonGroupTypeUnknown, ReasonCursorUnreadable,
		ReasonShareStartOffsetBelowLogStart, ReasonEmptyGroupOffsetsMayExpireBeforeWindow,
		ReasonOffsetResetMaySkipRecords, ReasonRecordTimestampUnread, ReasonTombstonesUnread,
		ReasonCommittedLeaderEpochUnknown, ReasonCommittedOffsetOnDivergedLog:
		return true
	}
	return false
}

func (o *clauseOutcome) add(v Violation) {
	v.Clause = o.clause
	o.violations = append(o.violations, v)
}

// condition sorts the violations and decides the clause's condition: False
// when a fact fails (it dominates missing facts), Unknown when a fact is
// missing, else True with the given reason and message.
func (o *clauseOutcome) condition(holdsReason, holdsMessage string) Condition {
	sortViolations(o.violations)
	var failing, missing []Violation
	for _, v := range o.violations {
		if missingFact(v.Reason) {
			missing = append(missing, v)
		} else {
			failing = append(failing, v)
		}
	}
	switch {
	case len(failing) > 0:
		// Loss that already happened leads (LossFirst), stable otherwise.
		slices.SortStableFunc(failing, func(a, b Violation) int { return LossRank(a.Reason) - LossRank(b.Reason) })
		return Condition{Type: o.clause, Status: ConditionFalse, Reason: failing[0].Reason, Message: summarize(failing, nil)}
	case len(missing) > 0 || len(o.notEvaluated) > 0:
		reason := ReasonNotEvaluated
		if len(missing) > 0 {
			reason = missing[0].Reason
		}
		return Condition{Type: o.clause, Status: ConditionUnknown, Reason: reason, Message: summarize(missing, o.notEvaluated)}
	}
	return Condition{Type: o.clause, Status: ConditionTrue, Reason: holdsReason, Message: holdsMessage}
}

// summarize is the first message, and how many more there are.
func summarize(vs []Violation, notes []string) string {
	var first string
	switch {
	case len(vs) > 0:
		first = vs[0].Message
	case len(notes) > 0:
		first = notes[0]
	}
	if more := len(vs) + len(notes) - 1; more > 0 {
		return first + " (and " + itoa(int64(more)) + " more)"
	}
	return first
}
