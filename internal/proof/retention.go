package proof

import "time"

// retentionCoversWindow holds when no topic can delete a record the group
// has not read before the recovery window ends: for each topic whose
// cleanup.policy contains delete, retention.ms is readable, finite (unless
// infinite retention is allowed) and at least the window, and
// retention.bytes is -1 (unless size-bounded retention is allowed).
// Compact-only topics hold: compaction does not delete by time.
func retentionCoversWindow(f *facts) (Condition, []Violation) {
	o := clauseOutcome{clause: ClauseRetentionCoversWindow}
	window := f.policy.RecoveryWindow
	compacted := 0
	for i := range f.topics {
		t := &f.topics[i]
		if t.obs == nil {
			missingTopic(&o, t, "retention")
			continue
		}
		rc := t.retention
		if rc.cleanupProblem != "" {
			unreadableConfig(&o, t, keyCleanupPolicy, t.obs.CleanupPolicy, rc.cleanupProblem)
			continue
		}
		if !rc.deletes {
			compacted++
			continue
		}
		if rc.msProblem != "" {
			unreadableConfig(&o, t, keyRetentionMs, t.obs.RetentionMs, rc.msProblem)
		} else if v, ok := checkRetentionMs(t.name, rc, window, f.policy.AllowInfiniteRetention); !ok {
			o.add(v)
		}
		if rc.bytesProblem != "" {
			unreadableConfig(&o, t, keyRetentionBytes, t.obs.RetentionBytes, rc.bytesProblem)
		} else if v, ok := checkRetentionBytes(t.name, rc, window, f.policy.AllowSizeBoundedRetention); !ok {
			o.add(v)
		}
	}
	if len(f.topics) == 0 {
		o.add(topicViolation("", ReasonNotEvaluated, "", "no topics to prove: the policy names none and none was observed"))
	}

	reason := ReasonRetentionCoversWindow
	msg := "retention covers recoveryWindow " + FormatDuration(window) + " on " + plural(int64(len(f.topics)), "topic")
	if compacted > 0 {
		if compacted == len(f.topics) {
			reason = ReasonCompactedTopic
		}
		msg += " (" + itoa(int64(compacted)) + " compact-only: compaction does not delete records by time)"
	}
	return o.condition(reason, msg), o.violations
}

// checkRetentionMs judges a readable retention.ms (the caller reports an
// unreadable one).
func checkRetentionMs(topic string, rc retentionConfig, window time.Duration, allowInfinite bool) (Violation, bool) {
	switch {
	case rc.ms < 0:
		if allowInfinite {
			return Violation{}, true
		}
		return topicViolation("", ReasonInfiniteRetentionNotAllowed, topic,
			topic+": "+keyRetentionMs+" "+itoa(rc.ms)+" (infinite) is not allowed: set a finite "+keyRetentionMs+
				" of at least recoveryWindow "+FormatDuration(window)+", or allowInfiniteRetention"), false
	case millisToDuration(rc.ms) < window:
		return topicViolation("", ReasonRetentionShorterThanWindow, topic,
			topic+": "+keyRetentionMs+" "+itoa(rc.ms)+" ("+formatMillis(rc.ms)+") is shorter than recoveryWindow "+
				FormatDuration(window)+": records are deleted before a consumer that went down can come back for them"), false
	}
	return Violation{}, true
}

// checkRetentionBytes judges a readable retention.bytes (the caller reports
// an unreadable one).
func checkRetentionBytes(topic string, rc retentionConfig, window time.Duration, allowSizeBounded bool) (Violation, bool) {
	switch {
	case rc.bytes >= 0 && !allowSizeBounded:
		return topicViolation("", ReasonSizeBoundedRetention, topic,
			topic+": "+keyRetentionBytes+" "+itoa(rc.bytes)+" bounds each partition by size: a burst of writes deletes records "+
				"sooner than recoveryWindow "+FormatDuration(window)+" whatever retention.ms says; set "+keyRetentionBytes+
				" -1, or allowSizeBoundedRetention"), false
	}
	return Violation{}, true
}

// unreadableConfig records a topic config that could not be read. When it
// is absent from the observation and a failure explains why, the failure's
// violation already says so: the config is not evaluated, without a
// violation of its own. Otherwise (a null or malformed value, or no failure
// to explain it) it is a RetentionUnreadable violation: fail closed.
func unreadableConfig(o *clauseOutcome, t *topicFacts, key string, v ConfigValue, problem string) {
	if !v.Present && t.configsMissingBecause != "" {
		o.notEvaluated = append(o.notEvaluated,
			t.name+": "+key+" not evaluated: "+t.configsMissingBecause+" (see "+ClauseKafkaReachable+")")
		return
	}
	o.add(topicViolation("", ReasonRetentionUnreadable, t.name, t.name+": "+problem))
}

// missingTopic records a topic that is not in the observation. When a
// failure explains it, the failure's violation already says so; otherwise
// the missing topic is its own violation. Either way the clause cannot hold.
func missingTopic(o *clauseOutcome, t *topicFacts, what string) {
	if t.missingBecause != "" {
		o.notEvaluated = append(o.notEvaluated, t.name+": "+what+" not evaluated: "+t.missingBecause+" (see "+ClauseKafkaReachable+")")
		return
	}
	reason := ReasonNotEvaluated
	if o.clause == ClauseRetentionCoversWindow {
		reason = ReasonRetentionUnreadable
	}
	o.add(topicViolation("", reason, t.name, t.name+": not in the observation, and no failure explains why: its "+what+" could not be read"))
}
