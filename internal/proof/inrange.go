package proof

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// offsetsInRange holds when every partition's committed offset lies inside
// the retained log: logStart ≤ committed ≤ logEnd. A partition without a
// committed offset passes only while logStart is 0: a fresh group can
// bootstrap from offset 0 without loss, but with logStart > 0 a missing
// offset cannot prove nothing expired (expired group offsets look exactly
// like that). On a compacting topic log start 0 proves nothing either
// (compaction removes records without moving it): a missing offset passes
// only while the partition is empty. Offsets are compared here, never through lag helpers that
// clamp a committed offset to the log start.
//
// It also returns the per-partition results, sorted by topic and partition.
func offsetsInRange(f *facts) (Condition, []Violation, []PartitionResult) {
	o := clauseOutcome{clause: ClauseOffsetsInRange}
	total := 0
	for i := range f.topics {
		if t := f.topics[i].obs; t != nil {
			total += len(t.Partitions)
		}
	}
	results := make([]PartitionResult, 0, total)
	unevaluated := 0
	evidence, evidenceDetail := groupResetEvidence(f)
	// A failure of the group's own requests this pass (a coordinator
	// dead, moving or loading): its OffsetFetch answer of none is not
	// taken for offsets gone (coordinatorUnsettled).
	unsettled := explainingFailure(f.obs.Failures, explainsGroup)
	for i := range f.topics {
		t := &f.topics[i]
		switch {
		case t.obs == nil:
			missingTopic(&o, t, "offsets")
			continue
		case len(t.obs.Partitions) == 0:
			o.add(topicViolation("", ReasonNotEvaluated, t.name, t.name+": no partitions observed: its offsets could not be read"))
			continue
		}
		retention, finite := t.retention.finiteRetention()
		tombstones, compactClock := tombstoneClockOf(t)
		compacts := t.retention.compacts
		share := f.obs.Group.Protocol == ProtocolShare
		siblings := siblingCommits(t)
		for j := range t.obs.Partitions {
			po := &t.obs.Partitions[j]
			results = append(results, PartitionResult{})
			pr := &results[len(results)-1]
			setPartitionOffsets(pr, t.name, po)
			if fl, failed := t.partitionFailure(po.Partition); failed {
				// A failed request left these offsets unknown: an absent
				// committed offset here is not "no committed offset".
				pr.Verdict, pr.Reason = Unknown, failureReason(fl)
				unevaluated++
			} else if message := judgePartition(pr, po, compacts, share); message != "" {
				if pr.Reason == ReasonNoCommittedOffset && po.OffsetVanished && unsettled != "" {
					message = coordinatorUnsettled(pr, po, unsettled)
				}
				o.add(partitionViolation(pr, message))
			} else if message := judgeUnreadPartition(pr, t.name, siblings, share, evidence, evidenceDetail, f.policy.GroupID); message != "" {
				o.add(partitionViolation(pr, message))
			} else if !share {
				if message := judgeTopicID(pr, t.obs, po); message != "" {
					o.add(partitionViolation(pr, message))
				} else if message := judgeEpoch(pr, t.obs, po, retention, finite); message != "" {
					o.add(partitionViolation(pr, message))
				}
			}
			if finite {
				setHeadroom(pr, po.CommittedTimestamp, retention, f.now)
				setRewindHeadroom(pr, po.RewindTimestamp, retention, f.now)
				setUnreadHeadroom(pr, po, retention, f.policy.RecoveryWindow, f.now)
			}
			if compactClock {
				setTombstoneHeadroom(pr, pr.Committed, po.CommittedTimestamp, po.Tombstones, tombstones, f.now)
			}
		}
	}
	if !partitionsSorted(results) {
		slices.SortStableFunc(results, comparePartitions)
	}
	if unevaluated > 0 {
		o.notEvaluated = append(o.notEvaluated,
			plural(int64(unevaluated), "partition")+" not evaluated: a request for their offsets failed (see "+ClauseKafkaReachable+")")
	}
	if len(f.topics) == 0 {
		o.add(topicViolation("", ReasonNotEvaluated, "", "no topics to prove: the policy names none and none was observed"))
	}

	cond := o.condition(ReasonOffsetsInRange, inRangeMessage(results))
	if cond.Status == ConditionFalse {
		cond.Message = outOfRangeSummary(results) + ": " + cond.Message
	}
	return cond, o.violations, results
}

