package proof

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// FormatDuration renders a duration for people: whole units without zero
// parts, and days in parentheses from one day up, e.g. "240h (10d)",
// "36h (1d12h)", "1h30m", "45s". Below one second it falls back to
// time.Duration's own form ("250ms", "0s").
func FormatDuration(d time.Duration) string {
	if d > -time.Second && d < time.Second {
		return d.String()
	}
	neg := d < 0
	return formatSeconds(neg, absSeconds(d))
}

// FormatDurationShort renders a duration as FormatDuration does but
// without the days, in a form time.ParseDuration reads back (a command's
// flag value): "240h", "1h30m", "45s". It rounds to the second, below one
// second to the millisecond ("250ms"): it renders measured ages and
// timeouts, where 2m29.7s is 2m30s.
func FormatDurationShort(d time.Duration) string {
	if d > -time.Second && d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	d = d.Round(time.Second)
	b := make([]byte, 0, 16)
	if d < 0 {
		b = append(b, '-')
	}
	return string(appendHMS(b, absSeconds(d)))
}

// FormatDays renders a duration in days from one day up, as config
// values are glossed (formatMillis): "7d", "1d12h", "1h30m", "45s"; below
// one second, time.Duration's own form.
func FormatDays(d time.Duration) string {
	if d > -time.Second && d < time.Second {
		return d.String()
	}
	return formatDays(d < 0, absSeconds(d))
}

// Truncate shortens s to at most n bytes, cutting on a rune boundary and
// marking the cut with "..." (within the n bytes); s is returned whole
// when it fits. With no room for the mark (n < 3), s is cut to n bytes on
// a rune boundary, unmarked.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	mark := "..."
	if n < len(mark) {
		mark = ""
	}
	cut := max(n-len(mark), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// formatMillis renders a millisecond count (retention.ms) in days when it
// is a day or more, for a config value's gloss: 259200000 → "3d",
// 129600000 → "1d12h", 5400000 → "1h30m". It does not overflow
// time.Duration for retentions longer than 292 years.
func formatMillis(ms int64) string {
	if ms > -1000 && ms < 1000 {
		return (time.Duration(ms) * time.Millisecond).String()
	}
	return formatDays(ms < 0, absUint(ms)/1000)
}

// formatMinutes renders a minute count (offsets.retention.minutes) like
// formatMillis: 10080 → "7d".
func formatMinutes(minutes int64) string {
	m := absUint(minutes)
	if m > ^uint64(0)/60 {
		m = ^uint64(0) / 60
	}
	return formatDays(minutes < 0, m*60)
}

func formatDays(neg bool, secs uint64) string {
	b := make([]byte, 0, 16)
	if neg {
		b = append(b, '-')
	}
	if secs >= 86400 {
		b = strconv.AppendUint(b, secs/86400, 10)
		b = append(b, 'd')
		if secs%86400 == 0 {
			return string(b)
		}
		secs %= 86400
	}
	return string(appendHMS(b, secs))
}

func absSeconds(d time.Duration) uint64 {
	return absUint(int64(d)) / uint64(time.Second)
}

// absUint is |v| without overflowing on math.MinInt64.
func absUint(v int64) uint64 {
	if v < 0 {
		return uint64(-(v + 1)) + 1
	}
	return uint64(v)
}

func formatSeconds(neg bool, secs uint64) string {
	b := make([]byte, 0, 24)
	if neg {
		b = append(b, '-')
	}
	b = appendHMS(b, secs)
	if secs >= 86400 {
		b = append(b, " ("...)
		if neg {
			b = append(b, '-')
		}
		b = strconv.AppendUint(b, secs/86400, 10)
		b = append(b, 'd')
		if rest := secs % 86400; rest > 0 {
			b = appendHMS(b, rest)
		}
		b = append(b, ')')
	}
	return string(b)
}

// appendHMS appends secs as hours, minutes and seconds, leaving out zero
// parts: 3600 → "1h", 5400 → "1h30m", 45 → "45s".
func appendHMS(b []byte, secs uint64) []byte {
	h, m, s := secs/3600, secs%3600/60, secs%60
	if h > 0 {
		b = strconv.AppendUint(b, h, 10)
		b = append(b, 'h')
	}
	if m > 0 {
		b = strconv.AppendUint(b, m, 10)
		b = append(b, 'm')
	}
	if s > 0 || (h == 0 && m == 0) {
		b = strconv.AppendUint(b, s, 10)
		b = append(b, 's')
	}
	return b
}

// partitionName renders a partition the way Kafka tools do: "topic[3]".
func partitionName(topic string, partition int32) string {
	b := make([]byte, 0, len(topic)+8)
	b = append(b, topic...)
	b = append(b, '[')
	b = strconv.AppendInt(b, int64(partition), 10)
	b = append(b, ']')
	return string(b)
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// quoteValue renders a raw config value for a message.
func quoteValue(v string) string {
	const limit = 64
	return strconv.Quote(Truncate(v, limit+len("...")))
}

// plural returns n and the noun, with an "s" unless n is 1.
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return itoa(n) + " " + noun + "s"
}

// messageBuilder builds a message in one allocation.
type messageBuilder struct{ strings.Builder }

func (m *messageBuilder) text(s string) *messageBuilder {
	if m.Cap() == 0 {
		m.Grow(192)
	}
	m.WriteString(s)
	return m
}

func (m *messageBuilder) int(v int64) *messageBuilder {
	var buf [20]byte
	m.Write(strconv.AppendInt(buf[:0], v, 10))
	return m
}

// partition writes "topic[3]".
func (m *messageBuilder) partition(topic string, partition int32) *messageBuilder {
	m.text(topic).text("[").int(int64(partition)).WriteByte(']')
	return m
}

// count writes n and the noun, with an "s" unless n is 1.
func (m *messageBuilder) count(n int64, noun string) *messageBuilder {
	m.int(n).text(" ").text(noun)
	if n != 1 {
		m.WriteByte('s')
	}
	return m
}

// Plural counts a noun: "1 partition", "24 partitions". For messages
// outside the proof that print its counts.
func Plural(n int64, noun string) string { return plural(n, noun) }
