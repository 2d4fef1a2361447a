package proof

// dateOffsetExpiries sets ExpiresAt on the GroupOffsetsRetained violations
// about an expiry, from the same expiry facts the clause judged
// (f.expiry, emptyGroupExpiry): an offset committed with an explicit
// retention time expires at it; an offset that expires per commit at its
// dated commit plus offsets.retention.minutes (exact, or at the earliest
// for a commit time bounded from below; an undated one has none); an Empty
// classic group's offsets that long after it became Empty (at the earliest,
// when that is bounded from below; none when it is not known).
func dateOffsetExpiries(vs []Violation, f *facts) {
	type key struct {
		topic     string
		partition int32
	}
	var explicit, commits map[key]*commitExpiry
	index := func(list []commitExpiry) map[key]*commitExpiry {
		m := make(map[key]*commitExpiry, len(list))
		for i := range list {
			m[key{list[i].topic, list[i].partition}] = &list[i]
		}
		return m
	}
	for i := range vs {
		v := &vs[i]
		switch v.Reason {
		case ReasonExplicitOffsetExpiryBeforeWindow:
			if explicit == nil {
				explicit = index(f.expiry.explicit)
			}
			if c := explicit[key{v.Topic, v.Partition}]; c != nil {
				v.ExpiresAt = c.expiry
			}
		case ReasonOffsetsExpireBeforeWindow, ReasonOffsetsMayExpireBeforeWindow:
			if commits == nil {
				commits = index(f.expiry.commits)
			}
			if c := commits[key{v.Topic, v.Partition}]; c != nil && c.known {
				v.ExpiresAt = c.expiry
			}
		case ReasonEmptyGroupOffsetsExpireBeforeWindow, ReasonEmptyGroupOffsetsMayExpireBeforeWindow:
			// The earliest it may expire; none when since when the group
			// is Empty is not known at all.
			if x, ok := emptyGroupExpiry(f); ok && x.known {
				v.ExpiresAt = x.earliest
			}
		}
	}
}
