package proof

import (
	"slices"
	"strings"
	"time"
)

// groupOffsetsRetained holds when the group coordinator keeps the group's
// committed offsets for the whole recovery window, on the clock it really
// uses for this kind of group (see expiryFacts and docs/kafka-semantics.md):
//
//   - offsets.retention.minutes is readable and covers the window: a
//     classic group's offsets expire that long after it becomes Empty, so a
//     consumer that goes down now keeps them for the window;
//   - every committed offset that expires per commit (simple groups, KIP-848
//     and streams groups, a Stable classic group's unsubscribed topics)
//     expires no sooner than now + window: its last commit plus
//     offsets.retention.minutes. Exact commit times (from __consumer_offsets)
//     that fall short are a violation (OffsetsExpireBeforeWindow); lower
//     bounds that fall short, or no commit time at all, cannot prove it
//     (OffsetsMayExpireBeforeWindow, Unknown).
//
// Otherwise a group down for the window comes back without committed
// offsets, and auto.offset.reset decides silently where it resumes.
func groupOffsetsRetained(f *facts) (Condition, []Violation) {
	o := clauseOutcome{clause: ClauseGroupOffsetsRetained}
	window := f.policy.RecoveryWindow
	minutes := f.offsetsRetentionMinutes
	setting := keyOffsetsRetentionMinutes + " " + itoa(minutes) + " (" + formatMinutes(minutes) + ")"
	e := f.expiry
	if e.kind == kindShare {
		// A share group's progress is not a committed offset: the
		// coordinator's offset expiry never touches it (KIP-932).
		return o.condition(ReasonShareGroupOffsetsRetained, "group "+groupName(f)+" is a share group (KIP-932): its progress, the "+
			"share-partition start offset, is kept by the share coordinator and does not expire with "+keyOffsetsRetentionMinutes), nil
	}
	switch {
	case f.offsetsRetentionProblem != "" && f.offsetsRetentionMissingBecause != "":
		// Absent because a request failed: the failure's violation says
		// so; the clause is not evaluated.
		o.notEvaluated = append(o.notEvaluated, keyOffsetsRetentionMinutes+" not evaluated: "+
			f.offsetsRetentionMissingBecause+" (see "+ClauseKafkaReachable+")")
		return o.condition("", ""), o.violations
	case f.offsetsRetentionProblem != "":
		o.add(topicViolation("", ReasonOffsetsRetentionUnreadable, "", f.offsetsRetentionProblem))
		return o.condition("", ""), o.violations
	case minutesToDuration(minutes) < window:
		o.add(topicViolation("", ReasonOffsetsRetentionShorterThanWindow, "",
			setting+" is shorter than recoveryWindow "+FormatDuration(window)+
				": the group's committed offsets expire before the window ends"))
		return o.condition("", ""), o.violations
	}

	switch {
	case e.kindMissingBecause != "":
		o.notEvaluated = append(o.notEvaluated, "the group's offset expiry clock not evaluated: its kind is unknown: "+
			e.kindMissingBecause+" (see "+ClauseKafkaReachable+")")
	case e.kindUnknown:
		o.add(topicViolation("", ReasonGroupTypeUnknown, "",
			"group "+groupName(f)+" has committed offsets but neither DescribeGroups nor ConsumerGroupDescribe nor "+
				"StreamsGroupDescribe knows it (a streams group on a broker that was not asked, or a group deleted meanwhile): "+
				"the clock its offsets expire on is unknown"))
	}
	// Times the coordinator stamped count from its clock, which may run
	// ahead of the guard's (clockskew.go): an expiry is before the
	// window's end when it is before it plus that lead.
	skew := CoordinatorSkew(f.obs.OffsetsTopic)
	deadline := f.now.Add(window + skew)
	for i := range e.explicit {
		c := &e.explicit[i]
		if !c.expiry.Before(deadline) {
			continue
		}
		var m messageBuilder
		m.partition(c.topic, c.partition).text(": committed offset ").int(c.committed).
			text(" was committed with an explicit retention time (OffsetCommit v2–v4 retention_time, from __consumer_offsets) and expires at ").
			text(c.expiry.UTC().Format(time.RFC3339)).text(" once the group is Empty, whatever ").text(keyOffsetsRetentionMinutes).
			text(" says, before recoveryWindow ").text(FormatDuration(window)).
			text(" ends").text(withinSkew(c.expiry.Sub(f.now), window, skew)).
			text(": commit it again without a retention time (a client on OffsetCommit v5 or later)")
		o.add(Violation{
			Reason: ReasonExplicitOffsetExpiryBeforeWindow, Topic: c.topic, Partition: c.partition, Message: m.String(),
			Committed: c.committed, LogStart: -1, LogEnd: -1, Cursor: NoOffset,
		})
	}
	if ex, ok := emptyGroupExpiry(f); ok && hasCommittedOffset(f) {
		switch {
		case ex.known && !ex.latest.IsZero() && ex.latest.Before(deadline):
			o.add(topicViolation("", ReasonEmptyGroupOffsetsExpireBeforeWindow, "",
				"group "+groupName(f)+" has been Empty since "+ex.since()+": its committed offsets expire "+setting+" after that, at "+
					ex.latest.UTC().Format(time.RFC3339)+" or sooner, before recoveryWindow "+FormatDuration(window)+
					" from now ends"+withinSkew(ex.latest.Sub(f.now), window, skew)+
					": it cannot stay down for its window; start the consumer (a member stops the clock)"))
		case !ex.known:
			o.add(topicViolation("", ReasonEmptyGroupOffsetsMayExpireBeforeWindow, "",
				"group "+groupName(f)+" is Empty, and since when is not known (the guard did not see it go Empty: a one-shot check, "+
					"or a manager that started while it was Empty): its committed offsets expire "+setting+" after it became Empty, "+
					"any moment from now on, possibly before recoveryWindow "+FormatDuration(window)+" ends: start the consumer "+
					"(a member stops the clock)"+orExactTimes(f.obs.OffsetsTopic)))
		case ex.earliest.Before(deadline):
			o.add(topicViolation("", ReasonEmptyGroupOffsetsMayExpireBeforeWindow, "",
				"group "+groupName(f)+" has been Empty since "+ex.since()+": its committed offsets expire "+setting+" after that, "+
					"at "+ex.earliest.UTC().Format(time.RFC3339)+" or later, possibly before recoveryWindow "+FormatDuration(window)+
					" from now ends"+withinSkew(ex.earliest.Sub(f.now), window, skew)+": start the consumer (a member stops the clock)"+orExactTimes(f.obs.OffsetsTopic)))
		}
	}
	for i := range e.commits {
		c := &e.commits[i]
		if !c.expiry.Before(deadline) && c.known {
			continue
		}
		reason := ReasonOffsetsMayExpireBeforeWindow
		if c.exact {
			reason = ReasonOffsetsExpireBeforeWindow
		}
		o.add(Violation{
			Reason: reason, Topic: c.topic, Partition: c.partition, Message: commitExpiryMessage(f, c, setting),
			Committed: c.committed, LogStart: -1, LogEnd: -1, Cursor: NoOffset,
		})
	}

	msg := setting + " covers recoveryWindow " + FormatDuration(window)
	if ahead := f.obs.OffsetsTopic.CoordinatorAhead; ahead > 0 {
		msg += " (allowing " + FormatDuration(skew) + " for the coordinators' clock, seen " + FormatDuration(ahead) +
			" ahead of the guard's)"
	}
	switch {
	case len(e.commits) > 0:
		soonest := e.commits[e.soonestCommit]
		verb := " expire"
		if len(e.commits) == 1 {
			verb = " expires"
		}
		msg += "; " + plural(int64(len(e.commits)), "committed offset") + verb + " per commit (" + e.perCommitWhy + "), the soonest, " +
			partitionName(soonest.topic, soonest.partition) + ", at " + soonest.expiry.UTC().Format(time.RFC3339) +
			" or later (" + commitTimeSource(&soonest) + ")"
	case e.kind == kindClassic:
		msg += ": the group's offsets expire that long after it becomes Empty"
	}
	if r := f.obs.OffsetsTopic; r.Reason == OffsetsTopicDenied && e.kind != kindNone {
		msg += "; commit and Empty times are bounds, not exact: the guard's principal may not read __consumer_offsets (" +
			GrantOffsetsTopicRead + ")"
	}
	if !f.obs.OffsetsTopic.ExactTimesRead() && e.kind != kindNone {
		msg += " (an offset committed with an explicit retention time, OffsetCommit v2–v4, expires at that time instead: " +
			"visible only in __consumer_offsets, " + offsetsTopicNotReadBecause(f.obs.OffsetsTopic) + ")"
	}
	return o.condition(ReasonGroupOffsetsRetained, msg), o.violations
}

