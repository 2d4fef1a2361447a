package gather

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/assemble"
)

// A CronJob's schedule is evidence (issue #8, seed 003): a batch consumer
// is down between two runs by design, so the longest gap between its
// scheduled runs is downtime the team has planned. When that gap reaches
// the brokers' offsets.retention.minutes, the group's committed offsets
// expire between two runs — the daily settlement consumer of seed 003 lost
// 4,654,259 tasks exactly so. These functions foresee it from the cron
// expression, before it happens: they measure the gaps, and
// internal/assemble judges them. They are pure and table-tested.

// scheduleHorizon is how far ahead activations are examined: a year covers
// every monthly and yearly pattern, both DST transitions and a leap day's
// month; the gap that starts inside it is examined to its end, so a
// yearly schedule shows its full gap.
const scheduleHorizon = 366 * 24 * time.Hour

// scheduleGap is the longest gap between consecutive scheduled runs
// (internal/assemble judges it).
type scheduleGap = assemble.ScheduleGap

// longestScheduleGap returns the longest gap between consecutive
// activations of a CronJob schedule over scheduleHorizon from from,
// interpreted as the CronJob controller does: cron.ParseStandard (five
// fields, @daily-style descriptors, @every), in spec.timeZone when set
// (else in UTC, the controller manager's usual zone), plus
// startingDeadlineSeconds when set.
//
// An @every schedule's gap is its interval. A schedule that never
// activates (February 30th) is an error. The work is bounded (see
// longestGap): at most a few tens of thousands of cron.Schedule.Next
// calls, a few milliseconds, whatever the schedule.
func longestScheduleGap(schedule string, timeZone *string, startingDeadlineSeconds *int64, from time.Time) (scheduleGap, error) {
	spec := strings.TrimSpace(schedule)
	if strings.Contains(spec, "TZ") {
		// The CronJob API refuses TZ= in spec.schedule; spec.timeZone says it.
		return scheduleGap{}, errors.New("time zones belong in spec.timeZone, not in spec.schedule")
	}
	if timeZone != nil && *timeZone != "" {
		if _, err := time.LoadLocation(*timeZone); err != nil {
			return scheduleGap{}, fmt.Errorf("unknown time zone %q: %w", *timeZone, err)
		}
		spec = "TZ=" + *timeZone + " " + spec
	}
	sched, err := cron.ParseStandard(spec)
	if err != nil {
		return scheduleGap{}, err
	}
	var deadline time.Duration
	if startingDeadlineSeconds != nil && *startingDeadlineSeconds > 0 {
		deadline = time.Duration(*startingDeadlineSeconds) * time.Second
	}

	if every, ok := sched.(cron.ConstantDelaySchedule); ok {
		return scheduleGap{Gap: every.Delay + deadline}, nil
	}
	first := sched.Next(from)
	if first.IsZero() {
		return scheduleGap{}, errors.New("the schedule never activates")
	}
	longest, err := longestGap(sched, first, first.Add(scheduleHorizon))
	if err != nil {
		return scheduleGap{}, err
	}
	longest.Gap += deadline
	return longest, nil
}

const (
	// maxWalkedRuns is how many runs longestGap walks one by one before
	// it scans: a schedule running at most this often a year (about every
	// 53 minutes) is measured run by run.
	maxWalkedRuns = 10000
	// gapScanStep is the scan's step: every gap of at least twice the step
	// is found and measured exactly.
	gapScanStep = time.Hour
)

// longestGap finds the longest gap between consecutive activations of
// sched that starts in [first, end], first being an activation.
//
// It walks run by run for the first maxWalkedRuns runs, then scans the rest
// at gapScanStep: a gap (c, d) of at least 2 × gapScanStep contains a scan
// point x with d − x ≥ gapScanStep, where it is noticed (Next(x) is d);
// c, the last run at or before x, is then found by bisecting the step
// before x with Next. So a schedule that runs every minute costs ~19,000
// Next calls instead of 527,000, and every gap that could matter to
// offsets retention (minutes at the least, days in practice) is exact; a
// dense schedule's gaps under two hours beyond its first 10,000 runs may go
// unmeasured, the longest reported then still being a true gap.
func longestGap(sched cron.Schedule, first, end time.Time) (scheduleGap, error) {
	var longest scheduleGap
	note := func(c, d time.Time) {
		if gap := d.Sub(c); gap > longest.Gap {
			longest = scheduleGap{Gap: gap, After: c}
		}
	}
	prev := first
	for range maxWalkedRuns {
		if prev.After(end) {
			return longest, nil
		}
		next := sched.Next(prev)
		if next.IsZero() {
			// robfig/cron looks 5 years ahead: no later run within them.
			return scheduleGap{}, fmt.Errorf("no run within 5 years after %s", prev.UTC().Format(time.RFC3339))
		}
		note(prev, next)
		prev = next
	}
	// Scan from prev, a run whose following gap is yet to be measured.
	var measured time.Time // the end of the last gap measured by the scan
	for x := prev; !x.After(end); x = x.Add(gapScanStep) {
		d := sched.Next(x)
		if d.IsZero() {
			return scheduleGap{}, fmt.Errorf("no run within 5 years after %s", x.UTC().Format(time.RFC3339))
		}
		if d.Sub(x) < gapScanStep && !x.Equal(prev) || d.Equal(measured) {
			continue
		}
		c := x
		if !x.Equal(prev) {
			lo := x.Add(-gapScanStep)
			if sched.Next(lo).After(x) {
				continue // no run in (lo, x]: this gap was measured before
			}
			// Bisect for the last run at or before x: Next(lo) ≤ x < Next(hi).
			for hi := x; hi.Sub(lo) > time.Second; {
				mid := lo.Add(hi.Sub(lo) / 2).Truncate(time.Second)
				if !sched.Next(mid).After(x) {
					lo = mid
				} else {
					hi = mid
				}
			}
			c = sched.Next(lo)
		}
		note(c, d)
		measured = d
	}
	return longest, nil
}