// coordinatorUnsettled turns a vanished offset (NoCommittedOffset, the
// group seen committed before) into Unknown when the group's coordinator
// did not answer in full in the same pass (because): a broker that has
// just taken the group over answers OffsetFetch at a high watermark its
// followers have not yet moved past the commit (CoordinatorRuntime reads
// at the last committed offset), which looks exactly like offsets gone.
// Where __consumer_offsets is read, the log tells (LoggedOffsetKnown);
// where it is not (Read denied, readOffsetsTopic false), the failure of
// the same pass is the sign. The next pass with a settled coordinator
// decides.
func coordinatorUnsettled(pr *PartitionResult, po *PartitionObservation, because string) string {
	pr.Verdict, pr.Reason = Unknown, ReasonNotEvaluated
	var m messageBuilder
	m.partition(pr.Topic, pr.Partition)
	m.text(": the group's coordinator answered no committed offset, but the group had committed ").int(po.VanishedOffset).
		text(" (last read ").text(po.VanishedSeenAt.UTC().Format(time.RFC3339)).
		text("), and its coordinator did not answer in full in this check (").text(because).
		text("): a coordinator that has just taken the group over answers at its high watermark until its followers catch up, " +
			"so whether the offsets are gone cannot be told yet; this ends with the next check a settled coordinator answers")
	return m.String()
}

// partitionsSorted reports whether results are sorted by topic and
// partition (they are, unless the observer reported partitions out of
// order). It compares in place: results are too large to copy per element.
func partitionsSorted(results []PartitionResult) bool {
	for i := 1; i < len(results); i++ {
		a, b := &results[i-1], &results[i]
		if a.Topic > b.Topic || (a.Topic == b.Topic && a.Partition > b.Partition) {
			return false
		}
	}
	return true
}