// commitExpiryMessage explains one offset that expires per commit before
// the window ends, and the way out.
func commitExpiryMessage(f *facts, c *commitExpiry, setting string) string {
	var m messageBuilder
	m.partition(c.topic, c.partition).text(": committed offset ").int(c.committed)
	if !c.known {
		why := "no record before it is left to date it, and the commit was not seen"
		if c.undatedBecause != "" {
			why = c.undatedBecause
		}
		m.text(" expires ").text(setting).text(" after its last commit (").text(f.expiry.perCommitWhy).
			text("), and when that was is unknown: ").text(why)
	} else {
		age := f.now.Sub(c.commitTime)
		left := c.expiry.Sub(f.now)
		if c.exact {
			m.text(" was last committed ").text(FormatDuration(age)).text(" ago (").text(c.commitTime.UTC().Format(time.RFC3339)).
				text(", from __consumer_offsets)")
		} else {
			m.text(" was last committed at or after ").text(c.commitTime.UTC().Format(time.RFC3339)).
				text(" (").text(commitTimeSource(c)).text(")")
		}
		m.text(" and expires ").text(setting).text(" after its last commit (").text(f.expiry.perCommitWhy).text("): ")
		switch {
		case left <= 0 && c.exact:
			m.text("it is already past that and goes at the coordinator's next cleanup")
		case left <= 0:
			m.text("it may go at the coordinator's next cleanup")
		case c.exact:
			m.text("in ").text(FormatDuration(left))
		default:
			m.text("possibly in ").text(FormatDuration(left))
		}
		skew := CoordinatorSkew(f.obs.OffsetsTopic)
		m.text(", before recoveryWindow ").text(FormatDuration(f.policy.RecoveryWindow)).text(" ends").
			text(withinSkew(left, f.policy.RecoveryWindow, skew))
	}
	// Only ways out that change the next verdict: a commit of the same
	// offset is dated only where __consumer_offsets is read (the group
	// memory sees no change), a longer offsets.retention.minutes moves
	// only a dated expiry, and a new offset is dated by the guard that saw
	// the old one (the manager's group memory; a one-shot check has none).
	var ways []string
	switch {
	case c.exact || f.obs.OffsetsTopic.ExactTimesRead():
		ways = append(ways, "commit it again (the offset as it is: the guard reads the new commit's time)")
	default:
		// A change seen dates nothing where two-phase transactions may
		// hold a commit hidden for any time (txncommit.go).
		if _, problem := transactionAllowance(f.obs.Transactions); problem == "" {
			ways = append(ways, "let the consumer commit a newer offset while the manager watches (it dates a change it saw)")
		}
	}
	if c.known {
		ways = append(ways, "raise "+keyOffsetsRetentionMinutes)
	}
	if way := exactTimesWay(f.obs.OffsetsTopic); way != "" && !c.exact {
		ways = append(ways, way)
	}
	if len(ways) > 0 {
		m.text(": ").text(joinOr(ways))
	}
	return m.String()
}

