package proof

import (
	"time"
)

// setHeadroom sets how long until retention deletes the record at the
// partition's committed offset: timestamp(record at committed) +
// retention.ms − now. A caught-up partition (committed == logEnd) has the
// full retention.ms. Only partitions whose committed offset is in range
// have headroom, and only on topics that delete by time after a finite
// retention.ms (the caller checks that); a partition whose committed
// record's timestamp is unknown is not guessed: setUnreadHeadroom judges it
// from ListOffsets by timestamp, or leaves it RecordTimestampUnread.
func setHeadroom(pr *PartitionResult, committedTimestamp time.Time, retention time.Duration, now time.Time) {
	switch {
	case pr.Verdict != Proven || pr.Committed == NoOffset || pr.Committed < pr.LogStart:
		// (A share group's acknowledged SPSO below log start: its record
		// is gone, nothing is pending.)
	case pr.Committed == pr.LogEnd:
		pr.Headroom, pr.HasHeadroom = retention, true
	case !committedTimestamp.IsZero():
		pr.Headroom, pr.HasHeadroom = committedTimestamp.Add(retention).Sub(now), true
	}
}

// setRewindHeadroom sets, on a CommittedEpochDiverged partition, how long
// until retention deletes the record at the end of the commit's leader
// epoch: the Java consumer validates its position and rewinds there, so
// that record, not the one at the committed offset, is the oldest it has
// not read (timestamp + retention.ms − now, as setHeadroom; the caller
// checks the topic deletes by time after a finite retention.ms). A
// record the observer did not date (RewindTimestamp zero) is not guessed:
// the partition has no headroom, and its violation says the age was not
// read.
func setRewindHeadroom(pr *PartitionResult, rewindTimestamp time.Time, retention time.Duration, now time.Time) {
	if _, ok := rewindPoint(pr); ok && !rewindTimestamp.IsZero() {
		pr.Headroom, pr.HasHeadroom = rewindTimestamp.Add(retention).Sub(now), true
	}
}

// rewindPoint is where a consumer whose commit diverged
// (CommittedEpochDiverged) resumes: the end of its leader epoch.
func rewindPoint(pr *PartitionResult) (int64, bool) {
	if pr.Verdict != Violated || pr.Reason != ReasonCommittedEpochDiverged {
		return 0, false
	}
	return pr.Committed - pr.DivergedRecords, true
}

// recoveryHeadroom returns the smallest partition headroom, record or
// tombstone, with a warning when it is below the recovery window: a
// lagging consumer that goes down now would lose data (a record, or a
// delete) sooner than the window promises.
func recoveryHeadroom(window time.Duration, results []PartitionResult) (time.Duration, bool, *Warning) {
	best, tombstone := -1, false
	var least time.Duration
	for i := range results {
		pr := &results[i]
		if pr.HasHeadroom && (best < 0 || pr.Headroom < least) {
			best, tombstone, least = i, false, pr.Headroom
		}
		if pr.HasTombstoneHeadroom && (best < 0 || pr.TombstoneHeadroom < least) {
			best, tombstone, least = i, true, pr.TombstoneHeadroom
		}
	}
	switch {
	case best < 0:
		return 0, false, nil
	case least >= window:
		return least, true, nil
	case tombstone:
		return least, true, tombstoneWarning(&results[best], window)
	}
	pr := &results[best]
	committed := pr.Committed
	w := &Warning{Type: WarningRecoveryHeadroom, Reason: WarningReasonShorterThanWindow,
		Subject: partitionName(pr.Topic, pr.Partition), Offset: &committed,
		Duration: pr.Headroom, Limit: window}
	switch rewind, rewinds := rewindPoint(pr); {
	case rewinds:
		w.Reason, w.Offset = WarningReasonRewindShorterThanWindow, &rewind
	case !pr.MayExpireBy.IsZero():
		// Undated (undated.go): it may be deleted any moment.
		w.Reason = WarningReasonMayExpireBeforeWindow
	case pr.Headroom <= 0:
		w.Reason = WarningReasonPastRetention
	}
	w.Message = headroomMessage(w)
	return pr.Headroom, true, w
}

