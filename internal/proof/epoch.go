package proof

import "time"

// A log that diverged and grew back (issue 33 item 1). A partition
// truncated below its high watermark (an unclean leader election; on 3.9,
// and on 4.x without ELR, the last in-sync replica leading again after a
// power loss) grows back past the committed offset: the offset is in
// range again, but the records the group read below it were replaced.
//
//   - A commit with a leader epoch (KIP-320 clients) is validated by the
//     Java consumer: it asks the leader where that epoch ends
//     (OffsetsForLeaderEpoch) and, when the end is below its position,
//     rewinds to it, or throws under auto.offset.reset=none
//     (SubscriptionState.maybeCompleteValidation). The observer asks the
//     same question; an end below the commit is CommittedEpochDiverged,
//     with committed − end records read and gone from the log: a risk, not
//     a loss (the consumer skips nothing it has not read; it re-reads what
//     the log holds there now), while retention keeps the record at the
//     end: the partition's headroom is measured from it (RewindTimestamp,
//     setRewindHeadroom), and one below the window adds
//     RecoveryHeadroomShorterThanWindow, a risk too. An epoch the leader
//     does not know (above its own) stalls or resets the consumer:
//     CommittedLeaderEpochUnknown.
//   - A commit without an epoch (kafka-consumer-groups --reset-offsets,
//     Admin.alterConsumerGroupOffsets, clients without KIP-320) is never
//     validated: the consumer resumes at it silently, even under
//     auto.offset.reset=none. A long-running observer asks the leader the
//     consumer's question for the epoch its memory first saw the offset in
//     (CommitWitness: the log reached the offset in that epoch): an end
//     below the offset is a divergence since, CommittedOffsetDiverged with
//     its count when __consumer_offsets dates the commit before that
//     sighting, else CommittedOffsetOnDivergedLog (the same offset may have
//     been committed again after the log grew back). A witnessed fall of
//     the log end below it (internal/groupmemory) says the same:
//     CommittedOffsetOnDivergedLog. One observation sees it too when the
//     record before the committed offset was appended after the commit
//     was written (recordAfterCommit): the group cannot have read it, so
//     the log under the offset was replaced (or the offset was set past
//     the log end), and the records there are skipped.
//
// The way out of each is a new commit: decide whether to re-read the
// records from where the log diverged or accept the loss, then reset the
// group's offsets on the partition. The reset commits without an epoch
// (nothing left to validate) and the memory forgets a divergence once the
// offset changes. CommittedEpochDiverged needs none for a rollout; the
// group's next commit ends it (its consumer commits from where it rewound,
// in an epoch that ends at or past the new offset), and so does a reset to
// the epoch's end.

