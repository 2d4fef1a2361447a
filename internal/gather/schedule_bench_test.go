package gather

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// cronJobCache is the manager's CronJob cache as controller-runtime builds
// it (cache.New: the same informer map, indexer and CacheReader.List),
// fed by an in-memory list and watch instead of an API server. The
// returned watcher delivers changes to the informer as the API server's
// watch would.
func cronJobCache(tb testing.TB, cronJobs []batchv1.CronJob) (cache.Cache, *watch.FakeWatcher) {
	tb.Helper()
	scheme := runtime.NewScheme()
	if err := batchv1.AddToScheme(scheme); err != nil {
		tb.Fatal(err)
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(batchv1.SchemeGroupVersion.WithKind("CronJob"), meta.RESTScopeNamespace)
	w := watch.NewFakeWithChanSize(16, false)
	c, err := cache.New(&rest.Config{Host: "http://127.0.0.1:1"}, cache.Options{
		Scheme: scheme, Mapper: mapper, HTTPClient: http.DefaultClient,
		NewInformer: func(_ toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
			lw := &toolscache.ListWatch{
				ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
					return &batchv1.CronJobList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: cronJobs}, nil
				},
				WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return w, nil },
			}
			return toolscache.NewSharedIndexInformer(noWatchList{lw}, obj, resync, idx)
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	if _, err := c.GetInformer(ctx, &batchv1.CronJob{}); err != nil {
		tb.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		tb.Fatal("the CronJob cache did not sync")
	}
	return c, w
}

// noWatchList lists then watches: the in-memory watch sends no initial
// events.
type noWatchList struct{ *toolscache.ListWatch }

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

// benchCronJob is a reduced CronJob (controllers' reduceCronJob) whose job
// template runs pods labelled app.
func benchCronJob(ns, name, app, schedule string) batchv1.CronJob {
	cj := batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "/" + name), ResourceVersion: "1", Generation: 1},
		Spec:       batchv1.CronJobSpec{Schedule: schedule, StartingDeadlineSeconds: ptr.To[int64](300)},
	}
	cj.Spec.JobTemplate.Spec.Template.Labels = map[string]string{"app": app, "team": ns}
	return cj
}

func benchPolicy(ns, name string) *rgv1.ConsumerRetentionPolicy {
	p := &rgv1.ConsumerRetentionPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "/" + name), Generation: 1}}
	p.Spec.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
	return p
}

// BenchmarkSelectedCronJobs is one policy check's CronJob selection
// (selectedCronJobs) at issue 34's 20,000-policy step: 20,000 policies,
// 40 per namespace in 500 namespaces, the CronJobs in the manager's
// informer cache. One op is one policy's check; the policies are checked
// in turn, as every check interval does.
//
//   - sparse: the usual namespace has no CronJob; one in ten has three, one
//     of them the batch consumer of a policy there.
//   - bench-scale: test/scale's objects, ten CronJobs a namespace (5,000),
//     every fifth run by a policy's group.
func BenchmarkSelectedCronJobs(b *testing.B) {
	const namespaces, perNamespace = 500, 40
	schedules := []string{"0 2 * * *", "*/15 * * * *", "30 3 * * 1", "0 */6 * * *", "15 1 1 * *"}
	var policies []*rgv1.ConsumerRetentionPolicy
	for i := range namespaces * perNamespace {
		policies = append(policies, benchPolicy(fmt.Sprintf("team-%03d", i%namespaces), fmt.Sprintf("consumer-%05d", i)))
	}
	shapes := []struct {
		name     string
		cronJobs func() []batchv1.CronJob
	}{
		{"sparse", func() []batchv1.CronJob {
			var out []batchv1.CronJob
			for n := 0; n < namespaces; n += 10 {
				ns := fmt.Sprintf("team-%03d", n)
				for j := range 3 {
					app := fmt.Sprintf("batch-%03d-%d", n, j)
					if j == 0 {
						app = fmt.Sprintf("consumer-%05d", n) // policy n lives in team-n
					}
					out = append(out, benchCronJob(ns, fmt.Sprintf("batch-%d", j), app, schedules[(n/10+j)%len(schedules)]))
				}
			}
			return out
		}},
		{"bench-scale", func() []batchv1.CronJob {
			var out []batchv1.CronJob
			for g := range 5000 {
				name, app := fmt.Sprintf("batch-%05d", g), fmt.Sprintf("batch-%05d", g)
				if g%5 == 0 {
					app = fmt.Sprintf("consumer-%05d", g)
				}
				out = append(out, benchCronJob(fmt.Sprintf("team-%03d", g%namespaces), name, app, schedules[(g/5)%len(schedules)]))
			}
			return out
		}},
	}
	now := time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)
	for _, s := range shapes {
		b.Run(s.name, func(b *testing.B) {
			c, _ := cronJobCache(b, s.cronJobs())
			g := &Gatherer{CronJobs: c}
			ctx := context.Background()
			selected := 0
			for _, p := range policies { // warm the schedule gaps, count the selections
				got, err := g.selectedCronJobs(ctx, p, now)
				if err != nil {
					b.Fatal(err)
				}
				selected += len(got)
			}
			if selected == 0 {
				b.Fatal("no policy selects a CronJob")
			}
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				if _, err := g.selectedCronJobs(ctx, policies[i], now); err != nil {
					b.Fatal(err)
				}
				if i++; i == len(policies) {
					i = 0
				}
			}
		})
	}
}
