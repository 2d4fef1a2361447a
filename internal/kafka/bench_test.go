package kafka

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
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