// headroomMessage renders a WarningRecoveryHeadroom.
func headroomMessage(w *Warning) string {
	switch w.Reason {
	case WarningReasonRewindShorterThanWindow:
		m := w.Subject + ": the group's consumer rewinds to offset " + itoa(*w.Offset) +
			" (its committed leader epoch ends there: the log diverged below its position), and retention "
		if w.Duration <= 0 {
			return m + "may delete the record there at any moment (past retention by " + FormatDuration(-w.Duration) +
				"): a consumer that goes down now loses the records from there on that it has not read"
		}
		return m + "deletes the record there in " + FormatDuration(w.Duration) + ", sooner than recoveryWindow " + FormatDuration(w.Limit) +
			": a consumer that goes down now loses the records from there on that it has not read before the window ends"
	case WarningReasonMayExpireBeforeWindow:
		return w.Subject + ": the record at committed offset " + itoa(*w.Offset) + " was not dated and may be deleted by retention before recoveryWindow " +
			FormatDuration(w.Limit) + " ends: a consumer that goes down now may lose data"
	case WarningReasonPastRetention:
		return w.Subject + ": the record at committed offset " + itoa(*w.Offset) + " is past retention by " +
			FormatDuration(-w.Duration) + " and can be deleted at any moment: a consumer that goes down now loses data"
	case WarningReasonTombstoneMayBeDropped:
		return w.Subject + ": the log cleaner may already have dropped a tombstone at or after committed offset " + itoa(*w.Offset) +
			" (the earliest it could was " + FormatDuration(-w.Duration) + " ago): a consumer that goes down now may miss a delete"
	case WarningReasonTombstoneShorterThanWindow:
		return w.Subject + ": the log cleaner may drop a tombstone at or after committed offset " + itoa(*w.Offset) + " in " +
			FormatDuration(w.Duration) + ", sooner than recoveryWindow " + FormatDuration(w.Limit) +
			": a lagging consumer that goes down now may miss the delete before the window ends"
	}
	return w.Subject + ": retention deletes the record at committed offset " + itoa(*w.Offset) + " in " +
		FormatDuration(w.Duration) + ", sooner than recoveryWindow " + FormatDuration(w.Limit) +
		": a lagging consumer that goes down now loses data before the window ends"
}

func groupName(f *facts) string {
	switch {
	case f.policy.GroupID != "":
		return f.policy.GroupID
	case f.obs.Group.ID != "":
		return f.obs.Group.ID
	}
	return "(unnamed)"
}

// failedTopics names the topics whose retention already fails: their
// violation says it for every partition, no headroom violation repeats it.
func failedTopics(vs []Violation) map[string]bool {
	failed := make(map[string]bool)
	for _, v := range vs {
		failed[v.Topic] = true
	}
	return failed
}

// headroomViolations adds, per partition whose headroom is below the
// window, a RecoveryHeadroomShorterThanWindow violation (failed: see
// failedTopics). Its facts for the
// proofID are the topic and partition only (no committed offset, no log
// start): the gap keeps its proofID while the consumer catches up. It is
// a risk (IsRisk): alone, it lets a rollout of a faster consumer through
// with a warning; beside another violation, the override annotation names
// the proofID.
func headroomViolations(o *clauseOutcome, f *facts, partitions []PartitionResult, failed map[string]bool) {
	window := f.policy.RecoveryWindow
	fromCursor := f.policy.Cursor.ResumesFromCursor()
	for i := range partitions {
		pr := &partitions[i]
		if !pr.HasHeadroom || pr.Headroom >= window || failed[pr.Topic] || !pr.MayExpireBy.IsZero() {
			// (An undated record that may expire: unreadViolations.)
			continue
		}
		var m messageBuilder
		m.partition(pr.Topic, pr.Partition)
		at := "committed offset "
		position := pr.Committed
		rewind, rewinds := rewindPoint(pr)
		switch {
		case fromCursor:
			at, position = "business cursor ", pr.Cursor
		case rewinds:
			// CommittedEpochDiverged: the consumer resumes at the end of
			// its commit's leader epoch (setRewindHeadroom).
			at, position = "offset ", rewind
		}
		if pr.Headroom <= 0 {
			m.text(": the record at ").text(at).int(position).text(" is past retention by ").text(FormatDuration(-pr.Headroom)).
				text(" and can be deleted at any moment")
		} else {
			m.text(": retention deletes the record at ").text(at).int(position).text(" in ").text(FormatDuration(pr.Headroom)).
				text(", sooner than recoveryWindow ").text(FormatDuration(window))
		}
		behind := pr.Lag
		if rewinds && !fromCursor {
			m.text(", where the group's consumer rewinds to from committed offset ").int(pr.Committed).
				text(" (its leader epoch ends there: the log diverged below the group's position)")
			behind += pr.DivergedRecords
		}
		m.text(": the group is ").count(behind, "record").text(" behind and cannot be down for its window without losing them; " +
			"let it catch up (nothing is lost yet: a rollout of a faster consumer is allowed with a warning), or raise ").
			text(keyRetentionMs)
		o.add(Violation{
			Reason: ReasonRecoveryHeadroomShorterThanWindow, Topic: pr.Topic, Partition: pr.Partition, Message: m.String(),
			Committed: NoOffset, LogStart: -1, LogEnd: -1, Cursor: NoOffset,
			// The record's timestamp plus retention.ms: now cancels out.
			ExpiresAt: f.now.Add(pr.Headroom),
		})
	}
}