// judgeEpoch judges an otherwise proven partition's commit against its
// leader epoch and a divergence the observer witnessed; it returns the
// violation's message, or "" when nothing is wrong.
//
// retention is the topic's retention.ms when it deletes by time after a
// finite one (finite): a diverged commit's message says until when the
// records from its rewind point on are kept (setRewindHeadroom).
func judgeEpoch(pr *PartitionResult, to *TopicObservation, po *PartitionObservation, retention time.Duration, finite bool) string {
	if pr.Verdict != Proven || pr.Committed < 0 {
		return ""
	}
	e := po.CommitEpoch
	lateBy, late := recordAfterCommit(to, po)
	var m messageBuilder
	switch {
	case e.HasEpoch && e.EndKnown && (e.EndOffset < 0 || e.EndEpoch < 0):
		pr.Verdict, pr.Reason = Unknown, ReasonCommittedLeaderEpochUnknown
		m.partition(pr.Topic, pr.Partition).text(": committed offset ").int(pr.Committed).
			text(" carries leader epoch ").int(int64(e.Epoch)).
			text(", which the partition's leader does not know (OffsetsForLeaderEpoch: undefined, an epoch above its own): " +
				"a consumer stalls at it, or resets by auto.offset.reset, so where the group resumes cannot be proven; " +
				"check which records the group processed, then reset its offsets on this partition " +
				"(kafka-consumer-groups --reset-offsets --to-offset, which commits without an epoch)")
	case e.HasEpoch && e.EndKnown && e.EndOffset < pr.Committed && e.EndOffset < pr.LogStart:
		// The consumer rewinds to the epoch's end, which retention has
		// deleted since: out of range, it resets by auto.offset.reset and
		// skips what lay from there to the log start, records it never
		// read. A loss, as for a committed offset below the log start.
		pr.Verdict, pr.Reason = Violated, ReasonCommittedOffsetExpired
		pr.DivergedRecords = pr.Committed - e.EndOffset
		pr.ExpiredRecords = pr.LogStart - e.EndOffset
		m.partition(pr.Topic, pr.Partition).text(": committed offset ").int(pr.Committed).
			text(" was committed in leader epoch ").int(int64(e.Epoch)).
			text(", which ends at offset ").int(e.EndOffset).
			text(" on the partition's leader: the log was truncated below the group's position (an unclean leader election) and grew back, "+
				"and the Java consumer rewinds to ").int(e.EndOffset).
			text(", but retention has deleted it since (log start ").int(pr.LogStart).
			text("): out of range, the consumer resets by auto.offset.reset and skips the ").count(pr.ExpiredRecords, "record").
			text(" that expired before this group read them")
	case e.HasEpoch && e.EndKnown && e.EndOffset < pr.Committed:
		pr.Verdict, pr.Reason = Violated, ReasonCommittedEpochDiverged
		pr.DivergedRecords = pr.Committed - e.EndOffset
		m.partition(pr.Topic, pr.Partition).text(": committed offset ").int(pr.Committed).
			text(" was committed in leader epoch ").int(int64(e.Epoch)).
			text(", which ends at offset ").int(e.EndOffset).text(" on the partition's leader")
		if e.EndEpoch != e.Epoch {
			m.text(" (the last epoch it knows up to it is ").int(int64(e.EndEpoch)).text(")")
		}
		m.text(": the log was truncated below the group's position (an unclean leader election) and grew back. "+
			"The Java consumer validates the position on restart and rewinds to ").int(e.EndOffset).
			text(", reading the ").count(pr.DivergedRecords, "record").text(" now at offsets ").int(e.EndOffset).text(" to ").int(pr.Committed - 1).
			text(" (under auto.offset.reset=none it throws LogTruncationException and stops, loudly)")
		switch {
		case !finite:
			m.text(": nothing is skipped silently while the log keeps the record at ").int(e.EndOffset).
				text(" (no finite ").text(keyRetentionMs).text(" was read to say how long)")
		case po.RewindTimestamp.IsZero():
			m.text(": nothing is skipped silently while retention keeps the record at ").int(e.EndOffset).
				text(", whose age was not read (how long it is kept is not known)")
		default:
			m.text(": nothing is skipped silently while retention keeps the records from ").int(e.EndOffset).
				text(" on, until ").text(po.RewindTimestamp.Add(retention).UTC().Format(time.RFC3339)).
				text(" (the record at ").int(e.EndOffset).text("'s timestamp plus ").text(keyRetentionMs).
				text("; a consumer that comes back later finds it deleted and resets by auto.offset.reset)")
		}
		m.text(", but the ").
			count(pr.DivergedRecords, "record").text(" the group processed there are gone from the log: decide whether what it did with them must be undone. " +
			"The rollout needs no way out; the group's next commit ends this warning, or reset its offsets on this partition to ").int(e.EndOffset).
			text(" (kafka-consumer-groups --reset-offsets --to-offset ").int(e.EndOffset).text(")")
	case !e.HasEpoch && witnessDiverged(po, pr.Committed):
		w := po.CommitWitness
		m.partition(pr.Topic, pr.Partition).text(": committed offset ").int(pr.Committed).
			text(" carries no leader epoch (committed by kafka-consumer-groups --reset-offsets, Admin.alterConsumerGroupOffsets " +
				"or a client without KIP-320); the guard saw the log reach it in leader epoch ").int(int64(w.Epoch)).
			text(" (").text(w.SeenAt.UTC().Format(time.RFC3339)).text("), and ")
		if w.EndOffset < 0 {
			pr.Verdict, pr.Reason = Unknown, ReasonCommittedOffsetOnDivergedLog
			m.text("the partition's leader no longer knows that epoch (OffsetsForLeaderEpoch: undefined; the topic recreated, or its log replaced): " +
				"the records below the offset may be others than those the group read, and no consumer validates an offset without an epoch " +
				"(it resumes there silently, even under auto.offset.reset=none). Check which records the group processed, then reset its offsets " +
				"on this partition (kafka-consumer-groups --reset-offsets; this ends once the offset changes)")
			break
		}
		m.text("the partition's leader now says that epoch ends at offset ").int(w.EndOffset)
		if w.EndEpoch != w.Epoch {
			m.text(" (the last epoch it knows up to it is ").int(int64(w.EndEpoch)).text(")")
		}
		m.text(": the log was truncated below the offset since (an unclean leader election) and grew back")
		if !po.LastCommit.IsZero() && !po.LastCommit.After(w.SeenAt) {
			pr.Verdict, pr.Reason = Violated, ReasonCommittedOffsetDiverged
			pr.DivergedRecords = pr.Committed - w.EndOffset
			m.text(", and the offset was committed before (").text(po.LastCommit.UTC().Format(time.RFC3339)).
				text(", read from __consumer_offsets): offsets ").int(w.EndOffset).text(" to ").int(pr.Committed-1).
				text(" now hold ").count(pr.DivergedRecords, "record").text(" the group never read, and it resumes past them silently " +
				"(no consumer validates an offset without an epoch, even under auto.offset.reset=none)")
		} else {
			pr.Verdict, pr.Reason = Unknown, ReasonCommittedOffsetOnDivergedLog
			m.text("; the offset may not have been committed again since (")
			if po.LastCommit.IsZero() {
				m.text("its commit time is unknown: __consumer_offsets not read")
			} else {
				m.text("its last commit, ").text(po.LastCommit.UTC().Format(time.RFC3339)).text(", repeats the same offset")
			}
			m.text("), so offsets ").int(w.EndOffset).text(" to ").int(pr.Committed - 1).
				text(" may hold records the group never read, and no consumer validates an offset without an epoch " +
					"(it resumes there silently, even under auto.offset.reset=none)")
		}
		m.text(". Decide whether to re-read from ").int(w.EndOffset).
			text(" or accept the loss, then reset the group's offsets on this partition (kafka-consumer-groups --reset-offsets --to-offset ").
			int(w.EndOffset).text(" to re-read; this ends once the offset changes)")
	case !e.HasEpoch && po.LogDiverged && pr.Committed > po.DivergedTo:
		pr.Verdict, pr.Reason = Unknown, ReasonCommittedOffsetOnDivergedLog
		m.partition(pr.Topic, pr.Partition).text(": committed offset ").int(pr.Committed).
			text(" carries no leader epoch (committed by kafka-consumer-groups --reset-offsets, Admin.alterConsumerGroupOffsets " +
				"or a client without KIP-320), and the log end went down from ").int(po.DivergedFrom).
			text(" to ").int(po.DivergedTo).text(" (seen ").text(po.DivergedSeenAt.UTC().Format(time.RFC3339)).
			text(") since it was committed: the records the group read at offsets ").int(po.DivergedTo).text(" to ").int(pr.Committed - 1).
			text(" may have been truncated and replaced, and no consumer validates an offset without an epoch (it resumes there silently, " +
				"even under auto.offset.reset=none). Decide whether to re-read from ").int(po.DivergedTo).
			text(" or accept the loss, then reset the group's offsets on this partition (kafka-consumer-groups --reset-offsets --to-offset ").
			int(po.DivergedTo).text(" to re-read; this ends once the offset changes)")
	case late:
		pr.Verdict, pr.Reason = Unknown, ReasonCommittedOffsetOnDivergedLog
		m.partition(pr.Topic, pr.Partition).text(": committed offset ").int(pr.Committed).
			text(" carries no leader epoch (committed by kafka-consumer-groups --reset-offsets, Admin.alterConsumerGroupOffsets " +
				"or a client without KIP-320), and the record before it, at offset ").int(pr.Committed - 1).
			text(", was appended at least ").text(FormatDuration(lateBy)).
			text(" after the offset was committed (").text(po.LastCommit.UTC().Format(time.RFC3339)).
			text(", read from __consumer_offsets; the record's timestamp less how far ahead its producer's clock may run): " +
				"the group cannot have read it, so the log under the offset was truncated and grew back since the commit " +
				"(an unclean leader election) or the offset was set past the log end, and no consumer validates an offset without an epoch " +
				"(it resumes there silently, even under auto.offset.reset=none, skipping the records written below it since). " +
				"Decide whether to re-read them or accept the loss, then reset the group's offsets on this partition " +
				"(kafka-consumer-groups --reset-offsets --to-datetime ").text(po.LastCommit.UTC().Format("2006-01-02T15:04:05.000")).
			text(" re-reads from the first record written after the commit; this ends once the offset changes)")
	default:
		return ""
	}
	return m.String()
}

