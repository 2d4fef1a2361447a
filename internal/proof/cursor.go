package proof

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// cursorInRange holds when the business cursor — the next offset the
// consumer's own database says it will process, written in the same
// transaction as the effect (seed 003's consumer_cursor table, seed 002's
// inbox) — lies inside the retained log on every partition: logStart ≤
// cursor ≤ logEnd. A partition without a cursor row passes only while its
// log starts at 0 (on a compacting topic: while it is empty), as for
// committed offsets.
//
// It also compares the group's committed offset with the cursor, while the
// cursor is in range: committed > cursor means a restart from the group's
// offsets skips committed − cursor records the business never processed
// (auto commit running ahead, seed 003): a GroupAheadOfCursor violation
// when the consumer resumes from the group's offsets, a reported number
// when it resumes from its cursor; committed < cursor is a replay of
// cursor − committed records (seed 002: expected, harmless with an
// idempotent inbox), reported, never refused.
//
// The rows are checked against the topics first; anything that does not
// fit the column contract (no topic column with several topics, a topic or
// partition the proof does not cover, a duplicate, a negative offset)
// makes the whole cursor CursorUnreadable: a cursor that is partly wrong
// proves nothing, and nothing is guessed.
//
// It merges its per-partition outcome into results (from offsetsInRange):
// see mergeCursor.
func cursorInRange(f *facts, results []PartitionResult) (Condition, []Violation, *CursorSummary) {
	c := f.policy.Cursor
	o := clauseOutcome{clause: ClauseCursorInRange}
	sum := &CursorSummary{ResumeFrom: c.ResumeFrom, Rows: len(f.obs.Cursor.Rows)}
	if sum.ResumeFrom != ResumeFromCursor {
		sum.ResumeFrom = ResumeFromGroupOffsets
	}
	fromCursor := c.ResumesFromCursor()

	byKey := make(map[topicPartition]*PartitionResult, len(results))
	for i := range results {
		byKey[topicPartition{results[i].Topic, results[i].Partition}] = &results[i]
	}
	cursors, readable := readCursor(f, &o, byKey)

	unevaluated := 0
	judged := 0
	for i := range f.topics {
		t := &f.topics[i]
		switch {
		case t.obs == nil:
			missingTopic(&o, t, "cursor")
			continue
		case len(t.obs.Partitions) == 0:
			o.add(topicViolation("", ReasonNotEvaluated, t.name, t.name+": no partitions observed: the cursor cannot be placed in its log"))
			continue
		}
		retention, finite := t.retention.finiteRetention()
		tombstones, compactClock := tombstoneClockOf(t)
		for j := range t.obs.Partitions {
			po := &t.obs.Partitions[j]
			pr := byKey[topicPartition{t.name, po.Partition}]
			if pr == nil {
				continue // a partition listed twice: offsetsInRange kept the first
			}
			if _, failed := t.partitionFailure(po.Partition); failed {
				unevaluated++
				continue // offsetsInRange marked it Unknown with the failure's reason
			}
			cj := cursorJudgement{verdict: Unknown, reason: ReasonCursorUnreadable}
			switch {
			case pr.LogStart < 0 || pr.LogEnd < pr.LogStart:
				cj.reason = ReasonNotEvaluated
				var m messageBuilder
				m.partition(pr.Topic, pr.Partition).text(": the observed offsets are not a Kafka log (log start ").int(pr.LogStart).
					text(", log end ").int(pr.LogEnd).text("): the cursor cannot be placed in it")
				o.add(cursorViolation(pr, ReasonNotEvaluated, 0, m.String()))
			case !readable:
			default:
				judged++
				row, has := cursors[topicPartition{t.name, po.Partition}]
				if has {
					pr.Cursor, pr.CursorUpdatedAt = row.NextOffset, row.UpdatedAt
				}
				var v *Violation
				cj, v = judgeCursor(pr, t.retention.compacts, fromCursor)
				if v != nil {
					o.add(*v)
				}
			}
			mergeCursor(pr, cj, fromCursor)
			if fromCursor {
				setCursorHeadroom(pr, po, finite, retention, f)
				if compactClock {
					setTombstoneHeadroom(pr, pr.Cursor, po.CursorTimestamp, nil, tombstones, f.now)
				}
			}
			sum.ReplayRecords = addSaturating(sum.ReplayRecords, pr.ReplayRecords)
			sum.AheadRecords = addSaturating(sum.AheadRecords, pr.AheadRecords)
		}
	}
	if unevaluated > 0 {
		o.notEvaluated = append(o.notEvaluated,
			plural(int64(unevaluated), "partition")+" not evaluated: a request for their offsets failed (see "+ClauseKafkaReachable+")")
	}
	if len(f.topics) == 0 {
		o.add(topicViolation("", ReasonNotEvaluated, "", "no topics to prove: the policy names none and none was observed"))
	}

	cond := o.condition(ReasonCursorInRange, cursorInRangeMessage(judged, sum, fromCursor))
	if cond.Status == ConditionFalse {
		cond.Message = cursorOutOfRangeSummary(o.violations, len(results)) + ": " + cond.Message
	}
	return cond, o.violations, sum
}

