package kafka

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
)

// What one cluster's passes read of __consumer_offsets is shared: a live
// check at a start runs beside the periodic pass, and two connections that
// differ only in credentials share the cluster's log. A result must never
// hold the shared maps another pass goes on writing: Go kills the process
// on a concurrent map read and write, the webhook and the reconciler with
// it. Run under -race (make test does), three observers of one group read
// while commits keep being logged; without -race the assertions still
// check each exact time is one the coordinator wrote. (Seed 003: the
// exact commit times are what dates an Empty group's offsets.)
func TestObserveOffsetsTopicConcurrentPasses(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	c.CreateOffsetsTopic(t, 3)
	c.CreateTopic(t, "clicks", 4, nil)
	for p := range int32(4) {
		c.ProduceTo(t, "clicks", p, 200)
	}
	c.CommitOffsets(t, "flink-clicks", "clicks", map[int32]int64{0: 1, 1: 1, 2: 1, 3: 1})
	c.LogCommits(t, "flink-clicks")

	o, _ := newTestObserver(t)
	conn := Connection{BootstrapServers: c.Addrs}
	target := Target{Group: "flink-clicks", Topics: []string{"clicks"}, ReadOffsetsTopic: true}

	var (
		mu      sync.Mutex
		written = map[int64]bool{} // commit times logged, in ms
		stop    = make(chan struct{})
		wg      sync.WaitGroup
		bad     []string
		passes  int
	)
	record := func() {
		mu.Lock()
		defer mu.Unlock()
		for _, commit := range c.GroupInfo("flink-clicks").Commits["clicks"] {
			written[commit.At.UnixMilli()] = true
		}
	}
	record()
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				obs := o.Observe(ctx, conn, []Target{target})
				cancel()
				mu.Lock()
				passes++
				for _, to := range obs[0].Topics {
					for _, po := range to.Partitions {
						if !po.LastCommit.IsZero() && !written[po.LastCommit.UnixMilli()] {
							bad = append(bad, po.LastCommit.String())
						}
					}
				}
				mu.Unlock()
			}
		}()
	}
	deadline := time.Now().Add(3 * time.Second)
	for off := int64(2); time.Now().Before(deadline) && off < 200; off++ {
		c.CommitOffsets(t, "flink-clicks", "clicks", map[int32]int64{0: off, 1: off, 2: off, 3: off})
		record() // before the log holds it: an observer may read it at once
		c.LogCommits(t, "flink-clicks")
	}
	close(stop)
	wg.Wait()
	if passes == 0 {
		t.Fatal("no pass finished")
	}
	if len(bad) > 0 {
		t.Errorf("exact commit times the coordinator never wrote: %v", bad)
	}
}
