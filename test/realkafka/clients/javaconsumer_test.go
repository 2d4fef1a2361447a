package clients

import (
	"testing"
	"time"

	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
)

// TestJavaConsumerResumesAtItsCommit pins the Java consumer's interface
// (test/javaconsumer) on each broker line: it logs "assigned" with the
// group's committed offset, consumes, commits on exit, and a second run
// resumes exactly at that commit (reset false). The seeds' replays below
// read its lines; this is their control: nothing skipped without retention.
func TestJavaConsumerResumesAtItsCommit(t *testing.T) {
	for _, d := range apachekafka.Dists(t) {
		t.Run(d.Line(), func(t *testing.T) {
			b := apachekafka.Start(t, d)
			b.CreateTopic(t, "orders", 1, nil)
			b.ProduceTo(t, "orders", 0, 5)
			env := ConsumerEnv{Brokers: b.Addrs(), Group: "billing", Topics: []string{"orders"},
				Reset: "earliest", AutoCommit: "false", Idle: 3 * time.Second}

			first := Java(t, env)
			if first.Code != 0 {
				t.Fatalf("first run: want exit 0:\n%s", first)
			}
			if a := first.One(t, "assigned", "orders", 0); a.Int("committed") != -1 {
				t.Fatalf("first run: assigned with committed %d, want -1 (a new group):\n%s", a.Int("committed"), first)
			}
			fr := first.One(t, "first record", "orders", 0)
			if fr.Int("offset") != 0 || !fr.Bool("reset") || fr.Str("resetCause") != "NoCommittedOffset" {
				t.Fatalf("first run: first record %v, want offset 0 reset by NoCommittedOffset:\n%s", fr, first)
			}
			if n := first.Consumed("orders", 0); n != 5 {
				t.Fatalf("first run consumed %d records, want 5:\n%s", n, first)
			}
			if c := first.Committed("orders", 0); c != 5 {
				t.Fatalf("first run committed %d, want 5:\n%s", c, first)
			}

			b.ProduceTo(t, "orders", 0, 3)
			second := Java(t, env)
			if second.Code != 0 {
				t.Fatalf("second run: want exit 0:\n%s", second)
			}
			if a := second.One(t, "assigned", "orders", 0); a.Int("committed") != 5 {
				t.Fatalf("second run: assigned with committed %d, want 5:\n%s", a.Int("committed"), second)
			}
			fr = second.One(t, "first record", "orders", 0)
			if fr.Int("offset") != 5 || fr.Bool("reset") || fr.Int("skipped") != 0 {
				t.Fatalf("second run: first record %v, want offset 5, no reset:\n%s", fr, second)
			}
			if n := second.Consumed("orders", 0); n != 3 {
				t.Fatalf("second run consumed %d records, want 3:\n%s", n, second)
			}
		})
	}
}
