package proof

import (
	"time"
)

// Tombstone headroom (issue 33 item 2). On a compacting topic the log
// cleaner keeps a tombstone (a record with a null value) until the
// deleteHorizonMs stamped on its batch by the first cleaning that retained
// it: that cleaning's start time plus delete.retention.ms (Kafka's
// MemoryRecords.filterTo, "deleteHorizonMs = filter.currentTime +
// filter.deleteRetentionMs"; Cleaner.shouldRetainRecord keeps it while
// "currentTime < batch.deleteHorizonMs()"). The cleaning's clock is read in
// Cleaner.clean after LogCleanerManager chose a range below the active
// segment, so it never precedes the tombstone's write; batches of the old
// format (magic < 2) go by their segment's lastModified, which does not
// precede it either. So a tombstone goes no earlier than written +
// delete.retention.ms, on the broker's clock.
//
// A tombstone the group has not read lies at or after its committed
// offset, so it was written no earlier than the record there. That
// record's timestamp is the broker's append time with LogAppendTime; with
// CreateTime it is the producer's, at most message.timestamp.after.max.ms
// ahead of the broker's clock (LogValidator.validateTimestamp), so the
// record was written no earlier than its timestamp less that (clockSkew).
// Hence the earliest the cleaner can drop a tombstone the group has not
// read is timestamp(record at committed) − skew + delete.retention.ms: a
// group behind a tombstone has less than delete.retention.ms, and a proof
// that checks only delete.retention.ms ≥ window (checkTombstoneRetention)
// overstates it. This is what "kept delete.retention.ms" means for a
// group that lags; a caught-up group has read every tombstone written so
// far, and later ones live delete.retention.ms from their write, which
// checkTombstoneRetention covers.
//
// Assumed, as for the rest of the proof: the brokers' clocks agree with
// the observer's "now"; and delete.retention.ms was not raised since the
// cleaner first saw those tombstones (a horizon already stamped on a batch
// keeps the value of its day).

// tombstoneClock is what bounds, on one compacting topic, when the log
// cleaner can drop a tombstone.
type tombstoneClock struct {
	// deleteRetention is delete.retention.ms.
	deleteRetention time.Duration
	// skew is how long before its own timestamp a record may have been
	// written: 0 with LogAppendTime, message.timestamp.after.max.ms with
	// CreateTime (clockSkew).
	skew time.Duration
}

// tombstoneClockOf returns the topic's tombstone clock. It is false when
// the topic does not compact, when its delete.retention.ms is unreadable
// or invalid (RetentionCoversWindow reports that), and when its record
// timestamps do not bound when a record was written (CreateTime with
// message.timestamp.after.max.ms unbounded, Kafka 3.x's default): then no
// tombstone headroom is computed, as for an unknown timestamp.
func tombstoneClockOf(t *topicFacts) (tombstoneClock, bool) {
	rc := t.retention
	if t.obs == nil || rc.cleanupProblem != "" || !rc.compacts || rc.deleteRetentionProblem != "" || rc.deleteRetentionMs < 0 {
		return tombstoneClock{}, false
	}
	skew, problem := clockSkew(t.obs)
	if problem != "" {
		return tombstoneClock{}, false
	}
	return tombstoneClock{deleteRetention: millisToDuration(rc.deleteRetentionMs), skew: skew}, true
}

// earliestTombstoneDrop is the earliest time the log cleaner can drop a
// tombstone written after a record stamped stamp: stamp − skew +
// delete.retention.ms (see the top of this file).
func earliestTombstoneDrop(stamp time.Time, c tombstoneClock) time.Time {
	return stamp.Add(-c.skew).Add(c.deleteRetention)
}

