package apachekafka_test

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
)

// TestBrokerServesAndLeavesNothingBehind starts each assembled line, writes
// and reads records through it, and checks that when the test that started
// it ends no JVM and no folder is left on the machine.
func TestBrokerServesAndLeavesNothingBehind(t *testing.T) {
	for _, d := range apachekafka.Dists(t) {
		t.Run(d.Line(), func(t *testing.T) {
			var (
				pid int
				dir string
			)
			t.Run("serve", func(t *testing.T) {
				b := apachekafka.Start(t, d)
				pid, dir = b.Nodes[0].PID(), b.Dir
				b.CreateTopic(t, "orders", 2, nil)
				b.ProduceTo(t, "orders", 1, 5)
				cl := b.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
					"orders": {1: kgo.NewOffset().AtStart()},
				}))
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				got := 0
				for got < 5 && ctx.Err() == nil {
					got += cl.PollFetches(ctx).NumRecords()
				}
				if got != 5 {
					t.Fatalf("read %d records back from Apache Kafka %s, want 5", got, d.Version)
				}
				md, err := b.Admin(t).BrokerMetadata(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(md.Brokers) != 1 {
					t.Fatalf("metadata lists %d brokers, want 1", len(md.Brokers))
				}
			})
			if pid == 0 {
				t.Fatal("the broker never ran")
			}
			if err := syscall.Kill(pid, 0); err == nil {
				t.Errorf("the JVM (pid %d) of Apache Kafka %s is still running after its test ended", pid, d.Version)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("the broker's folder %s is still there after its test ended (stat: %v)", dir, err)
			}
		})
	}
}
