package proof

import "time"

// Why a lagging partition's committed record was not dated
// (PartitionObservation.TimestampUnread).
const (
	// TimestampReadDenied: the Fetch was refused (TOPIC_AUTHORIZATION_FAILED):
	// Fetch needs Read on the topic, the rest of the observation Describe.
	TimestampReadDenied = "ReadDenied"
	// TimestampNoRecords: the leader answered without error and without a
	// record at or after the committed offset, below its high watermark: a
	// tiered broker answers so when a remote read outlasts
	// remote.fetch.max.wait.ms or hits the remote fetch quota
	// (DelayedRemoteFetch.onComplete).
	TimestampNoRecords = "NoRecords"
	// TimestampFetchFailed: the Fetch failed (a broker that did not answer,
	// a leader that moved, another error).
	TimestampFetchFailed = "FetchFailed"
)

// setUnreadHeadroom judges a lagging partition whose committed record was
// not dated, from ListOffsets by timestamp (pure: the observer asked, the
// proof reads the answer). The observer asks the leader for the first
// offset o whose record is stamped at or after T = now + window −
// retention.ms. Kafka (UnifiedLog.fetchOffsetByTimestamp, searching "the
// first segment whose largest timestamp is >= the target", remote
// segments first on a tiered topic) answers from that segment S, and
// time-based retention deletes whole segments, a prefix of the log, each
// once now − its largest timestamp > retention.ms
// (UnifiedLog.deleteRetentionMsBreachedSegments, deletableSegments stops at
// the first segment it keeps; the remote log's expiry likewise by segment).
// So S, and every segment after it, survives until at least T +
// retention.ms:
//
//   - committed ≥ o: the record at the committed offset is in S or after
//     it and outlives T + retention.ms; when that is not before now +
//     window, the partition has at least that headroom (a lower bound);
//   - committed < o, or no o (-1: every record below the high watermark
//     is stamped before T): the record may be in a segment older than S,
//     which retention may delete any time before T + retention.ms; when
//     that is not after now + window, the record may be deleted before
//     the window ends (RecoveryHeadroomShorterThanWindow, with no figure);
//   - otherwise (not asked, failed, or asked for another window than this
//     policy's): nothing decides, RecordTimestampUnread (Unknown).
//
// A caught-up partition (committed == log end) needs no timestamp
// (setHeadroom); a dated one is not judged here. Only partitions the
// observer reports undated (TimestampUnread, which internal/kafka sets on
// every lagging partition it asked about and could not date) are judged:
// an observation that does not say is taken as today's (no headroom).
func setUnreadHeadroom(pr *PartitionResult, po *PartitionObservation, retention, window time.Duration, now time.Time) {
	if pr.Verdict != Proven || pr.HasHeadroom || pr.Committed == NoOffset || pr.Committed < pr.LogStart ||
		pr.Committed >= pr.LogEnd || !po.CommittedTimestamp.IsZero() || po.TimestampUnread == "" {
		return
	}
	pr.TimestampUnread = true
	if !po.OffsetForTimestampRead || po.OffsetForTimestampAt.IsZero() {
		return
	}
	// In milliseconds, Kafka's timestamps and the observer's T.
	survives := po.OffsetForTimestampAt.UnixMilli() + retention.Milliseconds() // S and what follows it outlive this
	end := now.Add(window).UnixMilli()
	o := po.OffsetForTimestamp
	found := o >= 0 && o < pr.LogEnd
	switch {
	case found && pr.Committed >= o && survives >= end:
		// (At least the window: equal in Kafka's milliseconds.)
		pr.Headroom, pr.HasHeadroom, pr.HeadroomAtLeast = max(time.UnixMilli(survives).Sub(now), window), true, true
	case (!found || pr.Committed < o) && survives <= end:
		// No lower bound: the record's segment may be past retention
		// already. Zero headroom keeps the warning and the headroom
		// alert (…_expiration_timestamp_seconds) honest.
		pr.MayExpireBy = time.UnixMilli(survives)
		pr.Headroom, pr.HasHeadroom = 0, true
	}
}

// clearUnreadHeadroom forgets what setUnreadHeadroom found (headroom
// measured from elsewhere, or no longer asked).
func clearUnreadHeadroom(pr *PartitionResult) {
	pr.TimestampUnread, pr.HeadroomAtLeast, pr.MayExpireBy = false, false, time.Time{}
}