// exactTimesWay is ExactTimesWay in full.
func exactTimesWay(r OffsetsTopicRead) string {
	full, _ := ExactTimesWay(r)
	return full
}

// ExactTimesWay is what a person does so that the next observation reads
// exact commit and Empty times from __consumer_offsets, where this one
// did not: in full, and in a few words (admission's short ways out). Both
// are empty when it did, or when nothing a person sets changes it (the
// cluster has no such topic; a read that did not finish goes on by
// itself). The proof's messages and the webhook's ways out both say it.
func ExactTimesWay(r OffsetsTopicRead) (full, words string) {
	switch {
	case !r.Requested:
		return "let the guard read exact times from __consumer_offsets (remove spec.kafka.readOffsetsTopic: false; check's " +
			"--read-offsets-topic is on unless set to false)", "remove spec.kafka.readOffsetsTopic: false"
	case r.Reason == OffsetsTopicDenied:
		return "grant the guard's principal Read on topic __consumer_offsets (" + GrantOffsetsTopicRead + ")",
			"grant Read on __consumer_offsets"
	case r.Reason == OffsetsTopicUndecodable:
		return "upgrade retention-guard to a version that decodes the records __consumer_offsets holds", "upgrade retention-guard"
	}
	return "", ""
}

// orExactTimes is ", or " and exactTimesWay, when there is one.
func orExactTimes(r OffsetsTopicRead) string {
	if way := exactTimesWay(r); way != "" {
		return ", or " + way
	}
	return ""
}

