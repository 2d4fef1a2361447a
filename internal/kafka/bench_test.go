package kafka

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// BenchmarkObserve200Topics50Groups observes 50 groups, each on 4 of 200
// topics of 12 partitions (2,400 partitions, every one with a committed
// offset below its log end, so record timestamps are fetched too) on a
// 3-broker kfake cluster, in one pass per iteration. It reports the Kafka
// requests per pass next to the wall time.
func BenchmarkObserve200Topics50Groups(b *testing.B) {
	c := kafkatest.NewCluster(b, kafkatest.WithBrokers(3))
	targets := scenario(b, c, "bench", 200, 12, 50)

	var requests atomic.Int64
	o := NewObserver(
		WithRequestHook(func(string, time.Duration, error) { requests.Add(1) }),
		WithTimeouts(time.Second, 5*time.Second, 5*time.Second),
	)
	defer o.Close()
	conn := Connection{BootstrapServers: c.Addrs}
	ctx := context.Background()

	check := func() {
		for _, ob := range o.Observe(ctx, conn, targets) {
			if len(ob.Failures) > 0 {
				b.Fatalf("%s: %s", ob.Group.ID, describeFailures(ob.Failures))
			}
		}
	}
	check() // connections, coordinators, API versions
	requests.Store(0)
	b.ResetTimer()
	for range b.N {
		o.Observe(ctx, conn, targets)
	}
	b.StopTimer()
	b.ReportMetric(float64(requests.Load())/float64(b.N), "requests/op")
	b.ReportMetric(2400, "partitions")
	check()
}

// BenchmarkPassKeptForItsTargets measures what a cache of a pass's
// targets keeps (issue 34, the first proofs' peak): 500 groups, each on 2
// topics of 12 partitions as make bench-scale's (12,000 partitions, each
// with a committed offset below its log end), observed in one pass per
// iteration. kept-B/partition is the heap the delivered Observeds keep
// (the pass itself); built-B/partition the heap of every target's
// observation built and kept instead, as the Coalescer kept them before.
func BenchmarkPassKeptForItsTargets(b *testing.B) {
	const groups, partitions = 500, 12
	c := kafkatest.NewCluster(b, kafkatest.WithBrokers(3))
	targets := scenario(b, c, "kept", 2*groups, partitions, groups)
	o := NewObserver(WithTimeouts(time.Second, 10*time.Second, 10*time.Second))
	defer o.Close()
	conn := Connection{BootstrapServers: c.Addrs}
	ctx := context.Background()
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	observe := func() []Observed {
		out := make([]Observed, len(targets))
		o.ObserveCluster(ctx, conn, ClusterRequest{Targets: targets, Deliver: func(i int, obs Observed) { out[i] = obs }})
		return out
	}
	for _, obs := range observe() { // connections, coordinators, API versions
		if f := obs.Observation().Failures; len(f) > 0 {
			b.Fatalf("%s", describeFailures(f))
		}
	}
	var kept, built float64
	b.ResetTimer()
	for range b.N {
		before := heap()
		observed := observe()
		kept += float64(heap() - before)
		observations := make([]proof.Observation, len(observed))
		for i, obs := range observed {
			observations[i] = obs.Observation()
		}
		observed = nil
		built += float64(heap() - before)
		runtime.KeepAlive(observed)
		runtime.KeepAlive(observations)
	}
	b.StopTimer()
	n := float64(b.N) * 2 * groups * partitions
	b.ReportMetric(kept/n, "kept-B/partition")
	b.ReportMetric(built/n, "built-B/partition")
}
