package clients

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// TestPartitionAddedNeedsASeekForNone (issue 22): a partition added to a
// topic has no committed offset and log start 0. The proof calls that a
// fresh start (nothing expired) — true for earliest, but the consumer
// clause holds the client to none, and the Java client with none throws
// NoOffsetForPartitionException on it. With spec.consumer the product
// says the group needs a seek (WarningSeekRequired); after the seek it
// asks for (offsets committed at the log start) the none consumer starts
// and reads the new partition from 0.
func TestPartitionAddedNeedsASeekForNone(t *testing.T) {
	t.Parallel()
	for _, d := range apachekafka.Dists(t) {
		t.Run(d.Line(), func(t *testing.T) {
			t.Parallel()
			const group, topic = "fanout", "orders"
			b := apachekafka.Start(t, d, asDeployed(d)...)
			b.CreateTopic(t, topic, 1, nil)
			b.ProduceTo(t, topic, 0, 3)
			env := ConsumerEnv{Brokers: b.Addrs(), Group: group, Topics: []string{topic},
				AutoCommit: "false", Idle: 3 * time.Second}
			first := env
			first.Reset = "earliest" // the group's first start
			if run := Java(t, first); run.Code != 0 || run.Committed(topic, 0) != 3 {
				t.Fatalf("the group's first run: want exit 0 and offset 3 committed:\n%s", run)
			}

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := b.Admin(t).CreatePartitions(ctx, 1, topic); err != nil {
				t.Fatalf("adding a partition to %s: %v", topic, err)
			}
			poll(t, "the new partition appearing in metadata", func() bool {
				td, err := b.Admin(t).ListTopics(ctx, topic)
				return err == nil && len(td[topic].Partitions) == 2
			})
			// A new client: the helpers' shared one still has the old metadata.
			producer := b.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
			for range 2 {
				if err := producer.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 1, Value: []byte("new")}).FirstErr(); err != nil {
					t.Fatalf("producing to %s[1]: %v", topic, err)
				}
			}

			// The product, with spec.consumer (ResetFailsLoudly), reading
			// the Empty group's Empty time from __consumer_offsets (one
			// observation cannot know it otherwise: Unknown).
			o := kafka.NewObserver()
			defer o.Close()
			obs := o.Observe(ctx, kafka.Connection{BootstrapServers: b.Addrs()}, []kafka.Target{{Group: group, Topics: []string{topic}, ReadOffsetsTopic: true}})[0]
			pol := proof.Policy{UID: "issue-22", GroupID: group, Topics: []string{topic}, RecoveryWindow: 10 * time.Minute, ResetFailsLoudly: true}
			res := proof.Evaluate(obs, pol, obs.ObservedAt)
			if res.Verdict != proof.Proven {
				t.Fatalf("verdict %s, want Proven (nothing expired): %+v", res.Verdict, res.Violations)
			}
			var seek string
			for _, w := range res.Warnings {
				if w.Type == proof.WarningSeekRequired {
					seek = w.Message
				}
			}
			if !strings.Contains(seek, topic+"[1]") || strings.Contains(seek, topic+"[0]") {
				t.Fatalf("the proof does not say %s[1] (and only it) needs a seek: %q (warnings %+v)", topic, seek, res.Warnings)
			}
			t.Logf("the product's warning: %s", seek)

			none := env
			none.Reset = "none"
			run := Java(t, none)
			if run.Code != 1 {
				t.Fatalf("none with a partition without a committed offset: want exit 1:\n%s", run)
			}
			if f := run.All("fatal"); len(f) != 1 || f[0].Str("exception") != "NoOffsetForPartitionException" || !strings.Contains(f[0].Str("error"), topic+"-1") {
				t.Fatalf("none: want NoOffsetForPartitionException naming %s-1:\n%s", topic, run)
			}

			// The seek the warning asks for: the log start committed.
			b.Commit(t, group, topic, 1, 0)
			run = Java(t, none)
			if run.Code != 0 {
				t.Fatalf("none after the seek: want exit 0:\n%s", run)
			}
			fr := run.One(t, "first record", topic, 1)
			if fr.Int("offset") != 0 || fr.Bool("reset") || run.Consumed(topic, 1) != 2 {
				t.Fatalf("none after the seek: first record %v, want offset 0 without a reset and 2 records:\n%s", fr, run)
			}
		})
	}
}