// offsetsTopicNotReadBecause says why exact times were not read.
func offsetsTopicNotReadBecause(r OffsetsTopicRead) string {
	switch {
	case !r.Requested:
		return "which spec.kafka.readOffsetsTopic: false turns off"
	case r.Reason == OffsetsTopicDenied:
		return "which the guard's principal may not read"
	case r.Reason == OffsetsTopicAbsent:
		return "which this cluster does not have"
	case r.Reason == OffsetsTopicUndecodable:
		return "whose records of this group this guard cannot decode"
	}
	return "not read to its end this time"
}

// GrantOffsetsTopicRead is the command that grants a principal Read on
// __consumer_offsets with Apache Kafka's tools (Read implies Describe:
// Kafka's AclEntry.implies), as warnings and messages name it; Strimzi's
// KafkaUser and MSK's IAM policy are in docs/install.md, "Kafka ACLs".
const GrantOffsetsTopicRead = "kafka-acls.sh --bootstrap-server BROKER --add --allow-principal User:PRINCIPAL " +
	"--operation Read --topic __consumer_offsets; Strimzi and MSK: docs/install.md"

// joinOr joins ways out as "a, b or c".
func joinOr(ways []string) string {
	switch len(ways) {
	case 0:
		return ""
	case 1:
		return ways[0]
	}
	return strings.Join(ways[:len(ways)-1], ", ") + " or " + ways[len(ways)-1]
}

// commitTimeSource says where a commit time comes from.
func commitTimeSource(c *commitExpiry) string {
	switch {
	case c.exact:
		return "exact, from __consumer_offsets"
	case c.fromWitness:
		return "the commit was seen after an observation at " + c.seenChangeAfter.UTC().Format(time.RFC3339) + ", less " +
			FormatDuration(c.txnAllowance) + ": a transactional commit carries the time it was sent and shows when its transaction " +
			"ends, up to " + KeyTransactionMaxTimeoutMs + " and the abort check's interval later"
	case c.fromMarker:
		return "bounded by the timestamp of the transaction marker before it, the partition leader's clock"
	default:
		return "bounded by the timestamp of the record before it"
	}
}

// Group kinds, for the offset expiry clock.
type groupKind int

const (
	kindUnknown   groupKind = iota
	kindNone                // no group and nothing committed: nothing to expire
	kindClassic             // a classic group with a protocol type
	kindPerCommit           // simple, KIP-848 or streams: every offset per commit
	kindShare               // a share group: no offset expiry (KIP-932)
)

// expiryFacts is how the group's committed offsets expire, worked out once
// for the clause and the warnings.
type expiryFacts struct {
	kind groupKind
	// kindMissingBecause names the failure that explains why the kind is
	// unknown; kindUnknown: the group has committed offsets and no call
	// knows it.
	kindMissingBecause string
	kindUnknown        bool
	// perCommitWhy says why offsets expire per commit ("a simple group",
	// "a KIP-848 consumer group", "topics no member subscribes to").
	perCommitWhy string
	// commits are the committed offsets that expire per commit, sorted by
	// topic and partition; soonestCommit indexes the one that expires
	// first.
	commits       []commitExpiry
	soonestCommit int
	// explicit are the committed offsets with an explicit expiry
	// (OffsetCommit v2–v4 retention_time), whatever the group's clock,
	// sorted by topic and partition: each expires at its own time.
	explicit []commitExpiry
}

