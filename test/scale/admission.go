package main

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// admissionLoad sends template changes of running consumers through the
// API server, as dry runs: the API server calls the webhook exactly as for
// a real rollout (sideEffects NoneOnDryRun) and nothing changes. Each
// targets the Deployment of a policy that already has a Proven proof from
// this run, so the webhook judges it from the fresh status proof (a
// template change of running consumers is not a start, which is always
// judged live). The handler's own duration is read from the manager's
// retentionguard_admission_duration_seconds.
type admissionLoad struct {
	sent, failed atomic.Int64
	firstErr     atomic.Value // string
}

// run sends rate requests per second until ctx ends.
func (a *admissionLoad) run(ctx context.Context, c client.Client, s shape, pick func() int, rate float64) {
	if rate <= 0 {
		return
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	var n atomic.Int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		g := pick()
		if g < 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace(g), Name: policyName(g)}}
			patch := []byte(`{"spec":{"template":{"metadata":{"annotations":{"scale-bench/rev":"` +
				strconv.FormatInt(n.Add(1), 10) + `"}}}}}`)
			err := c.Patch(ctx, d, client.RawPatch(types.MergePatchType, patch), client.DryRunAll)
			if ctx.Err() != nil {
				return
			}
			a.sent.Add(1)
			if err != nil {
				a.failed.Add(1)
				a.firstErr.CompareAndSwap(nil, err.Error())
			}
		}()
	}
}
