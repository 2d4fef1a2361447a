package proof

import (
	"strconv"
	"time"
)

// Tombstone headroom (issue 33 item 2; exact per tombstone, issue 32
// item 5). On a compacting topic the log cleaner keeps a tombstone (a
// record with a null value) until the deleteHorizonMs stamped on its batch
// by the first cleaning that retained it: that cleaning's start time plus
// delete.retention.ms (Kafka's MemoryRecords.filterTo sets
// "deleteHorizonMs = filter.currentTime + filter.deleteRetentionMs" on a
// v2 batch holding tombstones that has none yet, needToSetDeleteHorizon;
// Cleaner.shouldRetainRecord keeps a tombstone while its batch has no
// horizon, "!batch.deleteHorizonMs().isPresent", or "currentTime <
// batch.deleteHorizonMs()"). The cleaning's clock is read once per log, in
// Cleaner.clean ("doClean(cleanable, time.milliseconds())", 3.9's
// LogCleaner.scala and 4.4's Cleaner.java), before it builds its offset
// map and rewrites the log from its start to the cleanable end, which lies
// below the active segment: it never precedes the tombstone's write.
// Batches of the old format (magic < 2) go by their segment's
// lastModified, which does not precede it either.
//
// Three bounds on the earliest drop, by what the observer read (the
// observation's TombstoneScan: the whole batches it decoded at and after
// the committed offset of a lagging group, kafka/timestamps.go):
//
//   - A tombstone found in a batch stamped with a horizon goes no earlier
//     than that horizon, on the partition leader's clock: less
//     CoordinatorClockAllowance, for a broker's clock running ahead of
//     the guard's (clockskew.go).
//   - A tombstone found in a batch without one had not been retained by
//     any cleaning when the leader answered: its horizon will be the start
//     of the cleaning that first covers it + delete.retention.ms. A
//     cleaning that starts after the read starts after it; only one
//     already running then can have started before, and a cleaning runs
//     one log at a time with one clock, so it started no earlier than the
//     read less CleaningAllowance (how long one cleaning of one log may
//     run, DefaultCleaningAllowance). So it goes no earlier than
//     max(read − CleaningAllowance, its write) + delete.retention.ms; both
//     ends are the broker's clock against real time, so no clock skew
//     enters.
//   - A tombstone not decoded (beyond the whole batches read) lies at or
//     after the committed offset, so it was written no earlier than the
//     record there (or than the first record of the batch cut where the
//     decoding stopped, when its header gives one). That record's
//     timestamp is the broker's append time with LogAppendTime; with
//     CreateTime it is the producer's, at most
//     message.timestamp.after.max.ms ahead of the broker's clock
//     (LogValidator.validateTimestamp), so the record was written no
//     earlier than its timestamp less that (clockSkew): timestamp − skew +
//     delete.retention.ms.
//
// The headroom is the least of them, less now. When the whole batches
// reach the high watermark and hold no tombstone, the group has no
// tombstone to miss among the records it has not read: later tombstones
// live delete.retention.ms from their write, which
// checkTombstoneRetention covers, as for a caught-up group.
//
// Assumed, as for the rest of the proof: the brokers' clocks agree with
// the observer's "now" (within CoordinatorClockAllowance for a stamped
// horizon); delete.retention.ms was not raised since the cleaner first saw
// those tombstones (a horizon already stamped on a batch keeps the value
// of its day); no cleaning of one log runs longer than CleaningAllowance
// (a cleaner throttled by log.cleaner.io.max.bytes.per.second on a very
// large log can); and the replica read (the leader) is the one the group
// will read: a follower cleans its own copy, at its own times, and a
// leader change to one that stamped the batch earlier is not covered.

// DefaultCleaningAllowance is how long a cleaning already running when
// the observer read a batch without a delete horizon may have started
// before the read. One Cleaner.doClean of one log reads its dirty part to
// build the offset map (at most log.cleaner.dedupe.buffer.size of keys,
// 128 MiB by default) and rewrites the log from its start to the
// cleanable end with one currentTime: an hour covers rewriting some 100
// GiB at 30 MiB/s, beyond the compacted logs it is meant for. What it
// costs: a tombstone not yet cleaned counts as read an hour early, so
// delete.retention.ms must exceed the window by an hour for a lagging
// group behind one to be proven.
const DefaultCleaningAllowance = time.Hour

// tombstoneClock is what bounds, on one compacting topic, when the log
// cleaner can drop a tombstone.
type tombstoneClock struct {
	// deleteRetention is delete.retention.ms.
	deleteRetention time.Duration
	// skew is how long before its own timestamp a record may have been
	// written: 0 with LogAppendTime, message.timestamp.after.max.ms with
	// CreateTime (clockSkew). skewKnown is false when it is unbounded
	// (CreateTime with message.timestamp.after.max.ms unbounded, Kafka
	// 3.x's default): then no record's timestamp bounds its write, and
	// only the tombstones the observer found do.
	skew      time.Duration
	skewKnown bool
}

