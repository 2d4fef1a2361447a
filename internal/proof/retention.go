package proof

import (
	"strings"
	"time"
)

// retentionCoversWindow holds when no topic can delete a record the group
// has not read before the recovery window ends: for each topic whose
// cleanup.policy contains delete, retention.ms is readable, finite (unless
// infinite retention is allowed) and at least the window, and
// retention.bytes is -1 (unless size-bounded retention is allowed).
// Compacting topics (compact, or compact,delete) also need
// delete.retention.ms ≥ the window: tombstones live that long. Compact-only
// topics delete nothing by time. A topic with an empty cleanup.policy keeps
// every record: infinite retention, allowed only by allowInfiniteRetention.
//
// The records the group has not consumed must also outlive the window: a
// partition whose headroom (the record at the committed offset, or at the
// business cursor with resumeFrom Cursor, plus retention.ms) ends before
// now + window is RecoveryHeadroomShorterThanWindow — the group cannot be
// down for its window from now without losing that record. On a
// compacting topic a lagging partition whose tombstone headroom (the
// earliest the cleaner may drop a tombstone the group has not read, see
// tombstone.go) ends before now + window is
// TombstoneHeadroomShorterThanWindow: it may never see that delete.
func retentionCoversWindow(f *facts, partitions []PartitionResult) (Condition, []Violation) {
	o := clauseOutcome{clause: ClauseRetentionCoversWindow}
	window := f.policy.RecoveryWindow
	compacted, kept := 0, 0
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
		if rc.keeps {
			kept++
			if !f.policy.AllowInfiniteRetention {
				o.add(topicViolation("", ReasonInfiniteRetentionNotAllowed, t.name,
					t.name+": "+keyCleanupPolicy+" is empty: records are never deleted (infinite retention), which is not allowed: "+
						"set "+keyCleanupPolicy+" delete with a finite "+keyRetentionMs+" of at least recoveryWindow "+
						FormatDuration(window)+", or allowInfiniteRetention"))
			}
			continue
		}
		if rc.compacts {
			if !rc.deletes {
				compacted++
			}
			if rc.deleteRetentionProblem != "" {
				unreadableConfig(&o, t, keyDeleteRetentionMs, t.obs.DeleteRetentionMs, rc.deleteRetentionProblem)
			} else if v, ok := checkTombstoneRetention(t.name, t.obs.DeleteRetentionMs, rc, window); !ok {
				o.add(v)
			}
		}
		if !rc.deletes {
			continue
		}
		if rc.msProblem != "" {
			unreadableConfig(&o, t, keyRetentionMs, t.obs.RetentionMs, rc.msProblem)
		} else if v, ok := checkRetentionMs(t.name, t.obs.RetentionMs, rc, window, infiniteAllowed(f, t.name, rc)); !ok {
			o.add(v)
		}
		if rc.bytesProblem != "" {
			unreadableConfig(&o, t, keyRetentionBytes, t.obs.RetentionBytes, rc.bytesProblem)
		} else if v, ok := checkRetentionBytes(t.name, t.obs.RetentionBytes, rc, window, f.policy.AllowSizeBoundedRetention); !ok {
			o.add(v)
		}
	}
	if len(f.topics) == 0 {
		o.add(topicViolation("", ReasonNotEvaluated, "", "no topics to prove: the policy names none and none was observed"))
	}
	failed := failedTopics(o.violations)
	headroomViolations(&o, f, partitions, failed)
	unreadViolations(&o, f, partitions, failed, observedPartitions(f))
	tombstoneViolations(&o, f, partitions, failed)

	reason := ReasonRetentionCoversWindow
	msg := "retention covers recoveryWindow " + FormatDuration(window) + " on " + plural(int64(len(f.topics)), "topic")
	if compacted > 0 {
		if compacted == len(f.topics) {
			reason = ReasonCompactedTopic
		}
		msg += " (" + itoa(int64(compacted)) + " compact-only: compaction deletes no record by time, and keeps tombstones " +
			"at least the window after they are written)"
	}
	if kept > 0 {
		msg += " (" + plural(int64(kept), "topic") + " with an empty " + keyCleanupPolicy + ": records are kept forever, allowed by allowInfiniteRetention)"
	}
	return o.condition(reason, msg), o.violations
}

// checkTombstoneRetention judges a compacting topic's readable
// delete.retention.ms: the log cleaner removes a tombstone (a record with a
// null value) once delete.retention.ms has passed since the cleaning that
// first saw it, so a consumer down longer than that never sees the delete
// and keeps the key forever (Kafka's Cleaner.shouldRetainRecord; see
// docs/kafka-semantics.md). That cleaning follows the write: a tombstone
// written from now on lives at least delete.retention.ms. One already
// written lives less: tombstoneViolations judges those a lagging group has
// not read.
func checkTombstoneRetention(topic string, v ConfigValue, rc retentionConfig, window time.Duration) (Violation, bool) {
	ms := rc.deleteRetentionMs
	switch {
	case ms < 0:
		return topicViolation("", ReasonRetentionUnreadable, topic,
			topic+": "+keyDeleteRetentionMs+" "+itoa(ms)+" is not a valid value (Kafka requires at least 0)"), false
	case millisToDuration(ms) < window:
		return topicViolation("", ReasonTombstoneRetentionShorterThanWindow, topic,
			topic+": "+keyDeleteRetentionMs+" "+itoa(ms)+" ("+formatMillis(ms)+")"+sourceNote(v)+" is shorter than recoveryWindow "+
				FormatDuration(window)+": the log cleaner drops tombstones that long after writing them, so a consumer down longer "+
				"misses the deletes and keeps stale keys forever; set "+keyDeleteRetentionMs+" to at least "+
				itoa(window.Milliseconds())), false
	}
	return Violation{}, true
}