// scheduleGapTTL is how long a computed longest gap is reused: the gap over
// the next year moves little from one hour to the next, and computing it
// for a dense schedule (every 15 minutes) costs ~10 ms — every check of
// every policy that selects such a CronJob, otherwise.
const scheduleGapTTL = time.Hour

// scheduleGapCache remembers longestScheduleGap results by schedule, time
// zone and starting deadline for scheduleGapTTL.
type scheduleGapCache struct {
	mu sync.Mutex
	m  map[scheduleKey]cachedGap
}

type scheduleKey struct {
	schedule, timeZone string
	hasZone            bool
	deadline           int64
	hasDeadline        bool
}

type cachedGap struct {
	gap scheduleGap
	err error
	at  time.Time
}

// gap is longestScheduleGap(schedule, timeZone, startingDeadlineSeconds,
// now), computed at most once per scheduleGapTTL for the same inputs.
func (c *scheduleGapCache) gap(schedule string, timeZone *string, startingDeadlineSeconds *int64, now time.Time) (scheduleGap, error) {
	k := scheduleKey{schedule: schedule}
	if timeZone != nil {
		k.timeZone, k.hasZone = *timeZone, true
	}
	if startingDeadlineSeconds != nil {
		k.deadline, k.hasDeadline = *startingDeadlineSeconds, true
	}
	c.mu.Lock()
	e, ok := c.m[k]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < scheduleGapTTL && !now.Before(e.at) {
		return e.gap, e.err
	}
	g, err := longestScheduleGap(schedule, timeZone, startingDeadlineSeconds, now)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[scheduleKey]cachedGap)
	}
	if len(c.m) >= 4096 {
		for key, v := range c.m {
			if now.Sub(v.at) >= scheduleGapTTL {
				delete(c.m, key)
			}
		}
	}
	c.m[k] = cachedGap{gap: g, err: err, at: now}
	return g, err
}

// Selects reports whether the policy's selector matches the pod labels of
// the CronJob's job template. An empty or invalid selector selects nothing
// (as in the webhook).
func Selects(p *rgv1.ConsumerRetentionPolicy, cj *batchv1.CronJob) bool {
	sel := cronJobSelector(p)
	return sel != nil && selectsCronJob(sel, cj)
}

// cronJobSelector is the policy's selector, nil when it is empty or
// invalid (it selects nothing).
func cronJobSelector(p *rgv1.ConsumerRetentionPolicy) labels.Selector {
	sel, err := metav1.LabelSelectorAsSelector(&p.Spec.Selector)
	if err != nil || sel.Empty() {
		return nil
	}
	return sel
}

func selectsCronJob(sel labels.Selector, cj *batchv1.CronJob) bool {
	return sel.Matches(labels.Set(cj.Spec.JobTemplate.Spec.Template.Labels))
}

// selectedCronJobs returns the CronJobs in the policy's namespace it
// selects, with their schedules' longest gaps from now (through the
// Gatherer's cache), sorted by name: assemble.Input.CronJobs.
func (g *Gatherer) selectedCronJobs(ctx context.Context, p *rgv1.ConsumerRetentionPolicy, now time.Time) ([]assemble.CronJob, error) {
	reader := g.CronJobs
	if reader == nil {
		reader = g.Resolver.ObjectReader()
	}
	var list batchv1.CronJobList
	// Read-only: no copies of the cached CronJobs (one list per policy per
	// check).
	if err := reader.List(ctx, &list, client.InNamespace(p.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing CronJobs: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	// The selector is converted once per check, not once per CronJob.
	sel := cronJobSelector(p)
	if sel == nil {
		return nil, nil
	}
	var out []assemble.CronJob
	for i := range list.Items {
		cj := &list.Items[i]
		if !selectsCronJob(sel, cj) {
			continue
		}
		c := assemble.CronJob{Name: cj.Name, Schedule: cj.Spec.Schedule, Suspended: ptr.Deref(cj.Spec.Suspend, false)}
		if cj.Spec.TimeZone != nil {
			c.TimeZone = *cj.Spec.TimeZone
		}
		if !c.Suspended {
			c.Gap, c.Err = g.schedules.gap(cj.Spec.Schedule, cj.Spec.TimeZone, cj.Spec.StartingDeadlineSeconds, now)
		}
		out = append(out, c)
	}
	if len(out) > 1 {
		slices.SortFunc(out, func(a, b assemble.CronJob) int { return strings.Compare(a.Name, b.Name) })
	}
	return out, nil
}
