package proof

// groupOffsetsRetained holds when the broker keeps an empty group's
// committed offsets at least as long as the recovery window:
// offsets.retention.minutes is readable and covers the window. Otherwise a
// group down for the window comes back without committed offsets, and
// auto.offset.reset decides silently where it resumes.
func groupOffsetsRetained(f *facts) (Condition, []Violation) {
	o := clauseOutcome{clause: ClauseGroupOffsetsRetained}
	window := f.policy.RecoveryWindow
	minutes := f.offsetsRetentionMinutes
	switch {
	case f.offsetsRetentionProblem != "" && f.offsetsRetentionMissingBecause != "":
		// Absent because a request failed: the failure's violation says
		// so; the clause is not evaluated.
		o.notEvaluated = append(o.notEvaluated, keyOffsetsRetentionMinutes+" not evaluated: "+
			f.offsetsRetentionMissingBecause+" (see "+ClauseKafkaReachable+")")
	case f.offsetsRetentionProblem != "":
		o.add(topicViolation("", ReasonOffsetsRetentionUnreadable, "", f.offsetsRetentionProblem))
	case minutesToDuration(minutes) < window:
		o.add(topicViolation("", ReasonOffsetsRetentionShorterThanWindow, "",
			keyOffsetsRetentionMinutes+" "+itoa(minutes)+" ("+formatMinutes(minutes)+") is shorter than recoveryWindow "+
				FormatDuration(window)+": an empty group's committed offsets expire before the window ends"))
	}
	return o.condition(ReasonGroupOffsetsRetained,
		keyOffsetsRetentionMinutes+" "+itoa(minutes)+" ("+formatMinutes(minutes)+") covers recoveryWindow "+FormatDuration(window)), o.violations
}