// cursorJudgement is one partition's outcome on the cursor alone.
type cursorJudgement struct {
	verdict Verdict
	reason  string
	expired int64 // logStart − cursor, for CursorExpired
}

// readCursor checks the rows read against the topics the proof covers and
// returns the cursor per partition. It returns false, with the problem as a
// violation (or a note when a Kafka failure explains it), when the cursor
// was not read or a row breaks the contract.
func readCursor(f *facts, o *clauseOutcome, observed map[topicPartition]*PartitionResult) (map[topicPartition]CursorRow, bool) {
	obs := &f.obs.Cursor
	switch {
	case obs.Problem != "":
		o.add(topicViolation("", ReasonCursorUnreadable, "", "the business cursor could not be read: "+obs.Problem))
		return nil, false
	case !obs.Read && len(f.obs.Failures) > 0:
		o.notEvaluated = append(o.notEvaluated, "the business cursor was not read: the Kafka observation failed (see "+ClauseKafkaReachable+")")
		return nil, false
	case !obs.Read:
		o.add(topicViolation("", ReasonCursorUnreadable, "", "the business cursor was not read"))
		return nil, false
	}

	covered := make(map[string]*topicFacts, len(f.topics))
	for i := range f.topics {
		covered[f.topics[i].name] = &f.topics[i]
	}
	var names []string
	for i := range f.topics {
		names = append(names, f.topics[i].name)
	}
	// Problems by kind: how many rows, and the first example. Kinds are
	// reported in this order, each once.
	type problem struct {
		count   int
		topic   string
		example string
	}
	kinds := []string{"noTopic", "emptyTopic", "unknownTopic", "unknownPartition", "negative", "duplicate"}
	problems := map[string]*problem{}
	note := func(kind, topic, example string) {
		p := problems[kind]
		if p == nil {
			p = &problem{topic: topic, example: example}
			problems[kind] = p
		}
		p.count++
	}
	if !obs.HasTopic && len(f.topics) != 1 && len(obs.Rows) > 0 {
		note("noTopic", "", "the query returns no topic column, and the proof covers "+plural(int64(len(f.topics)), "topic")+
			" ("+strings.Join(names, ", ")+"): add a topic column to tell their partitions apart")
	}
	// Sorted, so that the example each problem names does not depend on
	// the order the database returned the rows in.
	rows := slices.Clone(obs.Rows)
	slices.SortFunc(rows, func(a, b CursorRow) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition),
			cmp.Compare(a.NextOffset, b.NextOffset), a.UpdatedAt.Compare(b.UpdatedAt))
	})
	cursors := make(map[topicPartition]CursorRow, len(rows))
	for _, row := range rows {
		topic := row.Topic
		if !obs.HasTopic {
			if len(f.topics) != 1 {
				continue // reported once above
			}
			topic = f.topics[0].name
		}
		name := topic + "[" + strconv.FormatInt(row.Partition, 10) + "]"
		t := covered[topic]
		switch {
		case topic == "":
			note("emptyTopic", "", "a row has an empty topic")
			continue
		case t == nil:
			note("unknownTopic", topic, "a row names topic "+quoteValue(topic)+", which the policy does not cover ("+
				strings.Join(names, ", ")+"): filter the query by topic")
			continue
		case t.obs == nil:
			continue // the topic was not observed: missingTopic says so
		}
		if row.Partition < 0 || row.Partition > 1<<31-1 || observed[topicPartition{topic, int32(row.Partition)}] == nil {
			note("unknownPartition", topic, "a row names "+name+", which the topic does not have ("+partitionRange(t.obs)+")")
			continue
		}
		if row.NextOffset < 0 {
			note("negative", topic, "the row for "+name+" has next_offset "+strconv.FormatInt(row.NextOffset, 10)+
				", and an offset is never negative")
			continue
		}
		key := topicPartition{topic, int32(row.Partition)}
		if _, dup := cursors[key]; dup {
			note("duplicate", topic, "several rows name "+name+": the query must return one row per partition")
			continue
		}
		cursors[key] = row
	}
	if len(problems) == 0 {
		return cursors, true
	}
	for _, kind := range kinds {
		p := problems[kind]
		if p == nil {
			continue
		}
		msg := "the business cursor breaks the column contract: " + p.example
		if p.count > 1 {
			msg += " (and " + plural(int64(p.count-1), "more row") + " like it)"
		}
		o.add(topicViolation("", ReasonCursorUnreadable, p.topic, msg))
	}
	return nil, false
}