// commitExpiry is one committed offset that expires per commit.
type commitExpiry struct {
	topic     string
	partition int32
	committed int64
	// known: commitTime is exact or a lower bound; otherwise nothing
	// dates the commit.
	known       bool
	exact       bool
	fromWitness bool // the bound is a change the observer witnessed
	fromMarker  bool // the bound is a transaction marker before the offset
	commitTime  time.Time
	expiry      time.Time // commitTime + offsets.retention.minutes
	// undatedBecause says why a commit is not dated when a record before
	// it exists (its timestamp does not bound the commit); empty otherwise.
	undatedBecause string
	// seenChangeAfter is the observation that last saw the old offset,
	// and txnAllowance how long before it a transactional commit may be
	// stamped (fromWitness: commitTime is the one less the other).
	seenChangeAfter time.Time
	txnAllowance    time.Duration
}

// gatherExpiry classifies the group and dates every committed offset that
// expires per commit, following the coordinator's rules (Kafka's
// ClassicGroup / ConsumerGroup.offsetExpirationCondition and
// OffsetMetadataManager.cleanupExpiredOffsets):
//
//   - a classic group with a protocol type expires all offsets
//     offsets.retention.minutes after it becomes Empty; while Stable, a
//     consumer group's topics no member subscribes to expire per commit
//     (KIP-496);
//   - a classic group without a protocol type (a simple group: commits
//     without joining) expires each offset per commit, in any state;
//   - KIP-848 and streams groups expire per commit the offsets of topics no
//     member subscribes to: all of them once the group is Empty, which is
//     what a group down for the window is.
func gatherExpiry(f *facts) expiryFacts {
	var e expiryFacts
	g := f.obs.Group
	switch g.Protocol {
	case ProtocolConsumer:
		e.kind, e.perCommitWhy = kindPerCommit, "a KIP-848 consumer group, once Empty"
	case ProtocolStreams:
		e.kind, e.perCommitWhy = kindPerCommit, "a streams group, once Empty"
	case ProtocolShare:
		e.kind = kindShare
		return e
	case ProtocolClassic:
		e.kind = kindClassic
		switch {
		case g.ProtocolType == "":
			e.kind, e.perCommitWhy = kindPerCommit, "a simple group: it commits without joining"
		case migrates(g):
			e.perCommitWhy = "a classic group the brokers convert to a consumer group when its members switch to " +
				"group.protocol=consumer, after which its offsets keep their commit times and expire per commit (KIP-848 migration)"
		case subscriptionDecides(g):
			e.perCommitWhy = "no member of the Stable group subscribes to the topic (KIP-496)"
		}
	default:
		if because := explainingFailure(f.obs.Failures, explainsGroup); because != "" {
			e.kindMissingBecause = because
		} else if hasCommittedOffset(f) {
			e.kindUnknown = true
		} else {
			e.kind = kindNone
		}
	}

	retention, ok := f.offsetsRetention()
	if !ok {
		return e
	}
	// A change the observer saw dates a commit no later than the
	// observation that still saw the old offset, less how long a
	// transactional commit may stay hidden after the time it carries
	// (txncommit.go).
	txnAllowance, txnProblem := transactionAllowance(f.obs.Transactions)
	for i := range f.topics {
		t := &f.topics[i]
		if t.obs == nil {
			continue
		}
		perCommit := ExpiresPerCommit(g, t.name)
		skew, skewProblem := clockSkew(t.obs)
		for j := range t.obs.Partitions {
			po := &t.obs.Partitions[j]
			if po.Committed < 0 {
				continue
			}
			if _, failed := t.partitionFailure(po.Partition); failed {
				continue
			}
			c := commitExpiry{topic: t.name, partition: po.Partition, committed: po.Committed}
			if !po.ExpireAt.IsZero() {
				// An explicit expiry replaces the group's clock
				// (OffsetExpirationConditionImpl.isOffsetExpired tests it
				// first): exact, from __consumer_offsets.
				c.known, c.exact, c.commitTime, c.expiry = true, true, po.LastCommit, po.ExpireAt
				e.explicit = append(e.explicit, c)
				continue
			}
			if !perCommit {
				continue
			}
			// The record before the committed offset dates the commit
			// from below, less how far ahead its producer's clock may be;
			// a transaction marker before it, by the leader's clock.
			var bound time.Time
			if !po.PrecedingTimestamp.IsZero() {
				if skewProblem == "" {
					bound = po.PrecedingTimestamp.Add(-skew)
				} else {
					c.undatedBecause = skewProblem
				}
			}
			if m := po.PrecedingMarkerTimestamp; !m.IsZero() && m.After(bound) {
				bound, c.fromMarker = m, true
			}
			if bound.IsZero() && c.undatedBecause == "" && po.Committed > po.LogStart {
				// Records are left before it: the one before was not dated,
				// which is not the same as none being left.
				c.undatedBecause = precedingUndated(po)
			}
			var witnessed time.Time
			if !po.CommittedAfter.IsZero() {
				if txnProblem == "" {
					witnessed = po.CommittedAfter.Add(-txnAllowance)
				} else if bound.IsZero() {
					why := "the guard saw it change after " + po.CommittedAfter.UTC().Format(time.RFC3339) + ", but " + txnProblem
					if c.undatedBecause != "" {
						why = c.undatedBecause + "; " + why
					}
					c.undatedBecause = why
				}
			}
			switch {
			case !po.LastCommit.IsZero():
				c.known, c.exact, c.commitTime = true, true, po.LastCommit
			case !witnessed.IsZero() && !witnessed.Before(bound):
				c.known, c.fromWitness, c.commitTime = true, true, witnessed
				c.seenChangeAfter, c.txnAllowance = po.CommittedAfter, txnAllowance
			case !bound.IsZero():
				c.known, c.commitTime = true, bound
			}
			if c.known {
				c.expiry = c.commitTime.Add(retention)
			}
			e.commits = append(e.commits, c)
		}
	}
	byPartition := func(a, b commitExpiry) int {
		return comparePartitions(PartitionResult{Topic: a.topic, Partition: a.partition}, PartitionResult{Topic: b.topic, Partition: b.partition})
	}
	slices.SortStableFunc(e.commits, byPartition)
	slices.SortStableFunc(e.explicit, byPartition)
	for i := range e.commits {
		if earlierExpiry(&e.commits[i], &e.commits[e.soonestCommit]) {
			e.soonestCommit = i
		}
	}
	return e
}