// sourceNote glosses where an inherited config value comes from: " (broker
// default log.retention.hours, strictest of 3 brokers)".
func sourceNote(v ConfigValue) string {
	if v.Source == "" {
		return ""
	}
	return " (" + v.Source + ")"
}

// Kafka Streams repartition topics (<application.id>-<name>-repartition,
// InternalTopologyBuilder / RepartitionTopicConfig) are created with
// retention.ms -1 and purged by the application itself: each commit, it
// deletes (DeleteRecords) every record below the offsets it has consumed
// and committed (TaskManager.maybePurgeCommittedRecords, StreamTask
// .purgeableOffsets). For the application's own group (group ID =
// application.id) nothing it has not read is deleted: -1 is no
// misconfiguration there, and no loss. For any other group reading the
// topic, -1 keeps nothing: the application deletes below its own commits,
// whatever that group has read, so allowInfiniteRetention does not make it
// safe.
const repartitionSuffix = "-repartition"

// streamsRepartition says whether a topic is, by its name, a Kafka
// Streams repartition topic, and whether of the policy's own group.
func streamsRepartition(group, topic string) (repartition, own bool) {
	if !strings.HasSuffix(topic, repartitionSuffix) {
		return false, false
	}
	own = group != "" && strings.HasPrefix(topic, group+"-") && len(topic) > len(group)+1+len(repartitionSuffix)
	return true, own
}

// infiniteAllowed is the allowance checkRetentionMs judges retention.ms -1
// with: the policy's allowInfiniteRetention, except on a Kafka Streams
// repartition topic (its own group's: allowed; another application's: not).
func infiniteAllowed(f *facts, topic string, rc retentionConfig) infiniteAllowance {
	if rc.ms >= 0 {
		return infiniteAllowance{allowed: f.policy.AllowInfiniteRetention}
	}
	switch repartition, own := streamsRepartition(f.policy.GroupID, topic); {
	case own:
		return infiniteAllowance{allowed: true}
	case repartition:
		return infiniteAllowance{otherRepartition: true}
	}
	return infiniteAllowance{allowed: f.policy.AllowInfiniteRetention}
}

// infiniteAllowance: whether retention.ms -1 is accepted, and whether the
// topic is another Kafka Streams application's repartition topic.
type infiniteAllowance struct {
	allowed          bool
	otherRepartition bool
}

// checkRetentionMs judges a readable retention.ms (the caller reports an
// unreadable one).
func checkRetentionMs(topic string, v ConfigValue, rc retentionConfig, window time.Duration, infinite infiniteAllowance) (Violation, bool) {
	switch {
	case rc.ms < 0 && infinite.otherRepartition:
		return topicViolation("", ReasonInfiniteRetentionNotAllowed, topic,
			topic+": "+keyRetentionMs+" "+itoa(rc.ms)+sourceNote(v)+" keeps nothing for this group: by its name it is a Kafka Streams "+
				"repartition topic of another application, which deletes (DeleteRecords) every record below its own committed offsets, "+
				"whatever this group has read, so allowInfiniteRetention does not apply: read it as part of that application "+
				"(its own group), or copy what this group needs to a topic of its own"), false
	case rc.ms < 0:
		if infinite.allowed {
			return Violation{}, true
		}
		return topicViolation("", ReasonInfiniteRetentionNotAllowed, topic,
			topic+": "+keyRetentionMs+" "+itoa(rc.ms)+" (infinite)"+sourceNote(v)+" is not allowed: set a finite "+keyRetentionMs+
				" of at least recoveryWindow "+FormatDuration(window)+", or allowInfiniteRetention"), false
	case millisToDuration(rc.ms) < window:
		return topicViolation("", ReasonRetentionShorterThanWindow, topic,
			topic+": "+keyRetentionMs+" "+itoa(rc.ms)+" ("+formatMillis(rc.ms)+")"+sourceNote(v)+" is shorter than recoveryWindow "+
				FormatDuration(window)+": records are deleted before a consumer that went down can come back for them"), false
	}
	return Violation{}, true
}

// checkRetentionBytes judges a readable retention.bytes (the caller reports
// an unreadable one).
func checkRetentionBytes(topic string, v ConfigValue, rc retentionConfig, window time.Duration, allowSizeBounded bool) (Violation, bool) {
	switch {
	case rc.bytes >= 0 && !allowSizeBounded:
		return topicViolation("", ReasonSizeBoundedRetention, topic,
			topic+": "+keyRetentionBytes+" "+itoa(rc.bytes)+sourceNote(v)+" bounds each partition by size: a burst of writes deletes records "+
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
