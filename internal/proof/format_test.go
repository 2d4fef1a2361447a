package proof

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FormatDuration for messages, FormatDurationShort where a command's flag
// value or the admission message says it (no days, rounded to the second,
// read back by time.ParseDuration): seed 003's 240h recovery window is
// "240h (10d)" in a finding and --recovery-window 240h in the printed
// `retention-guard check`.
func TestFormatDuration(t *testing.T) {
	cases := []struct {
		d           time.Duration
		want, short string
	}{
		{0, "0s", "0s"},
		{250 * time.Millisecond, "250ms", "250ms"},
		{250*time.Millisecond + 400*time.Microsecond, "250.4ms", "250ms"},
		{999600 * time.Microsecond, "999.6ms", "1s"},
		{45 * time.Second, "45s", "45s"},
		{150 * time.Second, "2m30s", "2m30s"},
		{2*time.Minute + 29700*time.Millisecond, "2m29s", "2m30s"}, // short rounds, long cuts
		{90 * time.Minute, "1h30m", "1h30m"},
		{time.Hour + 5*time.Second, "1h5s", "1h5s"},
		{23*time.Hour + 59*time.Minute, "23h59m", "23h59m"},
		{24 * time.Hour, "24h (1d)", "24h"},
		{36 * time.Hour, "36h (1d12h)", "36h"},
		{72 * time.Hour, "72h (3d)", "72h"},
		{240 * time.Hour, "240h (10d)", "240h"},
		{204*time.Hour + 30*time.Minute, "204h30m (8d12h30m)", "204h30m"},
		{-36 * time.Hour, "-36h (-1d12h)", "-36h"},
		{-3 * time.Hour, "-3h", "-3h"},
		{-250 * time.Millisecond, "-250ms", "-250ms"},
		{time.Hour + 1500*time.Millisecond, "1h1s", "1h2s"}, // sub-second parts are dropped from a second up
		{math.MaxInt64, "2562047h47m16s (106751d23h47m16s)", "2562047h47m16s"},
		{math.MinInt64, "-2562047h47m16s (-106751d23h47m16s)", "-2562047h47m16s"},
	}
	for _, c := range cases {
		if got := FormatDuration(c.d); got != c.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", int64(c.d), got, c.want)
		}
		short := FormatDurationShort(c.d)
		if short != c.short {
			t.Errorf("FormatDurationShort(%v) = %q, want %q", int64(c.d), short, c.short)
		}
		if _, err := time.ParseDuration(short); err != nil {
			t.Errorf("FormatDurationShort(%v) = %q does not parse: %v", int64(c.d), short, err)
		}
	}
}

func TestFormatConfigValues(t *testing.T) {
	millisCases := []struct {
		ms   int64
		want string
	}{
		{259200000, "3d"},
		{864000000, "10d"},
		{129600000, "1d12h"},
		{5400000, "1h30m"},
		{500, "500ms"},
		{0, "0s"},
		{math.MaxInt64, "106751991167d7h12m55s"}, // beyond time.Duration: no overflow
	}
	for _, c := range millisCases {
		if got := formatMillis(c.ms); got != c.want {
			t.Errorf("formatMillis(%d) = %q, want %q", c.ms, got, c.want)
		}
	}
	minuteCases := []struct {
		m    int64
		want string
	}{
		{10080, "7d"},
		{43200, "30d"},
		{90, "1h30m"},
		{1, "1m"},
	}
	for _, c := range minuteCases {
		if got := formatMinutes(c.m); got != c.want {
			t.Errorf("formatMinutes(%d) = %q, want %q", c.m, got, c.want)
		}
	}
}

// The days form: a CronJob's schedule gap and the offsets.retention.minutes
// it is compared with (seed 003's weekly run: "runs up to 7d apart").
func TestFormatDays(t *testing.T) {
	for d, want := range map[time.Duration]string{
		7 * 24 * time.Hour:            "7d",
		36 * time.Hour:                "1d12h",
		5 * time.Hour:                 "5h",
		90 * time.Minute:              "1h30m",   // was Go's "1h30m0s" in the CronJob warnings
		25*time.Hour + 30*time.Minute: "1d1h30m", // was "25h30m0s"
		500 * time.Millisecond:        "500ms",
		0:                             "0s",
	} {
		if got := FormatDays(d); got != want {
			t.Errorf("FormatDays(%v) = %q, want %q", d, got, want)
		}
	}
}

// The one truncation of messages (the admission message's lines and
// warnings, event notes, status messages): at most n bytes, never a split
// UTF-8 sequence, the cut marked; seed 003's team writes its names in
// Chinese, three bytes a rune.
func TestTruncate(t *testing.T) {
	cases := []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven bytes", 11, "eleven b..."},
		{strings.Repeat("é", 10), 8, "éé..."}, // 20 bytes; 5 would split the third é
		{"结算任务被静默跳过", 10, "结算..."},            // 3-byte runes
		{"abcdef", 3, "..."},
		{"abcdef", 2, "ab"}, // no room for the mark
		{"éa", 1, ""},
		{"abc", 0, ""},
	}
	for _, c := range cases {
		got := Truncate(c.s, c.n)
		if got != c.want || len(got) > c.n || !utf8.ValidString(got) {
			t.Errorf("Truncate(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
	// A config value in a message is quoted, cut at 64 bytes plus the mark.
	long := strings.Repeat("x", 63) + "é" + strings.Repeat("y", 10)
	if got, want := quoteValue(long), strconv.Quote(strings.Repeat("x", 63)+"..."); got != want {
		t.Errorf("quoteValue = %s, want %s", got, want)
	}
	if v := strings.Repeat("z", 66); quoteValue(v) != strconv.Quote(v) {
		t.Errorf("quoteValue cut a value that fits with the mark's room: %s", quoteValue(v))
	}
}