// precedingUndated says why the offset before a committed one, still in
// the log, dates nothing: its read failed, or gave no timestamp for it.
func precedingUndated(po *PartitionObservation) string {
	var m messageBuilder
	m.text("the record before it, at offset ").int(po.Committed - 1).text(" (log start ").int(po.LogStart).
		text("), is in the log but was not dated")
	if po.TimestampUnread != "" {
		m.text(" (").text(unreadCause(po)).text(")")
	} else {
		m.text(" (the read around the committed offset returned no timestamp for it)")
	}
	m.text(", and the commit was not seen")
	return m.String()
}

// clockSkew is how far before a record's timestamp its commit may have
// been written: zero with LogAppendTime (the broker's clock); with
// CreateTime the producer's clock, at most message.timestamp.after.max.ms
// ahead of the broker's (Kafka 3.6+; 1 hour by default from 4.0,
// unbounded before). Unbounded, or unreadable, the record does not date
// the commit: problem says why.
func clockSkew(t *TopicObservation) (time.Duration, string) {
	if t.TimestampType.LogAppendTime() {
		return 0, ""
	}
	v := t.TimestampAfterMaxMs
	if !v.Present {
		// Before 3.6 message.timestamp.difference.max.ms bounds both ways.
		// A broker that reports neither is no Kafka broker (kfake): it is
		// taken at Kafka 4.x's default, an hour.
		v = t.TimestampDifferenceMaxMs
		if !v.Present {
			return time.Hour, ""
		}
	}
	skew, ok := v.Millis()
	if !ok || v.Unbounded() {
		return 0, "the record before it is stamped by its producer (" + keyTimestampType + " CreateTime) and " +
			keyTimestampAfterMaxMs + " (or, before 3.6, message.timestamp.difference.max.ms) does not bound how far ahead of the broker's clock (" + afterMaxValue(v) +
			"): its timestamp does not date the commit"
	}
	return skew, ""
}

func afterMaxValue(v ConfigValue) string {
	switch {
	case v.Null:
		return "null"
	}
	return quoteValue(v.Value)
}

// emptyExpiry is when an Empty classic group's offsets expire:
// offsets.retention.minutes after it became Empty (Kafka's
// GroupMetadata.removeExpiredOffsets and, from 4.0,
// ClassicGroup.offsetExpirationCondition: currentStateTimestamp + retention).
type emptyExpiry struct {
	// known: when the group became Empty is known exactly or bounded from
	// below; otherwise it may have been any time before now and the
	// offsets may expire any moment.
	known bool
	exact bool
	// earliest and latest bound the expiry (equal when exact); latest is
	// zero when only the lower bound is known.
	earliest, latest time.Time
	g                GroupObservation
}

