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
// Both group protocols (KAFKA_GROUP_PROTOCOL): classic and consumer
// (KIP-848; a preview the harness turns on in 3.9).
func TestJavaConsumerResumesAtItsCommit(t *testing.T) {
	t.Parallel()
	for _, d := range apachekafka.Dists(t) {
		for _, protocol := range []string{"classic", "consumer"} {
			t.Run(d.Line()+"/"+protocol, func(t *testing.T) {
				t.Parallel()
				javaResumesAtItsCommit(t, d, protocol)
			})
		}
	}
}

func javaResumesAtItsCommit(t *testing.T, d apachekafka.Dist, protocol string) {
	b := apachekafka.Start(t, d)
	b.CreateTopic(t, "orders", 1, nil)
	b.ProduceTo(t, "orders", 0, 5)
	env := ConsumerEnv{Brokers: b.Addrs(), Group: "billing", Topics: []string{"orders"},
		Reset: "earliest", Protocol: protocol, AutoCommit: "false", Idle: 3 * time.Second}

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
	if s := second.All("started"); len(s) != 1 || s[0].Str("groupProtocol") != protocol {
		t.Fatalf("the client did not run the %s protocol:\n%s", protocol, second)
	}
}