// tombstoneClockOf returns the topic's tombstone clock. It is false when
// the topic does not compact and when its delete.retention.ms is
// unreadable or invalid (RetentionCoversWindow reports that).
func tombstoneClockOf(t *topicFacts) (tombstoneClock, bool) {
	rc := t.retention
	if t.obs == nil || rc.cleanupProblem != "" || !rc.compacts || rc.deleteRetentionProblem != "" || rc.deleteRetentionMs < 0 {
		return tombstoneClock{}, false
	}
	skew, problem := clockSkew(t.obs)
	return tombstoneClock{deleteRetention: millisToDuration(rc.deleteRetentionMs), skew: skew, skewKnown: problem == ""}, true
}

// earliestTombstoneDrop is the earliest time the log cleaner can drop a
// tombstone written after a record stamped stamp: stamp − skew +
// delete.retention.ms (see the top of this file); zero when stamp is
// unknown or does not bound the write.
func earliestTombstoneDrop(stamp time.Time, c tombstoneClock) time.Time {
	if stamp.IsZero() || !c.skewKnown {
		return time.Time{}
	}
	return stamp.Add(-c.skew).Add(c.deleteRetention)
}

// tombstoneDrop is the earliest drop of the tombstones at or after
// position, with what set it (see the top of this file); false when
// unknown, or when the scan read to the high watermark and found none.
func tombstoneDrop(position int64, stamp time.Time, scan *TombstoneScan, c tombstoneClock) (at time.Time, bound TombstoneBound, offset int64, horizon time.Time, ok bool) {
	coarse := earliestTombstoneDrop(stamp, c)
	if scan == nil || scan.From != position || scan.FetchedAt.IsZero() || scan.Through <= position {
		return coarse, TombstoneUnread, NoOffset, time.Time{}, !coarse.IsZero()
	}
	for _, ts := range scan.Found {
		if ts.Offset < position || ts.Offset >= scan.Through {
			continue
		}
		var d time.Time
		b := TombstoneStamped
		if !ts.DeleteHorizon.IsZero() {
			d = ts.DeleteHorizon.Add(-CoordinatorClockAllowance)
		} else {
			b = TombstoneFound
			d = scan.FetchedAt.Add(-scan.CleaningAllowance).Add(c.deleteRetention)
			for _, w := range []time.Time{earliestTombstoneDrop(ts.Timestamp, c), coarse} {
				if w.After(d) {
					d = w
				}
			}
		}
		if !ok || d.Before(at) {
			at, bound, offset, horizon, ok = d, b, ts.Offset, ts.DeleteHorizon, true
		}
	}
	if scan.ReachesEnd {
		return at, bound, offset, horizon, ok
	}
	rest := coarse
	if next := earliestTombstoneDrop(scan.NextTimestamp, c); next.After(rest) {
		rest = next
	}
	if rest.IsZero() {
		// The records not decoded are not dated: unknown, not guessed.
		return time.Time{}, TombstoneUnread, NoOffset, time.Time{}, false
	}
	if !ok || rest.Before(at) {
		return rest, TombstoneUnread, NoOffset, time.Time{}, true
	}
	return at, bound, offset, horizon, ok
}

// scanReachesEnd reports whether the observer decoded every batch from
// position to the high watermark (TombstoneScan.ReachesEnd).
func scanReachesEnd(position int64, scan *TombstoneScan) bool {
	return scan != nil && scan.From == position && !scan.FetchedAt.IsZero() && scan.Through > position && scan.ReachesEnd
}

// ClockSkewBounded reports whether the timestamps of topic t's records
// bound when they were written (LogAppendTime, or CreateTime with
// message.timestamp.after.max.ms bounded): where they do not, only the
// tombstones the observer reads bound a lagging group's, so it reads to
// the high watermark where it can (internal/kafka's rescanTombstones).
func ClockSkewBounded(t *TopicObservation) bool {
	_, problem := clockSkew(t)
	return problem == ""
}