// since says since when the group is Empty, as precisely as it is known.
func (x emptyExpiry) since() string {
	s := x.g.EmptySince.UTC().Format(time.RFC3339)
	switch {
	case x.exact:
		return s
	case !x.g.EmptyBy.IsZero():
		return "between " + s + " and " + x.g.EmptyBy.UTC().Format(time.RFC3339)
	}
	return "after " + s
}

// emptyGroupExpiry reports, for an Empty classic group with readable
// offsets.retention.minutes, when its offsets expire.
func emptyGroupExpiry(f *facts) (emptyExpiry, bool) {
	g := f.obs.Group
	retention, ok := f.offsetsRetention()
	if !ok || f.expiry.kind != kindClassic || g.State != GroupStateEmpty {
		return emptyExpiry{}, false
	}
	x := emptyExpiry{g: g}
	if g.EmptySince.IsZero() {
		return x, true
	}
	x.known, x.exact = true, g.EmptySinceExact
	x.earliest = g.EmptySince.Add(retention)
	switch {
	case x.exact:
		x.latest = x.earliest
	case !g.EmptyBy.IsZero():
		x.latest = g.EmptyBy.Add(retention)
	}
	return x, true
}

// ExpiresPerCommit reports whether the group coordinator deletes the
// group's committed offsets of topic offsets.retention.minutes after their
// own last commit (rather than after the group became Empty), for a group
// that goes down now: simple groups (classic, no protocol type), KIP-848
// and streams groups (every topic once Empty), a Stable classic consumer
// group's topics no member subscribes to (KIP-496), and every topic of a
// classic consumer group the brokers may convert to a consumer group
// (MigrationPossible: the offsets may expire per commit after a rollout
// that switches protocol). The observer
// uses it to date only the commits that need dating.
func ExpiresPerCommit(g GroupObservation, topic string) bool {
	switch g.Protocol {
	case ProtocolConsumer, ProtocolStreams:
		return true
	case ProtocolClassic:
		return g.ProtocolType == "" || migrates(g) || (subscriptionDecides(g) && !slices.Contains(g.Subscribed, topic))
	}
	return false
}

// migrates: a classic consumer group the brokers may convert to a
// consumer group (KIP-848 online migration): its commits are dated, and the
// earlier of the Empty clock and the per-commit expiry counts.
func migrates(g GroupObservation) bool {
	return g.Protocol == ProtocolClassic && g.ProtocolType == ProtocolTypeConsumer && g.MigrationPossible
}

// subscriptionDecides: a Stable classic consumer group whose members'
// subscriptions are known expires its unsubscribed topics per commit.
func subscriptionDecides(g GroupObservation) bool {
	return g.Protocol == ProtocolClassic && g.State == GroupStateStable && g.ProtocolType == ProtocolTypeConsumer && g.SubscriptionKnown
}

// setOffsetExpiries copies each dated per-commit offset's expiry into its
// partition's result; both lists are sorted by topic and partition.
func setOffsetExpiries(partitions []PartitionResult, commits []commitExpiry) {
	i := 0
	for j := range commits {
		c := &commits[j]
		for i < len(partitions) && comparePartitions(partitions[i], PartitionResult{Topic: c.topic, Partition: c.partition}) < 0 {
			i++
		}
		if i == len(partitions) {
			return
		}
		if pr := &partitions[i]; pr.Topic == c.topic && pr.Partition == c.partition && c.known {
			pr.OffsetExpiresAt, pr.HasOffsetExpiry, pr.OffsetExpiryExact = c.expiry, true, c.exact
		}
	}
}

// earlierExpiry orders offsets by when they may expire: an undated one
// first (it may expire any moment).
func earlierExpiry(a, b *commitExpiry) bool {
	switch {
	case !a.known || !b.known:
		return !a.known && b.known
	}
	return a.expiry.Before(b.expiry)
}

// explainsGroup reports whether a failure explains why the group's state
// is unknown: a failed group describe call, or a cluster-wide failure.
func explainsGroup(f Failure) bool {
	return clusterWide(f) || apiIn(f.API, groupAPIs)
}

