package proof

import (
	"math"
	"testing"
	"time"
)

func TestFormatDuration(t *testing.T) {
	cases := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{250 * time.Millisecond, "250ms"},
		{45 * time.Second, "45s"},
		{90 * time.Minute, "1h30m"},
		{time.Hour + 5*time.Second, "1h5s"},
		{23*time.Hour + 59*time.Minute, "23h59m"},
		{24 * time.Hour, "24h (1d)"},
		{36 * time.Hour, "36h (1d12h)"},
		{72 * time.Hour, "72h (3d)"},
		{240 * time.Hour, "240h (10d)"},
		{204*time.Hour + 30*time.Minute, "204h30m (8d12h30m)"},
		{-36 * time.Hour, "-36h (-1d12h)"},
		{-3 * time.Hour, "-3h"},
		{time.Hour + 1500*time.Millisecond, "1h1s"}, // sub-second parts are dropped from a second up
		{math.MaxInt64, "2562047h47m16s (106751d23h47m16s)"},
		{math.MinInt64, "-2562047h47m16s (-106751d23h47m16s)"},
	}
	for _, c := range cases {
		if got := FormatDuration(c.d); got != c.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", int64(c.d), got, c.want)
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