// unreadViolations adds, per lagging partition whose committed record was
// not dated: RecoveryHeadroomShorterThanWindow when ListOffsets by
// timestamp showed the record may be deleted before the window ends (a
// risk, like the dated one), else RecordTimestampUnread (Unknown) unless
// it showed the record outlives the window. Topics whose retention already
// fails are left to that violation (failedTopics). The proofID facts are
// the topic and partition, as for the dated headroom.
func unreadViolations(o *clauseOutcome, f *facts, partitions []PartitionResult, failed map[string]bool, observed map[topicPartition]*PartitionObservation) {
	window := f.policy.RecoveryWindow
	for i := range partitions {
		pr := &partitions[i]
		if !pr.TimestampUnread || pr.HeadroomAtLeast || failed[pr.Topic] {
			continue
		}
		po := observed[topicPartition{pr.Topic, pr.Partition}]
		var m messageBuilder
		m.partition(pr.Topic, pr.Partition)
		v := Violation{Topic: pr.Topic, Partition: pr.Partition,
			Committed: NoOffset, LogStart: -1, LogEnd: -1, Cursor: NoOffset}
		if !pr.MayExpireBy.IsZero() {
			// At any moment: how soon is not known.
			v.Reason, v.ExpiresAt = ReasonRecoveryHeadroomShorterThanWindow, f.now
			m.text(": retention may delete the record at committed offset ").int(pr.Committed).
				text(" before recoveryWindow ").text(FormatDuration(window)).text(" ends: ")
			if po != nil && po.OffsetForTimestamp >= 0 && po.OffsetForTimestamp < pr.LogEnd {
				m.text("it lies before offset ").int(po.OffsetForTimestamp).text(", the first")
			} else {
				m.text("no record up to log end ").int(pr.LogEnd).text(" is")
			}
			m.text(" stamped late enough to outlive the window (ListOffsets by timestamp; its own timestamp was not read: ").
				text(unreadCause(po)).text("): the group is ").count(pr.Lag, "record").
				text(" behind and cannot be down for its window without risking them; let it catch up " +
					"(nothing is lost yet: a rollout of a faster consumer is allowed with a warning), or raise ").text(keyRetentionMs)
		} else {
			v.Reason = ReasonRecordTimestampUnread
			m.text(": the group is ").count(pr.Lag, "record").text(" behind committed offset ").int(pr.Committed).
				text(" and the timestamp of the record there was not read (").text(unreadCause(po)).
				text("), nor did ListOffsets by timestamp decide")
			if po != nil && po.OffsetForTimestampProblem != "" {
				m.text(" (").text(po.OffsetForTimestampProblem).text(")")
			}
			m.text(": nothing shows it outlives recoveryWindow ").text(FormatDuration(window)).text("; ").text(unreadWayOut(po, pr.Topic))
		}
		v.Message = m.String()
		o.add(v)
	}
}

// unreadCause says why the record was not dated.
func unreadCause(po *PartitionObservation) string {
	if po == nil {
		return "the observer could not date it"
	}
	switch po.TimestampUnread {
	case TimestampReadDenied:
		return "Fetch denied: the principal lacks Read on the topic"
	case TimestampNoRecords:
		return "the leader answered the Fetch with no records and no error, as a tiered broker does when a remote read outlasts remote.fetch.max.wait.ms or its quota"
	case TimestampFetchFailed:
		return "the Fetch failed"
	}
	return "the observer could not date it"
}

// unreadWayOut is what changes the verdict: the record dated, or
// ListOffsets answered.
func unreadWayOut(po *PartitionObservation, topic string) string {
	if po != nil && po.TimestampUnread == TimestampReadDenied {
		return "grant the principal Read on topic " + topic + " (the record is then dated), or let the group catch up"
	}
	return "let the group catch up, or check again once the leader answers (Describe on topic " + topic + " for ListOffsets, Read for the Fetch)"
}

// observedPartitions indexes the observation's partitions for the
// violations that quote what the observer read.
func observedPartitions(f *facts) map[topicPartition]*PartitionObservation {
	out := make(map[topicPartition]*PartitionObservation)
	for i := range f.topics {
		t := f.topics[i].obs
		if t == nil {
			continue
		}
		for j := range t.Partitions {
			out[topicPartition{t.Name, t.Partitions[j].Partition}] = &t.Partitions[j]
		}
	}
	return out
}