func hasCommittedOffset(f *facts) bool {
	for i := range f.topics {
		if t := f.topics[i].obs; t != nil {
			for _, po := range t.Partitions {
				if po.Committed >= 0 {
					return true
				}
			}
		}
	}
	return false
}

// offsetExpiry reports the group's expiry clock and its soonest expiry, and
// warns when an Empty classic group's offsets expire sooner than the
// window (the per-commit offsets are the clause's business). Classic groups
// lose every offset offsets.retention.minutes after they became Empty
// (KIP-211): measured from an exact time read from __consumer_offsets, or
// from a lower bound (the last observation that saw the group in another
// state).
func offsetExpiry(f *facts) (OffsetExpiry, *Warning) {
	e := f.expiry
	out := OffsetExpiry{Partition: -1}
	switch {
	case len(e.commits) > 0:
		out.Clock = ExpiryClockLastCommit
	case e.kind == kindClassic:
		out.Clock = ExpiryClockGroupEmpty
	}
	if _, ok := f.offsetsRetention(); !ok {
		return out, nil
	}
	if len(e.commits) > 0 {
		if c := &e.commits[e.soonestCommit]; c.known {
			out.Soonest, out.HasSoonest, out.Exact = c.expiry, true, c.exact
			out.Topic, out.Partition = c.topic, c.partition
		}
	}
	// An explicit expiry runs once the coordinator applies an expiration
	// condition: per-commit kinds always, classic groups once Empty.
	running := e.kind == kindPerCommit || f.obs.Group.State == GroupStateEmpty
	for i := range e.explicit {
		if c := &e.explicit[i]; running && (len(e.commits) == 0 || e.commits[e.soonestCommit].known) && (!out.HasSoonest || c.expiry.Before(out.Soonest)) {
			out.Soonest, out.HasSoonest, out.Exact = c.expiry, true, true
			out.Topic, out.Partition = c.topic, c.partition
		}
	}
	ex, ok := emptyGroupExpiry(f)
	if !ok || !ex.known {
		return out, nil
	}
	at := ex.earliest
	if !out.HasSoonest || at.Before(out.Soonest) {
		out.Soonest, out.HasSoonest, out.Exact = at, true, ex.exact
		out.Topic, out.Partition = "", -1
	}
	left := at.Sub(f.now)
	window := f.policy.RecoveryWindow
	if left >= window {
		return out, nil
	}
	may := ex.latest.IsZero() || ex.latest.After(ex.earliest)
	w := &Warning{Type: WarningGroupOffsetsExpireIn, Subject: groupName(f), Detail: "Empty since " + ex.since(),
		Duration: left, Span: minutesToDuration(f.offsetsRetentionMinutes), Limit: window}
	switch {
	case left <= 0 && may:
		w.Reason = WarningReasonMayBePastRetention
	case left <= 0:
		w.Reason = WarningReasonPastRetention
	case may:
		w.Reason = WarningReasonMayExpireBeforeWindow
	default:
		w.Reason = WarningReasonShorterThanWindow
	}
	w.Message = emptyGroupExpiryMessage(w)
	return out, w
}

// emptyGroupExpiryMessage renders a WarningGroupOffsetsExpireIn.
func emptyGroupExpiryMessage(w *Warning) string {
	offsetsRetentionMinutes := int64(w.Span / time.Minute)
	setting := keyOffsetsRetentionMinutes + " " + itoa(offsetsRetentionMinutes) + " (" + formatMinutes(offsetsRetentionMinutes) + ")"
	may := ""
	if w.Reason == WarningReasonMayBePastRetention || w.Reason == WarningReasonMayExpireBeforeWindow {
		may = "may "
	}
	if w.Reason == WarningReasonPastRetention || w.Reason == WarningReasonMayBePastRetention {
		return "group " + w.Subject + " is " + w.Detail + ": its committed offsets " + may + "be past " + setting +
			" and go at the coordinator's next cleanup, offsets committed since included: start the consumer now " +
			"(a member stops the clock), or auto.offset.reset decides silently where it resumes"
	}
	return "group " + w.Subject + " is " + w.Detail + ": its committed offsets " + may + "expire in " + FormatDuration(w.Duration) +
		" (" + setting + "), sooner than recoveryWindow " + FormatDuration(w.Limit)
}