// witnessDiverged says whether the leader epoch an epoch-less committed
// offset was first seen in ends below it on the partition's leader now, or
// is unknown to it.
func witnessDiverged(po *PartitionObservation, committed int64) bool {
	w := po.CommitWitness
	return w.Known && w.EndKnown && committed > 0 && (w.EndOffset < 0 || w.EndEpoch < 0 || w.EndOffset < committed)
}

// recordAfterCommit says whether the record before an epoch-less committed
// offset was appended after the commit was written, and by at least how
// much: the commit's exact time (LastCommit, the coordinator's clock, from
// __consumer_offsets) against the earliest the record can have been
// appended (its timestamp with LogAppendTime; with CreateTime, less
// message.timestamp.after.max.ms, which the broker holds a producer's
// clock to: clockSkew), beyond CoordinatorClockAllowance for the two
// brokers' clocks. Without an exact commit time, a dated record before it
// or a bound on the producer's clock (3.x's unbounded default), nothing is
// said: the group memory's witnessed fall of the log end is then the only
// evidence.
func recordAfterCommit(to *TopicObservation, po *PartitionObservation) (time.Duration, bool) {
	if po.CommitEpoch.HasEpoch || po.LogDiverged || po.LastCommit.IsZero() || po.PrecedingTimestamp.IsZero() {
		return 0, false
	}
	skew, problem := clockSkew(to)
	if problem != "" {
		return 0, false
	}
	by := po.PrecedingTimestamp.Add(-skew).Sub(po.LastCommit)
	if by <= CoordinatorClockAllowance {
		return 0, false
	}
	return by, true
}