// partitionRange describes a topic's partitions: "24 partitions, 0-23".
func partitionRange(t *TopicObservation) string {
	lo, hi := int32(-1), int32(-1)
	for _, po := range t.Partitions {
		if lo < 0 || po.Partition < lo {
			lo = po.Partition
		}
		if po.Partition > hi {
			hi = po.Partition
		}
	}
	s := plural(int64(len(t.Partitions)), "partition")
	if int(hi-lo)+1 == len(t.Partitions) && len(t.Partitions) > 1 {
		s += ", " + strconv.Itoa(int(lo)) + "-" + strconv.Itoa(int(hi))
	}
	return s
}

// judgeCursor places the partition's cursor (pr.Cursor, NoOffset when it
// has no row) in its log, and compares the group's committed offset with
// it. It sets the partition's replay and ahead counts and returns the
// cursor's outcome with its violation, if any.
func judgeCursor(pr *PartitionResult, compacts, fromCursor bool) (cursorJudgement, *Violation) {
	var m messageBuilder
	cj := cursorJudgement{verdict: Violated}
	cur := pr.Cursor
	switch {
	case cur == NoOffset && pr.LogStart == 0 && (!compacts || pr.LogEnd == 0):
		return cursorJudgement{verdict: Proven}, nil // a fresh consumer starts at 0: nothing has expired
	case cur == NoOffset && pr.LogStart == 0:
		cj.reason = ReasonNoCursor
		m.text("no cursor row for ").partition(pr.Topic, pr.Partition).text(" on a compacting topic holding offsets 0 to ").int(pr.LogEnd).
			text(": compaction removes records without moving log start 0, so nothing proves the business processed what was compacted away")
	case cur == NoOffset:
		cj.reason = ReasonNoCursor
		m.text("no cursor row for ").partition(pr.Topic, pr.Partition).text(" while log start is ").int(pr.LogStart).
			text(": nothing proves the business processed offsets below ").int(pr.LogStart).
			text(" before they expired — reconcile them from the source, then write the cursor")
	case cur < pr.LogStart:
		cj.reason, cj.expired = ReasonCursorExpired, pr.LogStart-cur
		m.text("cursor ").int(cur).text(" is below log start ").int(pr.LogStart).text(" on ").partition(pr.Topic, pr.Partition).
			text(": ").count(cj.expired, "record")
		if cj.expired == 1 {
			m.text(" was never processed and is gone")
		} else {
			m.text(" were never processed and are gone")
		}
		m.text(" — reconcile them from the source")
	case cur > pr.LogEnd:
		cj.reason = ReasonCursorBeyondLogEnd
		m.text("cursor ").int(cur).text(" is beyond log end ").int(pr.LogEnd).text(" on ").partition(pr.Topic, pr.Partition).
			text(": the topic was truncated or recreated below the business's position, so the offsets it resumes from " +
				"are not the records it processed — reconcile the cursor with the topic")
	default:
		cj.verdict = Proven
		switch c := pr.Committed; {
		case c < 0: // no committed offset (or not an offset): nothing to compare
		case c > cur:
			pr.AheadRecords = c - cur
		case c < cur:
			pr.ReplayRecords = cur - c
		}
		if pr.AheadRecords == 0 || fromCursor {
			return cj, nil
		}
		cj.verdict, cj.reason = Violated, ReasonGroupAheadOfCursor
		m.text("committed offset ").int(pr.Committed).text(" is ahead of cursor ").int(cur).text(" on ").partition(pr.Topic, pr.Partition).
			text(": resuming from the group's offsets skips ").count(pr.AheadRecords, "record").
			text(" the business never processed — resume from the cursor")
	}
	v := cursorViolation(pr, cj.reason, cj.expired, m.String())
	return cj, &v
}

func cursorViolation(pr *PartitionResult, reason string, expired int64, message string) Violation {
	return Violation{
		Reason: reason, Topic: pr.Topic, Partition: pr.Partition, Message: message,
		Committed: pr.Committed, LogStart: pr.LogStart, LogEnd: pr.LogEnd, ExpiredRecords: expired, Cursor: pr.Cursor,
	}
}

