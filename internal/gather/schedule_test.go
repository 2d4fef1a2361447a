package gather

import (
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/utils/ptr"
)

// scheduleFrom is the fixed "now" of the schedule tests: a Monday.
var scheduleFrom = time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)

func TestLongestScheduleGap(t *testing.T) {
	const (
		hour = time.Hour
		day  = 24 * time.Hour
	)
	cases := []struct {
		name     string
		schedule string
		tz       *string
		deadline *int64
		want     time.Duration
		wantErr  string
	}{
		{name: "daily (seed 003's 02:00 batch)", schedule: "0 2 * * *", want: day},
		{name: "weekly", schedule: "0 2 * * 1", want: 7 * day},
		{name: "monthly: the longest month", schedule: "0 2 1 * *", want: 31 * day},
		{name: "@monthly", schedule: "@monthly", want: 31 * day},
		{name: "yearly: a leap year is the longest", schedule: "@yearly", want: 366 * day},
		{name: "weekdays: the weekend", schedule: "30 1 * * 1-5", want: 3 * day},
		{name: "every minute", schedule: "* * * * *", want: time.Minute},
		{name: "every minute but 22:00-23:59", schedule: "* 0-21 * * *", want: 2*hour + time.Minute},
		// 10,000 runs walked (Feb 1-7), the rest scanned: Feb 28 23:59 to
		// Feb 1 00:00 next year.
		{name: "every minute of February (scanned)", schedule: "* * * 2 *", want: 337*day + time.Minute},
		{name: "@every 36h", schedule: "@every 36h", want: 36 * hour},
		{name: "@every with startingDeadlineSeconds", schedule: "@every 36h", deadline: ptr.To[int64](3600), want: 37 * hour},
		{name: "weekly + startingDeadlineSeconds 1d", schedule: "0 2 * * 1", deadline: ptr.To[int64](86400), want: 8 * day},
		{name: "startingDeadlineSeconds 0 adds nothing", schedule: "0 2 * * *", deadline: ptr.To[int64](0), want: day},
		// New York leaves DST on 2027-11-07: the Monday 02:00 EST after
		// it is 7d1h after the Monday 02:00 EDT before it.
		{name: "weekly in a DST time zone", schedule: "0 2 * * 1", tz: ptr.To("America/New_York"), want: 7*day + hour},
		{name: "weekly in a zone without DST", schedule: "0 2 * * 1", tz: ptr.To("Asia/Shanghai"), want: 7 * day},
		// A leap day only: every four years.
		{name: "leap day", schedule: "0 2 29 2 *", want: (4*365 + 1) * day},
		{name: "unparsable", schedule: "0 2 * *", wantErr: "expected exactly 5 fields"},
		{name: "never (February 30th)", schedule: "0 2 30 2 *", wantErr: "never activates"},
		{name: "unknown time zone", schedule: "0 2 * * *", tz: ptr.To("Mars/Olympus_Mons"), wantErr: "unknown time zone"},
		{name: "TZ= in the schedule", schedule: "TZ=UTC 0 2 * * *", wantErr: "spec.timeZone"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := longestScheduleGap(tc.schedule, tc.tz, tc.deadline, scheduleFrom)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got.Gap != tc.want {
				t.Errorf("longest gap = %v (after %v), want %v", got.Gap, got.After, tc.want)
			}
		})
	}
}

// The gap is found where it is: the monthly schedule's 31-day gap starts
// on the 1st of a 31-day month.
func TestLongestScheduleGapSaysWhere(t *testing.T) {
	got, err := longestScheduleGap("0 2 1 * *", nil, nil, scheduleFrom)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC); !got.After.Equal(want) {
		t.Errorf("longest gap starts %v, want %v (December has 31 days)", got.After, want)
	}
}

// The scan that follows the first maxWalkedRuns runs measures every gap of
// two hours or more exactly: same answer as walking every run.
func TestLongestGapScanMatchesTheWalk(t *testing.T) {
	for _, spec := range []string{"* 0-21 * * *", "*/7 1-3,9 * * 1-5", "* * 1,15 * *", "* * * 2 *"} {
		t.Run(spec, func(t *testing.T) {
			sched, err := cron.ParseStandard(spec)
			if err != nil {
				t.Fatal(err)
			}
			first := sched.Next(scheduleFrom)
			end := first.Add(scheduleHorizon)
			var walked scheduleGap
			for prev := first; !prev.After(end); {
				next := sched.Next(prev)
				if gap := next.Sub(prev); gap > walked.Gap {
					walked = scheduleGap{Gap: gap, After: prev}
				}
				prev = next
			}
			got, err := longestGap(sched, first, end)
			if err != nil {
				t.Fatal(err)
			}
			if got.Gap != walked.Gap || !got.After.Equal(walked.After) {
				t.Errorf("longestGap = %v after %v; walking every run: %v after %v", got.Gap, got.After, walked.Gap, walked.After)
			}
		})
	}
}

// The worst case a reconcile can meet: a schedule that fires every minute
// of the year.
func BenchmarkLongestScheduleGapEveryMinute(b *testing.B) {
	for b.Loop() {
		if _, err := longestScheduleGap("* * * * *", nil, nil, scheduleFrom); err != nil {
			b.Fatal(err)
		}
	}
}

// The longest gap of a schedule is computed once per hour for the same
// schedule, time zone and deadline; another input is computed anew.
func TestScheduleGapCache(t *testing.T) {
	var c scheduleGapCache
	// A Monday, half an hour before the weekly run.
	now := time.Date(2026, 12, 7, 1, 30, 0, 0, time.UTC)
	first, err := c.gap("0 2 * * 1", nil, nil, now)
	if err != nil || first.Gap != 7*24*time.Hour || !first.After.Equal(time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC)) {
		t.Fatalf("gap %+v, %v", first, err)
	}
	// 45 minutes later (after today's run) the cached result is returned.
	if again, _ := c.gap("0 2 * * 1", nil, nil, now.Add(45*time.Minute)); again != first {
		t.Errorf("within the TTL: %+v, want the cached %+v", again, first)
	}
	// An hour later it is computed again, from then.
	if later, _ := c.gap("0 2 * * 1", nil, nil, now.Add(time.Hour)); !later.After.Equal(time.Date(2026, 12, 14, 2, 0, 0, 0, time.UTC)) {
		t.Errorf("after the TTL: %+v", later)
	}
	deadline := int64(3600)
	if d, _ := c.gap("0 2 * * 1", nil, &deadline, now); d.Gap != 7*24*time.Hour+time.Hour {
		t.Errorf("another starting deadline shares the cached gap: %v", d.Gap)
	}
	if _, err := c.gap("0 2 30 2 *", nil, nil, now); err == nil {
		t.Error("a schedule that never runs: no error")
	}
	if _, err := c.gap("0 2 30 2 *", nil, nil, now.Add(time.Minute)); err == nil {
		t.Error("the cached error is lost")
	}
}