// setTombstoneHeadroom sets how long until the log cleaner may drop a
// tombstone at or after position, the group's (committed offset, or
// business cursor with resumeFrom Cursor), whose record is stamped stamp.
// Only a lagging position in range has one: at log end the group has read
// every tombstone written so far. An unknown stamp is skipped, not
// guessed, like the record headroom (setHeadroom).
func setTombstoneHeadroom(pr *PartitionResult, position int64, stamp time.Time, c tombstoneClock, now time.Time) {
	pr.TombstoneHeadroom, pr.HasTombstoneHeadroom = 0, false
	switch {
	case pr.Verdict != Proven || position == NoOffset || position < pr.LogStart || position >= pr.LogEnd:
	case stamp.IsZero():
	default:
		pr.TombstoneHeadroom, pr.HasTombstoneHeadroom = earliestTombstoneDrop(stamp, c).Sub(now), true
	}
}

// tombstoneViolations adds, per partition whose tombstone headroom is
// below the window, a TombstoneHeadroomShorterThanWindow violation; failed
// names the topics whose retention already fails (their violation says it
// for every partition). Its proofID facts are the topic and partition
// only, like RecoveryHeadroomShorterThanWindow: the gap keeps its proofID
// while the consumer catches up. It is a risk (IsRisk): nothing is lost
// yet.
func tombstoneViolations(o *clauseOutcome, f *facts, partitions []PartitionResult, failed map[string]bool) {
	window := f.policy.RecoveryWindow
	for i := range partitions {
		pr := &partitions[i]
		if !pr.HasTombstoneHeadroom || pr.TombstoneHeadroom >= window || failed[pr.Topic] {
			continue
		}
		o.add(Violation{
			Reason: ReasonTombstoneHeadroomShorterThanWindow, Topic: pr.Topic, Partition: pr.Partition,
			Message:   tombstoneMessage(pr, f.policy.Cursor.ResumesFromCursor(), window),
			Committed: NoOffset, LogStart: -1, LogEnd: -1, Cursor: NoOffset,
			// The record's timestamp − skew + delete.retention.ms: now
			// cancels out.
			ExpiresAt: f.now.Add(pr.TombstoneHeadroom),
		})
	}
}

// tombstoneMessage renders a TombstoneHeadroomShorterThanWindow violation.
func tombstoneMessage(pr *PartitionResult, fromCursor bool, window time.Duration) string {
	var m messageBuilder
	at, position := "committed offset ", pr.Committed
	if fromCursor {
		at, position = "business cursor ", pr.Cursor
	}
	m.partition(pr.Topic, pr.Partition)
	if pr.TombstoneHeadroom <= 0 {
		m.text(": the log cleaner may already have dropped a tombstone at or after ").text(at).int(position).
			text(" (the earliest it could was ").text(FormatDuration(-pr.TombstoneHeadroom)).text(" ago)")
	} else {
		m.text(": the log cleaner may drop a tombstone at or after ").text(at).int(position).text(" in ").
			text(FormatDuration(pr.TombstoneHeadroom)).text(", sooner than recoveryWindow ").text(FormatDuration(window))
	}
	m.text(" ("+keyDeleteRetentionMs+" counts from the tombstone's write, no earlier than the record there): the group is ").
		count(pr.Lag, "record").text(" behind, and down for its window it may never see a delete and keep the key forever; " +
		"let it catch up past the tombstones (nothing is lost yet: a rollout of a faster consumer is allowed with a warning), or raise ").
		text(keyDeleteRetentionMs + " before the cleaner first sees them (a tombstone keeps the horizon its first cleaning stamped)")
	return m.String()
}

// tombstoneWarning is the recoveryHeadroom warning when the smallest
// headroom is a partition's tombstone headroom.
func tombstoneWarning(pr *PartitionResult, window time.Duration) *Warning {
	committed := pr.Committed
	w := &Warning{Type: WarningRecoveryHeadroom, Reason: WarningReasonTombstoneShorterThanWindow,
		Subject: partitionName(pr.Topic, pr.Partition), Offset: &committed,
		Duration: pr.TombstoneHeadroom, Limit: window}
	if pr.TombstoneHeadroom <= 0 {
		w.Reason = WarningReasonTombstoneMayBeDropped
	}
	w.Message = headroomMessage(w)
	return w
}
