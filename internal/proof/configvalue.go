package proof

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// The one reading of a Kafka config value, for the proof, the observer and
// the status alike. One rule: a value absent from the broker's answer,
// null, or not of the asked type is unknown (false), never a default the
// reader guesses; the proof fails closed on unknown. Values are trimmed
// first, as Kafka's ConfigDef.parseType trims them.

// Text is the trimmed value; false when absent or null.
func (v ConfigValue) Text() (string, bool) {
	if !v.Present || v.Null {
		return "", false
	}
	return strings.TrimSpace(v.Value), true
}

// Int is the value as a base-10 int64; false when absent, null or not an
// integer.
func (v ConfigValue) Int() (int64, bool) {
	s, ok := v.Text()
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// IntOrNil is Int as a pointer, nil when unknown: the status's shape.
func (v ConfigValue) IntOrNil() *int64 {
	n, ok := v.Int()
	if !ok {
		return nil
	}
	return &n
}

// Millis is a non-negative integer value read as milliseconds (saturating
// at the longest duration); false when unknown or negative (Kafka's -1:
// unbounded). Long.MAX reads as the longest duration: callers for which it
// means "no bound" check Unbounded.
func (v ConfigValue) Millis() (time.Duration, bool) {
	ms, ok := v.Int()
	if !ok || ms < 0 {
		return 0, false
	}
	return millisToDuration(ms), true
}

// Unbounded reports an integer value of Long.MAX, Kafka's "no bound" for
// the message.timestamp.* limits.
func (v ConfigValue) Unbounded() bool {
	n, ok := v.Int()
	return ok && n == math.MaxInt64
}

// Is reports whether the value is word, ignoring case (Kafka's enums:
// LogAppendTime, true, false); false when absent or null.
func (v ConfigValue) Is(word string) bool {
	s, ok := v.Text()
	return ok && strings.EqualFold(s, word)
}

// LogAppendTime reports message.timestamp.type LogAppendTime: the broker,
// not the producer, stamps the records.
func (v ConfigValue) LogAppendTime() bool { return v.Is("LogAppendTime") }

// Compacts reports whether a cleanup.policy value compacts, by the proof's
// own rule (readCleanupPolicy); false when unknown.
func (v ConfigValue) Compacts() bool {
	_, compacts, problem := readCleanupPolicy(v)
	return problem == "" && compacts
}
