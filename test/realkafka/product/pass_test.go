package product

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"k8s.io/apimachinery/pkg/types"

	"github.com/retentionguard/retention-guard/internal/cli"
	"github.com/retentionguard/retention-guard/internal/coalesce"
	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Seed 003's clock for groups that commit without joining (Flink, Spark,
// assign(): simple groups): each committed offset expires
// offsets.retention.minutes after its own last commit, so the proof dates
// every commit by the record before it. Many topics on one broker, each
// partition written in one batch of 1,400 records (a busy, lingering
// producer), one simple group per topic that committed just now, lagging
// (offset 41) or caught up: one pass of the manager (the Coalescer shares
// one observation among every policy of the cluster) proves every group,
// as `check` proves each alone. Before the observer re-asked the partitions
// a broker skips (their batch larger than the few bytes asked, not first in
// the response), every group but the first stayed Unknown
// (OffsetsMayExpireBeforeWindow) on both lines.
func TestManagerPassProvesSimpleGroupsThatCommittedJustNow(t *testing.T) {
	eachLine(t, func(t *testing.T, b *apachekafka.Broker) {
		const topics, partitions, perPartition = 5, 3, 1400
		var recs []*kgo.Record
		var targets []kafka.Target
		for i := range topics {
			topic := fmt.Sprintf("clicks-%d", i)
			// Simple groups' commits are dated by the record before them
			// less message.timestamp.after.max.ms: a 3.x user bounds it on
			// the topic (unbounded by default before 4.0, 1 h from 4.0),
			// or nothing dates the commit.
			b.CreateTopic(t, topic, partitions, map[string]string{"message.timestamp.after.max.ms": "3600000"})
			for p := range int32(partitions) {
				recs = append(recs, records(topic, p, perPartition)...)
			}
			targets = append(targets, kafka.Target{Group: "flink-" + topic, Topics: []string{topic}})
		}
		produceBatched(t, b, recs...)
		for i, tg := range targets {
			committed := int64(41)
			if i%2 == 1 {
				committed = perPartition // caught up
			}
			b.CommitOffsets(t, tg.Group, tg.Topics[0], map[int32]int64{0: committed, 1: committed, 2: committed})
		}

		obs := managerPass(t, kafka.Connection{BootstrapServers: b.Addrs()}, targets)
		now := time.Now()
		for i, ob := range obs {
			if len(ob.Failures) > 0 {
				t.Fatalf("%s: failures %+v", ob.Group.ID, ob.Failures)
			}
			if g := ob.Group; g.Protocol != proof.ProtocolClassic || g.ProtocolType != "" {
				t.Errorf("%s = %+v, want a simple group (classic, no protocol type)", g.ID, g)
			}
			for _, to := range ob.Topics {
				for _, po := range to.Partitions {
					if po.PrecedingTimestamp.IsZero() || now.Sub(po.PrecedingTimestamp) > time.Hour {
						t.Errorf("%s %s/%d committed %d: dated by %v, want the record before it, written a moment ago",
							ob.Group.ID, to.Name, po.Partition, po.Committed, po.PrecedingTimestamp)
					}
				}
			}
			res := proof.Evaluate(ob, proof.Policy{GroupID: targets[i].Group, Topics: targets[i].Topics, RecoveryWindow: 72 * time.Hour}, now)
			if res.Verdict != proof.Proven {
				t.Errorf("the manager's pass: %s committed just now is %s %v, want Proven", targets[i].Group, res.Verdict, res.Violations)
			}
			// The same state through check.
			code, cr := check(t, b, "--group", targets[i].Group, "--topic", targets[i].Topics[0], "--recovery-window", "72h")
			if code != cli.ExitProven {
				t.Errorf("check: %s exit %d %s %v, want 0 Proven", targets[i].Group, code, cr.Verdict, cr.reasons())
			}
		}
	})
}

// managerPass observes every target the way the manager does: each
// policy asks the Coalescer, which lingers and runs one batched pass of
// kafka.Observer for all of them, then serves each its observation.
func managerPass(t *testing.T, conn kafka.Connection, targets []kafka.Target) []proof.Observation {
	t.Helper()
	o := kafka.NewObserver()
	t.Cleanup(o.Close)
	c := coalesce.New(o, coalesce.Options{Linger: 500 * time.Millisecond, PassTimeout: 30 * time.Second})
	t.Cleanup(c.Close)
	var mu sync.Mutex
	notified := map[types.NamespacedName]bool{}
	done := make(chan struct{})
	c.SetNotify(func(owner types.NamespacedName) {
		mu.Lock()
		defer mu.Unlock()
		notified[owner] = true
		if len(notified) == len(targets) {
			close(done)
		}
	})
	owner := func(i int) types.NamespacedName {
		return types.NamespacedName{Namespace: "product", Name: fmt.Sprintf("policy-%d", i)}
	}
	for i, tg := range targets {
		if _, _, fresh := c.Request(owner(i), conn, tg, time.Minute); fresh {
			t.Fatalf("policy %d: observed before any pass", i)
		}
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the pass did not complete: %d of %d policies notified", len(notified), len(targets))
	}
	var out []proof.Observation
	for i, tg := range targets {
		ob, _, fresh := c.Request(owner(i), conn, tg, time.Minute)
		if !fresh {
			t.Fatalf("policy %d: no observation after its pass", i)
		}
		out = append(out, ob)
	}
	return out
}
