package freshness

import (
	"testing"
	"time"
)

// The rule at its edges: the window is 2 × checkInterval + 30s, inclusive;
// a confirmation up to 30s ahead of now is skew, beyond it Future.
func TestOf(t *testing.T) {
	now := time.Date(2026, 3, 9, 14, 0, 0, 0, time.UTC)
	cases := []struct {
		name     string
		ago      time.Duration // now - confirmed
		interval time.Duration
		want     State
	}{
		{"just confirmed", 0, time.Minute, Fresh},
		{"one interval ago", time.Minute, time.Minute, Fresh},
		{"at the window: 2×1m+30s", 150 * time.Second, time.Minute, Fresh},
		{"a nanosecond past the window", 150*time.Second + time.Nanosecond, time.Minute, Stale},
		{"a second past the window", 151 * time.Second, time.Minute, Stale},
		{"10m interval: 20m30s is fresh", 20*time.Minute + 30*time.Second, 10 * time.Minute, Fresh},
		{"10m interval: 21m is stale", 21 * time.Minute, 10 * time.Minute, Stale},
		{"10s interval (the CRD's minimum): 50s", 50 * time.Second, 10 * time.Second, Fresh},
		{"10s interval: 51s", 51 * time.Second, 10 * time.Second, Stale},
		{"20s ahead: skew", -20 * time.Second, time.Minute, Fresh},
		{"30s ahead: still skew", -30 * time.Second, time.Minute, Fresh},
		{"31s ahead", -31 * time.Second, time.Minute, Future},
		{"5m ahead, with a 1h interval too", -5 * time.Minute, time.Hour, Future},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, age := Of(now.Add(-c.ago), now, c.interval)
			if got != c.want || age != c.ago {
				t.Errorf("Of(now - %s, now, %s) = %v, %s; want %v, %s", c.ago, c.interval, got, age, c.want, c.ago)
			}
		})
	}
}

func TestWindow(t *testing.T) {
	for interval, want := range map[time.Duration]time.Duration{
		10 * time.Second: 50 * time.Second,
		time.Minute:      150 * time.Second,
		time.Hour:        2*time.Hour + 30*time.Second,
	} {
		if got := Window(interval); got != want {
			t.Errorf("Window(%s) = %s, want %s", interval, got, want)
		}
	}
}
