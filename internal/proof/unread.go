package proof

import "strings"

// A partition without a committed offset on a log that starts at 0 is a
// fresh start only when the consumer starts at 0. The Java consumer starts
// a partition without a committed offset at auto.offset.reset, latest by
// default (ConsumerConfig; SubscriptionState.resetInitializingPositions,
// OffsetFetcher.resetPositionsIfNeeded): the log end when it first gets the
// partition. A share group starts a share-partition without state at
// share.auto.offset.reset, latest by default
// (SharePartition.startOffsetDuringInitialization), until Kafka 4.4, whose
// group coordinator starts new partitions of a topic the group knows at 0
// (KAFKA-20742). A partition added to a topic while its group was down, and
// written to before the consumers came back, is skipped whole, and nothing
// says so.
//
// A group that has never read the topic cannot skip anything of its own
// (it was not there): such a partition stays proven, as a fresh group's. A
// group that has committed on the topic's other partitions was there: a
// partition of that topic without a commit, holding records, is proven only
// with evidence that the consumers start it at the log start.

// resetEvidence is what is known of where the group's consumers start a
// partition without a committed offset.
type resetEvidence int

const (
	// resetUnknown: nothing shows the reset (a consumer group without the
	// consumer clause; a share group's config unread).
	resetUnknown resetEvidence = iota
	// resetNoSkip: the consumers do not skip: they start at the log start
	// (share.auto.offset.reset=earliest), or the client throws there
	// (auto.offset.reset=none, held by the consumer clause; the seek
	// warning asks for a commit at the log start).
	resetNoSkip
	// resetLatest: they start at the log end (share.auto.offset.reset
	// latest, the default).
	resetLatest
	// resetByDuration: they start at the first record stamped within a
	// duration before the start (share.auto.offset.reset=by_duration:…):
	// which records are older then is not known now.
	resetByDuration
)

// groupResetEvidence reads the evidence from the policy (the consumer
// clause) and the observation (a share group's share.auto.offset.reset).
func groupResetEvidence(f *facts) (resetEvidence, string) {
	if f.obs.Group.Protocol != ProtocolShare {
		if f.policy.ResetFailsLoudly {
			return resetNoSkip, ""
		}
		return resetUnknown, ""
	}
	// A topic the share group holds state on is known to its coordinator:
	// from 4.4 its new partitions start at 0 (KAFKA-20742).
	if f.obs.Group.ShareNewPartitionsStartAtZero {
		return resetNoSkip, ""
	}
	v := f.obs.Group.ShareAutoOffsetReset
	if !v.Present || v.Null {
		problem := f.obs.Group.ShareAutoOffsetResetProblem
		if problem == "" {
			problem = "not read"
		}
		return resetUnknown, problem
	}
	switch s := strings.ToLower(strings.TrimSpace(v.Value)); {
	case s == "earliest":
		return resetNoSkip, s
	case s == "latest":
		return resetLatest, s
	case strings.HasPrefix(s, "by_duration:"):
		return resetByDuration, s
	}
	return resetUnknown, "unrecognised value " + v.Value
}

// siblingCommits counts the partitions of a topic, other than failed ones,
// on which the group has a committed offset (a share group: a
// share-partition start offset).
func siblingCommits(t *topicFacts) int {
	n := 0
	for i := range t.obs.Partitions {
		po := &t.obs.Partitions[i]
		if po.Committed < 0 {
			continue
		}
		if _, failed := t.partitionFailure(po.Partition); failed {
			continue
		}
		n++
	}
	return n
}

// judgeUnreadPartition re-judges a partition judgePartition proved as a
// fresh start (no committed offset, log start 0) when it holds records and
// the group has committed on others of the topic (siblings): unless the
// evidence shows the consumers start at the log start, the records may be
// skipped (OffsetResetMaySkipRecords, Unknown) or will be
// (ResetToLatestSkipsRecords, Violated, with their count). It returns the
// violation's message, or "" when the partition stays proven.
func judgeUnreadPartition(pr *PartitionResult, topic string, siblings int, share bool,
	evidence resetEvidence, detail, group string) string {
	if pr.Verdict != Proven || pr.Committed != NoOffset || pr.LogStart != 0 || pr.LogEnd <= pr.LogStart ||
		siblings == 0 || evidence == resetNoSkip {
		return ""
	}
	pr.SkippedRecords = pr.LogEnd - pr.LogStart
	var m messageBuilder
	m.partition(pr.Topic, pr.Partition)
	if share {
		m.text(": no share-partition start offset while the share group has them on ")
	} else {
		m.text(": no committed offset while the group committed on ")
	}
	m.count(int64(siblings), "other partition").text(" of ").text(topic)
	m.text(" (a partition added while it was down, or never read), and the log holds ").count(pr.SkippedRecords, "record")
	m.text(" (offsets 0 to ").int(pr.LogEnd).text(")")
	partitionFlag := " --topic " + topic + ":" + itoa(int64(pr.Partition))
	switch {
	case share && evidence == resetLatest:
		pr.Verdict, pr.Reason = Violated, ReasonResetToLatestSkipsRecords
		m.text(": share.auto.offset.reset is latest, so the share group starts it at the log end and skips all ").
			count(pr.SkippedRecords, "record")
	case share:
		pr.Verdict, pr.Reason = Unknown, ReasonOffsetResetMaySkipRecords
		if evidence == resetByDuration {
			m.text(": share.auto.offset.reset is ").text(detail).text(", so the share group skips those stamped before that duration when it starts")
		} else {
			m.text(": share.auto.offset.reset of the group (").text(detail).
				text(") decides where the share group starts it, and latest, the default, skips them all")
		}
	default:
		pr.Verdict, pr.Reason = Unknown, ReasonOffsetResetMaySkipRecords
		m.text(": a consumer starts it at auto.offset.reset, and latest, the Java client's default, skips them all; " +
			"nothing shows the client's setting")
	}
	if share {
		m.text("; set share.auto.offset.reset=earliest for the group before its consumers start (kafka-configs --alter --entity-type groups --entity-name ").
			text(group).text(" --add-config share.auto.offset.reset=earliest), or commit a start offset for the partition (kafka-share-groups --group ").
			text(group).text(partitionFlag).text(" --reset-offsets --to-earliest --execute)")
	} else {
		m.text("; commit an offset for the partition (kafka-consumer-groups --group ").text(group).text(partitionFlag).
			text(" --reset-offsets --to-earliest --execute), or add the consumer clause (spec.consumer: auto.offset.reset none, " +
				"the client stops there instead of skipping)")
	}
	return m.String()
}
