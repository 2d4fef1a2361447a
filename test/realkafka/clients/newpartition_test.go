package clients

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Issue 33 item 4, seed 000 (a missing committed offset not told apart
// from a fresh start): these live beside the Java consumer's harness
// rather than in test/realkafka/proof, which cannot reach it.

// addPartitionAndWrite adds a second partition to topic and writes n
// records to it, as a producer does while the group's consumers are down.
func addPartitionAndWrite(t *testing.T, b *apachekafka.Broker, topic string, n int) {
	t.Helper()
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
	for range n {
		if err := producer.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 1, Value: []byte("new")}).FirstErr(); err != nil {
			t.Fatalf("producing to %s[1]: %v", topic, err)
		}
	}
}

// judge observes group on topic and proves it (a 10-minute window).
func judge(t *testing.T, b *apachekafka.Broker, group, topic string, resetFailsLoudly bool) (proof.Observation, proof.Result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o := kafka.NewObserver()
	defer o.Close()
	// Exact times from __consumer_offsets: one observation cannot date an
	// Empty classic group's Empty time otherwise (Unknown for that alone).
	obs := o.Observe(ctx, kafka.Connection{BootstrapServers: b.Addrs()},
		[]kafka.Target{{Group: group, Topics: []string{topic}, ReadOffsetsTopic: true}})[0]
	pol := proof.Policy{UID: "issue-33", GroupID: group, Topics: []string{topic}, RecoveryWindow: 10 * time.Minute,
		ResetFailsLoudly: resetFailsLoudly}
	return obs, proof.Evaluate(obs, pol, obs.ObservedAt)
}

