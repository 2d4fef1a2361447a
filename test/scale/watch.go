package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// proofTracker watches every policy and notes when each first shows a
// proof written by the manager run that started at since (the statuses
// were cleared before it started), for the current generation.
type proofTracker struct {
	since time.Time
	want  int
	// rollable: policies below this number have a Deployment to roll
	// out (the cluster has fewer Deployments than the last step's
	// policies: policy g's consumers are Deployment g only while g <
	// Deployments).
	rollable int

	mu       sync.Mutex
	at       map[string]time.Time // when each policy first had its proof (bench clock)
	verdicts map[string]rgv1.Verdict
	proven   []int // policy numbers with a Proven proof, for the admission load
	all      chan struct{}
	allAt    time.Time

	// groupOf, when set, names the group (the shard) of policy number g;
	// groupWant is how many policies each group holds, and groupAt when
	// each group's last first proof came.
	groupOf   func(g int) string
	groupWant map[string]int
	groupN    map[string]int
	groupAt   map[string]time.Time
}

func newProofTracker(since time.Time, want, rollable int) *proofTracker {
	return &proofTracker{since: since, want: want, rollable: rollable, at: map[string]time.Time{}, verdicts: map[string]rgv1.Verdict{}, all: make(chan struct{})}
}

// run lists and watches policies until ctx ends, starting over when a
// watch closes.
func (t *proofTracker) run(ctx context.Context, c client.WithWatch) {
	for ctx.Err() == nil {
		var list rgv1.ConsumerRetentionPolicyList
		if err := c.List(ctx, &list); err != nil {
			sleep(ctx, time.Second)
			continue
		}
		for i := range list.Items {
			t.note(&list.Items[i])
		}
		w, err := c.Watch(ctx, &rgv1.ConsumerRetentionPolicyList{}, &client.ListOptions{Raw: &metav1.ListOptions{
			ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true}})
		if err != nil {
			sleep(ctx, time.Second)
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			if p, ok := ev.Object.(*rgv1.ConsumerRetentionPolicy); ok {
				t.note(p)
			}
		}
		w.Stop()
	}
}

func (t *proofTracker) note(p *rgv1.ConsumerRetentionPolicy) {
	pr := p.Status.Proof
	if pr == nil || p.Status.ObservedGeneration != p.Generation || pr.CheckedAt.Time.Before(t.since.Truncate(time.Second)) {
		return
	}
	key := p.Namespace + "/" + p.Name
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, seen := t.at[key]; !seen {
		t.at[key] = time.Now()
		var g int
		_, err := fmt.Sscanf(p.Name, "consumer-%d", &g)
		if pr.Verdict == rgv1.VerdictProven && err == nil && g < t.rollable {
			t.proven = append(t.proven, g)
		}
		if t.groupOf != nil && err == nil {
			t.noteGroup(t.groupOf(g), t.at[key])
		}
	}
	t.verdicts[key] = pr.Verdict
	if len(t.at) >= t.want && t.allAt.IsZero() {
		t.allAt = time.Now()
		close(t.all)
	}
}

// noteGroup counts one more first proof in group at now (t.mu held).
func (t *proofTracker) noteGroup(group string, now time.Time) {
	if t.groupN == nil {
		t.groupN, t.groupAt = map[string]int{}, map[string]time.Time{}
	}
	t.groupN[group]++
	if t.groupN[group] == t.groupWant[group] {
		t.groupAt[group] = now
	}
}

// groupDone returns when every policy of group had its first proof.
func (t *proofTracker) groupDone(group string) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.groupAt[group]
	return at, ok
}

// counts returns how many policies have a proof, by verdict.
func (t *proofTracker) counts() (int, map[rgv1.Verdict]int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	by := map[rgv1.Verdict]int{}
	for _, v := range t.verdicts {
		by[v]++
	}
	return len(t.at), by
}

// pick returns a random policy with a Proven proof and a Deployment, or -1.
func (t *proofTracker) pick() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.proven) == 0 {
		return -1
	}
	return t.proven[rand.IntN(len(t.proven))]
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// untilProven runs the tracker and the admission load (both ending with
// stepCtx) until every policy is proven, -proven-timeout passes or ctx
// ends, then stops the load. It returns the load (its failures count in
// the step) and the time from the tracker's start to the last proof: 0
// when the timeout came first.
func (t *proofTracker) untilProven(ctx, stepCtx context.Context, c client.WithWatch, o options) (*admissionLoad, time.Duration, error) {
	go t.run(stepCtx, c)
	load := &admissionLoad{}
	loadCtx, stopLoad := context.WithCancel(stepCtx)
	defer stopLoad()
	go load.run(loadCtx, c, o.shape, t.pick, o.admissionRate)
	select {
	case <-t.all:
		return load, t.allAt.Sub(t.since), nil
	case <-time.After(o.provenTimeout):
		return load, 0, nil
	case <-ctx.Done():
		return load, 0, ctx.Err()
	}
}