func comparePartitions(a, b PartitionResult) int {
	if a.Topic != b.Topic {
		return strings.Compare(a.Topic, b.Topic)
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// setPartitionOffsets copies a partition's offsets into its result and
// sets its lag: logEnd − committed when committed is in range, else
// logEnd − logStart.
func setPartitionOffsets(pr *PartitionResult, topic string, po *PartitionObservation) {
	pr.Topic, pr.Partition = topic, po.Partition
	pr.Committed, pr.LogStart, pr.LogEnd = po.Committed, po.LogStart, po.LogEnd
	pr.Cursor = NoOffset
	switch {
	case po.LogStart < 0 || po.LogEnd < po.LogStart:
	case po.Committed >= po.LogStart && po.Committed <= po.LogEnd:
		pr.Lag = po.LogEnd - po.Committed
	default:
		pr.Lag = po.LogEnd - po.LogStart
	}
}

// judgePartition sets the partition's verdict, reason and expired records,
// and returns the violation's message when it is not in range. Messages
// are built in one buffer: an expired topic can have thousands of them.
//
// A share group's Committed offset is its share-partition start offset: the
// same rules hold (below log start, records expired unread; beyond log end,
// not this log), named as such; with none, NoShareStartOffset.
func judgePartition(pr *PartitionResult, po *PartitionObservation, compacts, share bool) (message string) {
	var m messageBuilder
	noun := "committed offset "
	if share {
		noun = "share-partition start offset "
	}
	// A share group's own rules, on a well-formed log only.
	share = share && pr.LogStart >= 0 && pr.LogEnd >= pr.LogStart && pr.Committed >= NoOffset
	switch {
	case share && pr.Committed == NoOffset && pr.LogStart > 0:
		pr.Verdict, pr.Reason = Violated, ReasonNoShareStartOffset
		m.partition(pr.Topic, pr.Partition)
		m.text(": the share group has no share-partition start offset while log start is ").int(pr.LogStart)
		m.text(": nothing proves it read offsets below ").int(pr.LogStart)
		m.text(", and share.auto.offset.reset decides silently where it starts")
		return m.String()
	case share && pr.Committed == NoOffset && compacts && pr.LogEnd > 0:
		pr.Verdict, pr.Reason = Violated, ReasonNoShareStartOffset
		m.partition(pr.Topic, pr.Partition)
		m.text(": the share group has no share-partition start offset on a compacting topic holding offsets 0 to ").int(pr.LogEnd)
		return m.String()
	case share && pr.Committed >= 0 && pr.Committed < pr.LogStart && po.ShareLagKnown && po.ShareLag == 0:
		// Everything up to the log end is acknowledged: the persisted
		// SPSO lags the acknowledgements (Kafka 4.4 keeps it at the first
		// batch until the next write), nothing is pending.
		pr.Verdict = Proven
		return ""
	case share && pr.Committed >= 0 && pr.Committed < pr.LogStart &&
		po.ShareLagKnown && po.ShareLag > pr.LogEnd-pr.LogStart:
		// More records are unacknowledged than the retained log holds:
		// the rest were deleted before the group acknowledged them, and
		// Kafka moves the SPSO up silently (SharePartition's
		// updateCacheAndOffsets).
		pr.Verdict, pr.Reason = Violated, ReasonShareRecordsExpired
		// (A lag past what [SPSO, log end) holds is capped: the records
		// below log start are all that can have expired.)
		pr.ExpiredRecords = min(po.ShareLag-(pr.LogEnd-pr.LogStart), pr.LogStart-pr.Committed)
		m.partition(pr.Topic, pr.Partition)
		m.text(": ").text(noun).int(pr.Committed)
		m.text(" is below log start ").int(pr.LogStart).text(" and ").count(po.ShareLag, "record")
		m.text(" are unacknowledged, more than the ").int(pr.LogEnd - pr.LogStart).text(" the log still holds: at least ")
		m.count(pr.ExpiredRecords, "record").text(" expired before this share group acknowledged them")
		return m.String()
	case share && pr.Committed >= 0 && pr.Committed < pr.LogStart:
		pr.Verdict, pr.Reason = Unknown, ReasonShareStartOffsetBelowLogStart
		m.partition(pr.Topic, pr.Partition)
		m.text(": ").text(noun).int(pr.Committed)
		m.text(" is below log start ").int(pr.LogStart)
		if po.ShareLagKnown {
			m.text(" and ").count(po.ShareLag, "record").text(" are unacknowledged")
		} else {
			m.text(" and how many records are unacknowledged is unknown (DescribeShareGroupOffsets v1, Kafka 4.2+)")
		}
		m.text(": whether any expired before the group acknowledged them cannot be told")
		return m.String()
	case share && pr.Committed > pr.LogEnd:
		pr.Verdict, pr.Reason = Violated, ReasonCommittedOffsetBeyondLogEnd
		m.partition(pr.Topic, pr.Partition)
		m.text(": ").text(noun).int(pr.Committed)
		m.text(" is beyond log end ").int(pr.LogEnd)
		m.text(": the log was truncated or recreated below the share group's position")
		return m.String()
	}
	switch {
	case pr.Committed == NoOffset && po.LoggedOffsetKnown:
		// Neither a fresh group (Proven below) nor offsets gone (the
		// vanished case, Violated): the log holds the commit, the
		// coordinator does not answer it yet (issue 32, found by
		// test/realkafka/faults TestGroupCoordinatorMoved on a loaded 4.4
		// cluster). Unknown until they agree.
		pr.Verdict, pr.Reason = Unknown, ReasonNotEvaluated
		m.partition(pr.Topic, pr.Partition)
		m.text(": the group's coordinator answered no committed offset, but __consumer_offsets still holds its commit of ").
			int(po.LoggedOffset).
			text(" with no tombstone after it (expiry and deletion write one): a coordinator that has just taken the group over " +
				"answers at its high watermark until its followers catch up, so where the group resumes cannot be told yet; " +
				"this ends when the coordinator answers the commit, or the log's tombstone says it is gone")
	case pr.Committed == NoOffset && po.OffsetVanished && pr.LogStart == 0 && pr.LogEnd >= 0:
		// Seen committed, now gone, on a log that starts at 0: not a
		// fresh group (seed 003 on a young topic). With log start > 0 the
		// missing offset fails below anyway.
		pr.Verdict, pr.Reason = Violated, ReasonNoCommittedOffset
		m.partition(pr.Topic, pr.Partition)
		m.text(": no committed offset, but the group had committed ").int(po.VanishedOffset)
		m.text(" (last read ").text(po.VanishedSeenAt.UTC().Format(time.RFC3339))
		m.text("): it expired or was deleted, and a restart resets by auto.offset.reset")
		if v := po.VanishedOffset; v >= pr.LogStart && v <= pr.LogEnd {
			m.text(" (latest skips the ").count(pr.LogEnd-v, "record").text(" from it to log end ").int(pr.LogEnd).text(")")
		}
	case pr.LogStart < 0 || pr.LogEnd < pr.LogStart || pr.Committed < NoOffset:
		pr.Verdict, pr.Reason = Unknown, ReasonNotEvaluated
		m.partition(pr.Topic, pr.Partition)
		m.text(": the observed offsets are not a Kafka log (log start ").int(pr.LogStart)
		m.text(", log end ").int(pr.LogEnd)
		m.text(", committed offset ").int(pr.Committed).text("): cannot evaluate")
	case pr.Committed == NoOffset && pr.LogStart == 0 && (!compacts || pr.LogEnd == 0):
		pr.Verdict = Proven // a fresh group bootstraps from offset 0: nothing has expired
		return ""
	case pr.Committed == NoOffset && pr.LogStart == 0:
		pr.Verdict, pr.Reason = Violated, ReasonNoCommittedOffset
		m.partition(pr.Topic, pr.Partition)
		m.text(": no committed offset on a compacting topic holding offsets 0 to ").int(pr.LogEnd)
		m.text(": compaction removes records without moving log start 0, so nothing proves the group read what was compacted away")
	case pr.Committed == NoOffset:
		pr.Verdict, pr.Reason = Violated, ReasonNoCommittedOffset
		m.partition(pr.Topic, pr.Partition)
		m.text(": no committed offset while log start is ").int(pr.LogStart)
		m.text(": nothing proves the group read offsets below ").int(pr.LogStart)
		m.text(" before they expired (expired group offsets look exactly like this)")
	case pr.Committed < pr.LogStart:
		pr.Verdict, pr.Reason = Violated, ReasonCommittedOffsetExpired
		pr.ExpiredRecords = pr.LogStart - pr.Committed
		m.partition(pr.Topic, pr.Partition)
		m.text(": committed offset ").int(pr.Committed)
		m.text(" is below log start ").int(pr.LogStart)
		m.text(": ").count(pr.ExpiredRecords, "record").text(" expired before this group read them")
	case pr.Committed > pr.LogEnd:
		pr.Verdict, pr.Reason = Violated, ReasonCommittedOffsetBeyondLogEnd
		m.partition(pr.Topic, pr.Partition)
		m.text(": committed offset ").int(pr.Committed)
		m.text(" is beyond log end ").int(pr.LogEnd)
		m.text(": the log was truncated below the group's position (an unclean leader election) or an offset past the end was committed, so the group's position does not refer to records it read")
	default:
		pr.Verdict = Proven
		return ""
	}
	return m.String()
}

// judgeTopicID fails an in-range committed offset that was committed for
// another topic ID than the topic's (OffsetCommitValue v4, read from
// __consumer_offsets): the topic was deleted and recreated, offset cleanup
// on deletion is best effort, and the old topic's offset reads as a
// position in the new log. Both IDs must be known.
func judgeTopicID(pr *PartitionResult, t *TopicObservation, po *PartitionObservation) string {
	if pr.Verdict != Proven || pr.Committed < 0 || po.CommitTopicID == "" || t.TopicID == "" ||
		strings.EqualFold(po.CommitTopicID, t.TopicID) {
		return ""
	}
	pr.Verdict, pr.Reason = Violated, ReasonCommittedOffsetOfDeletedTopic
	var m messageBuilder
	m.partition(pr.Topic, pr.Partition).text(": committed offset ").int(pr.Committed).
		text(" was committed for topic ID ").text(po.CommitTopicID).text(", not this topic's ").text(t.TopicID).
		text(" (from __consumer_offsets): the topic was deleted and recreated, and the offset is a position in the old log; " +
			"reset the group's offsets on this topic to where the business really is")
	return m.String()
}

func partitionViolation(pr *PartitionResult, message string) Violation {
	return Violation{
		Reason: pr.Reason, Topic: pr.Topic, Partition: pr.Partition, Message: message,
		Committed: pr.Committed, LogStart: pr.LogStart, LogEnd: pr.LogEnd, ExpiredRecords: pr.ExpiredRecords,
		SkippedRecords: pr.SkippedRecords, DivergedRecords: pr.DivergedRecords, Cursor: NoOffset,
	}
}

func inRangeMessage(results []PartitionResult) string {
	var lag int64
	for i := range results {
		lag = addSaturating(lag, results[i].Lag)
	}
	return "every committed offset lies between log start and log end on " + plural(int64(len(results)), "partition") +
		" (total lag " + itoa(lag) + ")"
}

// outOfRangeSummary counts the partitions out of range by reason, e.g.
// "3 of 24 partitions out of range: 2 committed offsets below log start (4200 records expired), 1 without a committed offset".
func outOfRangeSummary(results []PartitionResult) string {
	var expired, missing, beyond, recreated, diverged int
	var records, divergedRecords int64
	for i := range results {
		switch results[i].Reason {
		case ReasonCommittedOffsetExpired:
			expired++
			records = addSaturating(records, results[i].ExpiredRecords)
		case ReasonNoCommittedOffset, ReasonNoShareStartOffset, ReasonResetToLatestSkipsRecords, ReasonOffsetResetMaySkipRecords:
			missing++
		case ReasonCommittedOffsetBeyondLogEnd:
			beyond++
		case ReasonCommittedOffsetOfDeletedTopic:
			recreated++
		case ReasonCommittedOffsetDiverged, ReasonCommittedEpochDiverged:
			diverged++
			divergedRecords = addSaturating(divergedRecords, results[i].DivergedRecords)
		}
	}
	var parts []string
	if expired > 0 {
		parts = append(parts, plural(int64(expired), "committed offset")+" below log start ("+plural(records, "record")+" expired)")
	}
	if missing > 0 {
		parts = append(parts, itoa(int64(missing))+" without a committed offset")
	}
	if beyond > 0 {
		parts = append(parts, plural(int64(beyond), "committed offset")+" beyond log end")
	}
	if recreated > 0 {
		parts = append(parts, plural(int64(recreated), "committed offset")+" of a deleted topic")
	}
	if diverged > 0 {
		parts = append(parts, plural(int64(diverged), "committed offset")+" past a diverged log ("+plural(divergedRecords, "record")+" read and truncated)")
	}
	return itoa(int64(expired+missing+beyond+recreated+diverged)) + " of " + plural(int64(len(results)), "partition") + " out of range: " +
		strings.Join(parts, ", ")
}
