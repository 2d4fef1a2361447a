package proof

import "strconv"

// seekWarning is WarningSeekRequired: the partitions a fresh group would
// bootstrap from offset 0 (no committed offset, log start 0: proven, nothing
// expired) when the consumer clause holds the client to a reset that fails
// loudly. With auto.offset.reset=none the Java client throws
// NoOffsetForPartitionException on such a partition (librdkafka's error
// raises ERR__AUTO_OFFSET_RESET) instead of starting at 0 — a partition
// added to the topic is the common case — so the group needs a seek (its
// offsets committed at the log start) before the consumer starts, not a
// "fresh start". A consumer that resumes from its business cursor seeks
// itself: no warning then.
func seekWarning(p Policy, partitions []PartitionResult) *Warning {
	if !p.ResetFailsLoudly || p.Cursor.ResumesFromCursor() {
		return nil
	}
	const listed = 3
	var names []string
	n := 0
	for i := range partitions {
		pr := &partitions[i]
		if pr.Verdict != Proven || pr.Committed != NoOffset {
			continue
		}
		n++
		if len(names) < listed {
			names = append(names, pr.Topic+"["+strconv.Itoa(int(pr.Partition))+"]")
		}
	}
	if n == 0 {
		return nil
	}
	which := joinAnd(names)
	if n > len(names) {
		which += " and " + plural(int64(n-len(names)), "more partition")
	}
	// Short: status keeps 256 bytes of a warning, admission 120.
	return &Warning{Type: WarningSeekRequired, Reason: WarningReasonNoCommittedOffset, Subject: which,
		Message: "seek before start: no committed offset on " + which +
			": none (spec.consumer) throws NoOffsetForPartitionException there, no start at 0; " +
			"commit the log start (kafka-consumer-groups --group " + p.GroupID + " --reset-offsets --to-earliest)"}
}

func joinAnd(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	s := items[0]
	for _, it := range items[1 : len(items)-1] {
		s += ", " + it
	}
	return s + " and " + items[len(items)-1]
}