// mergeCursor folds the cursor's outcome into the partition's. With
// resumeFrom Cursor the cursor alone decides (and the lag counts from it);
// otherwise the partition takes the worse of the two outcomes, and among
// failures the one that says most about loss (LossRank: the cursor's
// first). The expired records follow the reason chosen.
func mergeCursor(pr *PartitionResult, cj cursorJudgement, fromCursor bool) {
	if fromCursor {
		pr.Verdict, pr.Reason, pr.ExpiredRecords = cj.verdict, cj.reason, cj.expired
		switch {
		case pr.LogStart < 0 || pr.LogEnd < pr.LogStart:
			pr.Lag = 0
		case pr.Cursor >= pr.LogStart && pr.Cursor <= pr.LogEnd:
			pr.Lag = pr.LogEnd - pr.Cursor
		default:
			pr.Lag = pr.LogEnd - pr.LogStart
		}
		return
	}
	switch {
	case cj.verdict == Proven:
	case pr.Verdict == Proven,
		cj.verdict == Violated && pr.Verdict == Unknown,
		cj.verdict == Violated && LossRank(cj.reason) < LossRank(pr.Reason):
		pr.Verdict, pr.Reason, pr.ExpiredRecords = cj.verdict, cj.reason, cj.expired
	}
	if _, rewinds := rewindPoint(pr); pr.Verdict != Proven && !rewinds {
		// (A diverged commit keeps the headroom of its rewind point:
		// setRewindHeadroom.)
		pr.Headroom, pr.HasHeadroom = 0, false
		pr.TombstoneHeadroom, pr.HasTombstoneHeadroom, pr.TombstonesUnread = 0, false, false
		clearUnreadHeadroom(pr)
	}
}

// setCursorHeadroom measures headroom from the cursor (resumeFrom Cursor):
// how long until retention deletes the record at the cursor; a cursor at
// log end has the full retention.ms.
func setCursorHeadroom(pr *PartitionResult, po *PartitionObservation, finite bool, retention time.Duration, f *facts) {
	pr.Headroom, pr.HasHeadroom = 0, false
	clearUnreadHeadroom(pr)
	switch {
	case !finite || pr.Verdict != Proven || pr.Cursor == NoOffset:
	case pr.Cursor == pr.LogEnd:
		pr.Headroom, pr.HasHeadroom = retention, true
	case !po.CursorTimestamp.IsZero():
		pr.Headroom, pr.HasHeadroom = po.CursorTimestamp.Add(retention).Sub(f.now), true
	}
}

func cursorInRangeMessage(judged int, s *CursorSummary, fromCursor bool) string {
	msg := "every business cursor lies between log start and log end on " + plural(int64(judged), "partition")
	var gaps []string
	if s.ReplayRecords > 0 {
		gaps = append(gaps, "a restart from the group's offsets replays "+plural(s.ReplayRecords, "record"))
	}
	if s.AheadRecords > 0 {
		gaps = append(gaps, "the group's offsets are "+plural(s.AheadRecords, "record")+" ahead of the cursor")
	}
	if len(gaps) == 0 {
		gaps = append(gaps, "the group's offsets match the cursor")
	}
	resume := "the consumer resumes from its cursor"
	if !fromCursor {
		resume = "the consumer resumes from the group's offsets"
	}
	return msg + " (" + resume + "; " + strings.Join(gaps, "; ") + ")"
}

// cursorOutOfRangeSummary counts the partitions the cursor fails on:
// "2 of 24 partitions: 1 cursor below log start (10 records gone), 1 group
// offset ahead of the cursor (110 records to skip)".
func cursorOutOfRangeSummary(vs []Violation, total int) string {
	var expired, missing, beyond, ahead int
	var gone, skipped int64
	for i := range vs {
		switch v := &vs[i]; v.Reason {
		case ReasonCursorExpired:
			expired++
			gone = addSaturating(gone, v.ExpiredRecords)
		case ReasonNoCursor:
			missing++
		case ReasonCursorBeyondLogEnd:
			beyond++
		case ReasonGroupAheadOfCursor:
			ahead++
			skipped = addSaturating(skipped, v.Committed-v.Cursor)
		}
	}
	var parts []string
	if expired > 0 {
		parts = append(parts, plural(int64(expired), "cursor")+" below log start ("+plural(gone, "record")+" gone)")
	}
	if missing > 0 {
		parts = append(parts, itoa(int64(missing))+" without a cursor row")
	}
	if beyond > 0 {
		parts = append(parts, plural(int64(beyond), "cursor")+" beyond log end")
	}
	if ahead > 0 {
		parts = append(parts, plural(int64(ahead), "group offset")+" ahead of the cursor ("+plural(skipped, "record")+" to skip)")
	}
	return itoa(int64(expired+missing+beyond+ahead)) + " of " + plural(int64(total), "partition") + ": " + strings.Join(parts, ", ")
}

// topicPartition keys a partition.
type topicPartition struct {
	topic     string
	partition int32
}
