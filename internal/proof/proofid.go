package proof

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
)

// proofID is a short stable hash (8 hex digits of SHA-256) of the failing
// facts: the policy UID and, for each violation, its clause, reason,
// topic, partition, committed offset and log start (and the business
// cursor instead of the committed offset, for CursorInRange violations but
// GroupAheadOfCursor, which has both) — sorted, so the
// input's order does not matter. The same gap keeps the same ID across
// checks; a new gap gets a new one. It leaves out everything that moves on
// every check without changing the gap: log end, now, timestamps,
// headroom, messages. It is empty when the verdict is Proven.
func proofID(verdict Verdict, uid string, vs []Violation) string {
	if verdict == Proven {
		return ""
	}
	buf := make([]byte, 0, 64*len(vs))
	bounds := make([][2]int, len(vs))
	for i := range vs {
		start := len(buf)
		buf = appendFact(buf, &vs[i])
		bounds[i] = [2]int{start, len(buf)}
	}
	slices.SortFunc(bounds, func(a, b [2]int) int {
		return bytes.Compare(buf[a[0]:a[1]], buf[b[0]:b[1]])
	})

	h := sha256.New()
	h.Write(appendField(nil, uid))
	for _, b := range bounds {
		h.Write(buf[b[0]:b[1]])
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:4])
}

// appendFact appends one violation's failing facts as a line; strings are
// length-prefixed so no content can forge a field boundary.
func appendFact(b []byte, v *Violation) []byte {
	b = appendField(b, v.Clause)
	b = appendField(b, v.Reason)
	b = appendField(b, v.Topic)
	b = strconv.AppendInt(b, int64(v.Partition), 10)
	b = append(b, ' ')
	committed := v.Committed
	if v.Clause == ClauseCursorInRange && v.Reason != ReasonGroupAheadOfCursor {
		// The cursor's gap does not move with the group's offsets.
		committed = NoOffset
	}
	b = strconv.AppendInt(b, committed, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, v.LogStart, 10)
	if v.Clause == ClauseCursorInRange {
		b = append(b, ' ')
		b = strconv.AppendInt(b, v.Cursor, 10)
	}
	return append(b, '\n')
}

func appendField(b []byte, s string) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	b = append(b, s...)
	return append(b, ' ')
}
