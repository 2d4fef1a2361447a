package gather

import (
	"context"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestSelectedCronJobsFollowTheCache: a CronJob added, its schedule
// changed, suspended, its labels changed so it leaves the selector, and
// removed, each is seen at the next check through the manager's informer
// cache (seed 003: the settlement consumer is a CronJob). An invalid or
// empty selector selects nothing.
func TestSelectedCronJobsFollowTheCache(t *testing.T) {
	other := benchCronJob("team-a", "report", "report", "0 3 * * *")
	c, w := cronJobCache(t, []batchv1.CronJob{other})
	g := &Gatherer{CronJobs: c}
	p := benchPolicy("team-a", "settlement")
	ctx := context.Background()
	now := time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)
	// after delivers an event and waits until the cache holds its
	// resourceVersion (or the object is gone).
	after := func(send func(*batchv1.CronJob), cj batchv1.CronJob, gone bool) {
		t.Helper()
		send(cj.DeepCopy())
		for {
			var got batchv1.CronJob
			err := c.Get(ctx, client.ObjectKeyFromObject(&cj), &got)
			if gone && err != nil || !gone && err == nil && got.ResourceVersion == cj.ResourceVersion {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	check := func(step string, want ...string) {
		t.Helper()
		got, err := g.selectedCronJobs(ctx, p, now)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		var names []string
		for _, cj := range got {
			names = append(names, cj.Name+" "+cj.Schedule+map[bool]string{true: " suspended"}[cj.Suspended])
		}
		if !slices.Equal(names, want) {
			t.Fatalf("%s: selected %q, want %q", step, names, want)
		}
	}
	check("no CronJob of the policy")

	cj := benchCronJob("team-a", "settle", "settlement", "0 2 * * *")
	after(func(o *batchv1.CronJob) { w.Add(o) }, cj, false)
	check("added", "settle 0 2 * * *")

	cj.Spec.Schedule, cj.ResourceVersion = "0 2 * * 1", "2"
	after(func(o *batchv1.CronJob) { w.Modify(o) }, cj, false)
	check("schedule changed", "settle 0 2 * * 1")

	cj.Spec.Suspend, cj.ResourceVersion = ptr.To(true), "3"
	after(func(o *batchv1.CronJob) { w.Modify(o) }, cj, false)
	check("suspended", "settle 0 2 * * 1 suspended")

	cj.Spec.Suspend, cj.ResourceVersion = nil, "4"
	cj.Spec.JobTemplate.Spec.Template.Labels = map[string]string{"app": "settlement-v2"}
	after(func(o *batchv1.CronJob) { w.Modify(o) }, cj, false)
	check("labels leave the selector")

	cj.Spec.JobTemplate.Spec.Template.Labels, cj.ResourceVersion = map[string]string{"app": "settlement"}, "5"
	after(func(o *batchv1.CronJob) { w.Modify(o) }, cj, false)
	check("labels back", "settle 0 2 * * 1")
	p.Spec.Selector.MatchLabels = nil
	check("empty selector")
	p.Spec.Selector.MatchLabels = map[string]string{"app": "settlement", "": "x"}
	check("invalid selector")
	p.Spec.Selector.MatchLabels = map[string]string{"app": "settlement"}

	after(func(o *batchv1.CronJob) { w.Delete(o) }, cj, true)
	check("removed")
}