// setTombstoneHeadroom sets how long until the log cleaner may drop a
// tombstone at or after position, the group's (committed offset, or
// business cursor with resumeFrom Cursor), whose record is stamped stamp;
// scan is what the observer decoded there (nil when it did not). Only a
// lagging position in range has one: at log end the group has read every
// tombstone written so far. An unknown stamp is skipped, not guessed, like
// the record headroom (setHeadroom), unless the scan bounds every
// tombstone after position.
//
// When nothing bounds them — the scan stopped short of the high watermark
// (or there was none) and the records' timestamps do not date their write
// (not read, or CreateTime with message.timestamp.after.max.ms unbounded,
// Kafka 3.x's default) — the partition is TombstonesUnread: a tombstone
// written long ago may have been stamped long ago and go at any moment,
// so nothing is proven (fail closed; before, such a partition was left
// Proven).
func setTombstoneHeadroom(pr *PartitionResult, position int64, stamp time.Time, scan *TombstoneScan, c tombstoneClock, now time.Time) {
	pr.TombstoneHeadroom, pr.HasTombstoneHeadroom, pr.TombstonesUnread = 0, false, false
	pr.TombstoneBound, pr.TombstoneOffset, pr.TombstoneHorizon = TombstoneUnread, NoOffset, time.Time{}
	if pr.Verdict != Proven || position == NoOffset || position < pr.LogStart || position >= pr.LogEnd {
		return
	}
	at, bound, offset, horizon, ok := tombstoneDrop(position, stamp, scan, c)
	if !ok {
		// Read to the high watermark with no tombstone: none to miss.
		pr.TombstonesUnread = !scanReachesEnd(position, scan)
		return
	}
	pr.TombstoneHeadroom, pr.HasTombstoneHeadroom = at.Sub(now), true
	pr.TombstoneBound, pr.TombstoneOffset, pr.TombstoneHorizon = bound, offset, horizon
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
		if pr.TombstonesUnread && !failed[pr.Topic] {
			o.add(Violation{
				Reason: ReasonTombstonesUnread, Topic: pr.Topic, Partition: pr.Partition,
				Message:   tombstonesUnreadMessage(pr, f, window),
				Committed: NoOffset, LogStart: -1, LogEnd: -1, Cursor: NoOffset,
			})
			continue
		}
		if !pr.HasTombstoneHeadroom || pr.TombstoneHeadroom >= window || failed[pr.Topic] {
			continue
		}
		o.add(Violation{
			Reason: ReasonTombstoneHeadroomShorterThanWindow, Topic: pr.Topic, Partition: pr.Partition,
			Message:   tombstoneMessage(pr, f.policy.Cursor.ResumesFromCursor(), window),
			Committed: NoOffset, LogStart: -1, LogEnd: -1, Cursor: NoOffset,
			// The earliest drop the headroom was computed from (one of
			// the three bounds above): now cancels out.
			ExpiresAt: f.now.Add(pr.TombstoneHeadroom),
		})
	}
}

// tombstonesUnreadMessage renders a TombstonesUnread violation: why
// nothing bounded the tombstones, and what changes the verdict.
func tombstonesUnreadMessage(pr *PartitionResult, f *facts, window time.Duration) string {
	var m messageBuilder
	at, position := "committed offset ", pr.Committed
	if f.policy.Cursor.ResumesFromCursor() {
		at, position = "business cursor ", pr.Cursor
	}
	skewProblem := ""
	for i := range f.topics {
		if t := &f.topics[i]; t.name == pr.Topic && t.obs != nil {
			_, skewProblem = clockSkew(t.obs)
		}
	}
	m.partition(pr.Topic, pr.Partition).text(": the group is ").count(pr.Lag, "record").text(" behind ").text(at).int(position).
		text(" on a compacting topic, and the guard neither read the records after it to the high watermark nor dated them")
	if skewProblem != "" {
		m.text(" (").text(keyTimestampType).text(" CreateTime with ").text(keyTimestampAfterMaxMs).
			text(" unbounded: a record's timestamp does not bound when it was written)")
	} else {
		m.text(" (the record there was not dated)")
	}
	m.text(": a tombstone among them may have been cleaned long ago and be dropped at any moment, so nothing shows the group " +
		"sees every delete through recoveryWindow ").text(FormatDuration(window)).
		text("; let it catch up, bound ").text(keyTimestampAfterMaxMs).text(" on the topic (an hour, Kafka 4's default) or set ").
		text(keyTimestampType).text(" LogAppendTime (the record's timestamp then dates the tombstones after it), or grant Read on the topic if it was refused")
	return m.String()
}

// tombstoneMessage renders a TombstoneHeadroomShorterThanWindow violation.
func tombstoneMessage(pr *PartitionResult, fromCursor bool, window time.Duration) string {
	var m messageBuilder
	at, position := "committed offset ", pr.Committed
	if fromCursor {
		at, position = "business cursor ", pr.Cursor
	}
	m.partition(pr.Topic, pr.Partition)
	which := "a tombstone at or after " + at + strconv.FormatInt(position, 10)
	if pr.TombstoneBound != TombstoneUnread {
		which = "the tombstone at offset " + strconv.FormatInt(pr.TombstoneOffset, 10) + " (after " + at + strconv.FormatInt(position, 10) + ")"
	}
	if pr.TombstoneHeadroom <= 0 {
		m.text(": the log cleaner may already have dropped ").text(which).
			text(" (the earliest it could was ").text(FormatDuration(-pr.TombstoneHeadroom)).text(" ago)")
	} else {
		m.text(": the log cleaner may drop ").text(which).text(" in ").
			text(FormatDuration(pr.TombstoneHeadroom)).text(", sooner than recoveryWindow ").text(FormatDuration(window))
	}
	switch pr.TombstoneBound {
	case TombstoneStamped:
		m.text(" (a cleaning kept it and stamped its batch's delete horizon " + pr.TombstoneHorizon.UTC().Format(time.RFC3339) +
			", on the partition leader's clock: the cleaner drops it from then on)")
	case TombstoneFound:
		m.text(" (no cleaning had kept it yet when read: " + keyDeleteRetentionMs + " counts from the cleaning that first does, " +
			"which may have started a little before the read, if one was running then)")
	default:
		m.text(" (" + keyDeleteRetentionMs + " counts from the tombstone's write, no earlier than the record there)")
	}
	m.text(": the group is ").
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
