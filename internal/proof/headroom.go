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
// record's timestamp is unknown is skipped, not guessed.
func setHeadroom(pr *PartitionResult, committedTimestamp time.Time, retention time.Duration, now time.Time) {
	switch {
	case pr.Verdict != Proven || pr.Committed == NoOffset:
	case pr.Committed == pr.LogEnd:
		pr.Headroom, pr.HasHeadroom = retention, true
	case !committedTimestamp.IsZero():
		pr.Headroom, pr.HasHeadroom = committedTimestamp.Add(retention).Sub(now), true
	}
}

// recoveryHeadroom returns the smallest partition headroom, with a warning
// when it is below the recovery window: a lagging consumer that goes down
// now would lose data sooner than the window promises.
func recoveryHeadroom(window time.Duration, results []PartitionResult) (time.Duration, bool, *Warning) {
	best := -1
	for i := range results {
		if results[i].HasHeadroom && (best < 0 || results[i].Headroom < results[best].Headroom) {
			best = i
		}
	}
	if best < 0 {
		return 0, false, nil
	}
	pr := &results[best]
	if pr.Headroom >= window {
		return pr.Headroom, true, nil
	}
	name := partitionName(pr.Topic, pr.Partition)
	var msg string
	if pr.Headroom <= 0 {
		msg = name + ": the record at committed offset " + itoa(pr.Committed) + " is past retention by " +
			FormatDuration(-pr.Headroom) + " and can be deleted at any moment: a consumer that goes down now loses data"
	} else {
		msg = name + ": retention deletes the record at committed offset " + itoa(pr.Committed) + " in " +
			FormatDuration(pr.Headroom) + ", sooner than recoveryWindow " + FormatDuration(window) +
			": a lagging consumer that goes down now loses data before the window ends"
	}
	return pr.Headroom, true, &Warning{Type: WarningRecoveryHeadroom, Message: msg, Duration: pr.Headroom}
}

// groupOffsetsExpireIn says how long until the broker deletes an empty
// group's committed offsets, with a warning when that is sooner than the
// recovery window. Classic groups (and groups of unknown protocol) lose all
// offsets offsets.retention.minutes after the group became Empty (KIP-211);
// KIP-848 ("consumer" protocol) groups lose each offset that long after its
// last commit, so the earliest one counts.
func groupOffsetsExpireIn(f *facts) (time.Duration, bool, *Warning) {
	g := f.obs.Group
	retention, ok := f.offsetsRetention()
	if g.State != GroupStateEmpty || !ok {
		return 0, false, nil
	}
	var since time.Time
	subject, expires, is := "", "expire", "are"
	if g.Protocol == ProtocolConsumer {
		var earliest PartitionResult // the partition whose offset expires first; ties go to the first in order
		for i := range f.topics {
			t := f.topics[i].obs
			if t == nil {
				continue
			}
			for _, po := range t.Partitions {
				if po.LastCommit.IsZero() || po.Committed == NoOffset {
					continue
				}
				this := PartitionResult{Topic: t.Name, Partition: po.Partition}
				if since.IsZero() || po.LastCommit.Before(since) ||
					(po.LastCommit.Equal(since) && comparePartitions(this, earliest) < 0) {
					since, earliest = po.LastCommit, this
					subject = "the committed offset of " + partitionName(t.Name, po.Partition) +
						" (last committed " + po.LastCommit.UTC().Format(time.RFC3339) + ")"
					expires, is = "expires", "is"
				}
			}
		}
	} else {
		since = g.EmptySince
		subject = "its committed offsets (Empty since " + g.EmptySince.UTC().Format(time.RFC3339) + ")"
	}
	if since.IsZero() {
		return 0, false, nil
	}
	left := since.Add(retention).Sub(f.now)
	window := f.policy.RecoveryWindow
	if left >= window {
		return left, true, nil
	}
	setting := keyOffsetsRetentionMinutes + " " + itoa(f.offsetsRetentionMinutes) + " (" + formatMinutes(f.offsetsRetentionMinutes) + ")"
	var msg string
	if left <= 0 {
		msg = "group " + groupName(f) + " is Empty: " + subject + " expired or " + is + " about to (" + setting +
			"): on restart auto.offset.reset decides silently where it resumes"
	} else {
		msg = "group " + groupName(f) + " is Empty: " + subject + " " + expires + " in " + FormatDuration(left) + " (" + setting +
			"), sooner than recoveryWindow " + FormatDuration(window)
	}
	return left, true, &Warning{Type: WarningGroupOffsetsExpireIn, Message: msg, Duration: left}
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