// TestPartitionAddedWhileDownIsSkippedUnderLatest: a classic group read
// orders[0] and stopped; orders[1] was added and written to (2 records)
// while it was down. Before the fix the proof said Proven (no committed
// offset, log start 0: "a fresh group"). The Java consumer with its
// default auto.offset.reset (latest: ConsumerConfig,
// SubscriptionState.resetInitializingPositions) then starts orders[1] at
// its log end and never reads the 2 records. Without the consumer clause
// nothing shows the client's reset: the proof now says Unknown
// (OffsetResetMaySkipRecords, 2 skippedRecords), and the consumer did skip
// them. Both ways out change the verdict: the consumer clause (none: the
// client throws there, TestPartitionAddedNeedsASeekForNone) and a commit
// for the partition (kafka-consumer-groups --reset-offsets --to-earliest),
// after which the same default consumer reads both records. Kafka's
// defaults throughout (AsDeployed).
func TestPartitionAddedWhileDownIsSkippedUnderLatest(t *testing.T) {
	t.Parallel()
	for _, d := range apachekafka.Dists(t) {
		t.Run(d.Line(), func(t *testing.T) {
			t.Parallel()
			const topic = "orders"
			skipping, seeked := "fanout", "fanout-seeked"
			b := apachekafka.Start(t, d, asDeployed(d)...)
			b.CreateTopic(t, topic, 1, nil)
			b.ProduceTo(t, topic, 0, 3)
			env := func(group, reset string) ConsumerEnv {
				return ConsumerEnv{Brokers: b.Addrs(), Group: group, Topics: []string{topic}, Reset: reset,
					AutoCommit: "false", Idle: 3 * time.Second}
			}
			// Each group's first start reads orders[0] and commits 3.
			for _, g := range []string{skipping, seeked} {
				if run := Java(t, env(g, "earliest")); run.Code != 0 || run.Committed(topic, 0) != 3 {
					t.Fatalf("%s's first run: want exit 0 and offset 3 committed:\n%s", g, run)
				}
			}
			addPartitionAndWrite(t, b, topic, 2)

			_, r := judge(t, b, skipping, topic, false)
			if r.Verdict != proof.Unknown || len(r.Violations) != 1 {
				t.Fatalf("on %s, %s[1] added and written while the group was down: %s %v, want Unknown with one violation (was Proven before the fix)",
					d.Version, topic, r.Verdict, reasons(r))
			}
			v := r.Violations[0]
			if v.Reason != proof.ReasonOffsetResetMaySkipRecords || v.Topic != topic || v.Partition != 1 || v.SkippedRecords != 2 {
				t.Fatalf("violation %+v: want %s on %s[1] with 2 skippedRecords", v, proof.ReasonOffsetResetMaySkipRecords, topic)
			}
			for _, s := range []string{topic + "[1]", "--topic " + topic + ":1 --reset-offsets --to-earliest", "spec.consumer"} {
				if !strings.Contains(v.Message, s) {
					t.Errorf("message %q lacks %q: the partition and the way out", v.Message, s)
				}
			}
			t.Logf("the product on %s: %s", d.Version, v.Message)
			// The consumer clause: none throws there instead of skipping.
			if _, held := judge(t, b, skipping, topic, true); held.Verdict != proof.Proven {
				t.Errorf("with the consumer clause (none): %s %v, want Proven (and a seek warning)", held.Verdict, reasons(held))
			}

			// What the Java consumer does with its default reset.
			run := Java(t, env(skipping, ""))
			if run.Code != 0 {
				t.Fatalf("the default consumer: want exit 0:\n%s", run)
			}
			pos := run.One(t, "position", topic, 1)
			if pos.Int("offset") != 2 || pos.Int("committed") != -1 || run.Consumed(topic, 1) != 0 {
				t.Fatalf("the default consumer on %s[1]: position %v, %d records read; want it at the log end 2, none read:\n%s",
					topic, pos, run.Consumed(topic, 1), run)
			}
			t.Logf("on %s the default Java consumer started %s[1] at %d: the 2 records the proof named were skipped",
				d.Version, topic, pos.Int("offset"))

			// The commit way out: the log start committed for orders[1].
			b.Commit(t, seeked, topic, 1, 0)
			if _, r := judge(t, b, seeked, topic, false); r.Verdict != proof.Proven {
				t.Fatalf("after a commit at the log start of %s[1]: %s %v, want Proven", topic, r.Verdict, reasons(r))
			}
			run = Java(t, env(seeked, ""))
			fr := run.One(t, "first record", topic, 1)
			if run.Code != 0 || fr.Int("offset") != 0 || fr.Bool("reset") || run.Consumed(topic, 1) != 2 {
				t.Fatalf("the default consumer after the commit: first record %v, %d records; want offset 0 without a reset and 2 records:\n%s",
					fr, run.Consumed(topic, 1), run)
			}
		})
	}
}

// deleteGroupConfig restores a group config to its default
// (IncrementalAlterConfigs DELETE on the GROUP resource).
func deleteGroupConfig(t *testing.T, b *apachekafka.Broker, group, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Op = key, kmsg.IncrementalAlterConfigOpDelete
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, b.Client(t))
	if err != nil {
		t.Fatalf("deleting %s of group %s: %v", key, group, err)
	}
	for _, r := range resp.Resources {
		if r.ErrorCode != 0 {
			t.Fatalf("deleting %s of group %s: error %d", key, group, r.ErrorCode)
		}
	}
}

// TestSharePartitionAddedWhileDownStartsAtZeroOn44, the share group's
// twin (4.4 only: share groups are on by default from 4.2 and absent from
// 3.9; no broker default changed). A share group that read jobs[0] is
// stopped; jobs[1] is added and written to (2 records). Its
// share.auto.offset.reset is latest, the default (GroupConfig), read by
// the observer with DescribeConfigs on the GROUP resource. Up to 4.3 the
// broker starts a partition without share state there
// (SharePartition.startOffsetDuringInitialization) and skips the 2
// records; from 4.4 the group coordinator starts new partitions of a topic
// the group already knows at 0 (KAFKA-20742,
// GroupMetadataManager.buildInitializeShareGroupStateRequest). The first
// run of this test, with the proof judging by share.auto.offset.reset
// alone, said Violated (ResetToLatestSkipsRecords) and the share consumer
// read both records: a false alarm on 4.4. So the observer tells 4.4 by
// ApiVersions (DeleteGroups v3) and the proof stays Proven, and the share
// consumer reads jobs[1] from 0. (The 4.1–4.3 verdict, Violated with 2
// skippedRecords, is internal/proof's TestUnreadPartitionOfAReadTopic: no
// such broker runs here.)
func TestSharePartitionAddedWhileDownStartsAtZeroOn44(t *testing.T) {
	t.Parallel()
	d := apachekafka.Newest(t)
	if !d.AtLeast(4, 4) {
		t.Fatalf("KAFKA-20742 is in 4.4; the newest line here is %s", d.Version)
	}
	b := apachekafka.Start(t, d)
	const topic, group = "jobs", "workers"
	b.CreateTopic(t, topic, 1, nil)
	b.ProduceTo(t, topic, 0, 3)
	// A share group joins slowly (the share coordinator's first state
	// topic write): a longer idle time.
	env := ConsumerEnv{Brokers: b.Addrs(), Group: group, Topics: []string{topic}, Idle: 20 * time.Second}
	// The group's first start reads jobs[0] from 0 (earliest for that run
	// only), then the group is back on the default.
	setGroupConfig(t, b, group, "share.auto.offset.reset", "earliest")
	if run := JavaShare(t, env); run.Code != 0 || run.Consumed(topic, 0) != 3 {
		t.Fatalf("the group's first run: want exit 0 and the 3 records of %s[0] read:\n%s", topic, run)
	}
	deleteGroupConfig(t, b, group, "share.auto.offset.reset")
	addPartitionAndWrite(t, b, topic, 2)

	obs, r := judge(t, b, group, topic, false)
	g := obs.Group
	if v := g.ShareAutoOffsetReset; g.Protocol != proof.ProtocolShare || !v.Present || v.Value != "latest" || !g.ShareNewPartitionsStartAtZero {
		t.Fatalf("group %+v: want a share group, share.auto.offset.reset latest (the default) read, and new partitions starting at 0 (4.4)", g)
	}
	if po := obs.Topics[0].Partitions[1]; po.Committed != proof.NoOffset || po.LogEnd != 2 {
		t.Fatalf("%s[1] %+v: want no share-partition start offset and 2 records", topic, po)
	}
	if r.Verdict != proof.Proven {
		t.Fatalf("%s[1] added while the share group was down, on 4.4: %s %v, want Proven", topic, r.Verdict, reasons(r))
	}
	// Had the broker been 4.3: the same observation under latest.
	g43 := obs
	g43.Group.ShareNewPartitionsStartAtZero = false
	if r := proof.Evaluate(g43, proof.Policy{UID: "issue-33", GroupID: group, Topics: []string{topic}, RecoveryWindow: 10 * time.Minute},
		obs.ObservedAt); r.Verdict != proof.Violated || len(r.Violations) != 1 ||
		r.Violations[0].Reason != proof.ReasonResetToLatestSkipsRecords || r.Violations[0].SkippedRecords != 2 {
		t.Fatalf("the observation without 4.4's start at 0: %s %v, want Violated %s, 2 skippedRecords", r.Verdict, reasons(r), proof.ReasonResetToLatestSkipsRecords)
	}

	run := JavaShare(t, env)
	if run.Code != 0 || run.Consumed(topic, 1) != 2 {
		t.Fatalf("the share consumer on 4.4 under latest: want exit 0 and the 2 records of %s[1] read:\n%s", topic, run)
	}
}

// reasons lists a result's violations as reason topic[partition].
func reasons(r proof.Result) []string {
	out := make([]string, 0, len(r.Violations))
	for _, v := range r.Violations {
		out = append(out, v.Reason+" "+v.Topic+"["+strconv.Itoa(int(v.Partition))+"]")
	}
	return out
}
