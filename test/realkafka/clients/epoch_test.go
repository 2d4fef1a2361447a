package clients

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// TestJavaConsumerValidatesTheCommittedLeaderEpoch (issue 33 item 1, seed
// 000's silent skip by another road): what the official Java consumer does
// with a commit whose leader epoch ends below it, and with an epoch above
// the leader's, beside the product's verdict on the same state. The broker
// restarts once to move the leader epoch (5 records in the first epoch
// E0, 10 in the next: E0 ends at 5, the log end is 15), as in
// test/realkafka/proof TestCommitPastItsLeaderEpochIsADivergence. The
// client validates a position that carries an epoch
// (SubscriptionState.maybeCompleteValidation, after an
// OffsetsForLeaderEpoch): it does not resume at the committed offset 10.
// franz-go does the same; Debian's librdkafka (2.0.2, before KIP-320 came
// to librdkafka) does resume at 10. Kafka's defaults, as deployed.
func TestJavaConsumerValidatesTheCommittedLeaderEpoch(t *testing.T) {
	t.Parallel()
	for _, d := range apachekafka.Dists(t) {
		t.Run(d.Line(), func(t *testing.T) {
			t.Parallel()
			const topic = "ledger"
			b := apachekafka.Start(t, d, asDeployed(d)...)
			b.CreateTopic(t, topic, 1, nil)
			b.ProduceTo(t, topic, 0, 5)
			e0, _ := epochOf(t, b, topic)
			b.Restart(t, b.Nodes[0].ID)
			var e1 int32
			poll(t, "a new leader epoch after the restart", func() bool { e1, _ = epochOf(t, b, topic); return e1 > e0 })
			b.ProduceTo(t, topic, 0, 10)

			verdict := func(group string) proof.Result {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				o := kafka.NewObserver()
				defer o.Close()
				obs := o.Observe(ctx, kafka.Connection{BootstrapServers: b.Addrs()},
					[]kafka.Target{{Group: group, Topics: []string{topic}, ReadOffsetsTopic: true}})[0]
				return proof.Evaluate(obs, proof.Policy{GroupID: group, Topics: []string{topic}, RecoveryWindow: time.Hour}, obs.ObservedAt)
			}
			env := func(group, reset string) ConsumerEnv {
				return ConsumerEnv{Brokers: b.Addrs(), Group: group, Topics: []string{topic}, Reset: reset,
					AutoCommit: "false", Idle: 5 * time.Second}
			}

			// Committed 10 in E0, which ends at 5: the product says 5
			// records diverged, a risk (issue 32: what the client does
			// next is why); the client rewinds to 5 (earliest) or throws
			// (none). Neither resumes at 10.
			for _, group := range []string{"diverged-earliest", "diverged-none"} {
				commitWithEpoch(t, b, group, topic, 10, e0)
				if r := verdict(group); r.Verdict != proof.Violated || len(r.Violations) != 1 ||
					r.Violations[0].Reason != proof.ReasonCommittedEpochDiverged || r.Violations[0].DivergedRecords != 5 {
					t.Fatalf("%s: %s %+v, want Violated, %s, 5 records", group, r.Verdict, r.Violations, proof.ReasonCommittedEpochDiverged)
				}
			}
			run := Java(t, env("diverged-earliest", "earliest"))
			if first := run.One(t, "first record", topic, 0); first.Int("offset") != 5 {
				t.Fatalf("commit 10 in epoch %d ending at 5, earliest: the Java consumer's first record %d, want 5 (it rewinds to the divergence):\n%s",
					e0, first.Int("offset"), run)
			}
			// Its commit when it stops ends the risk: the group's next
			// commit, the message's way out.
			if r := verdict("diverged-earliest"); r.Verdict != proof.Proven {
				t.Fatalf("diverged-earliest after the Java consumer read from 5 and committed: %s %+v, want Proven\n%s", r.Verdict, r.Violations, run)
			}
			run = Java(t, env("diverged-none", "none"))
			if f := run.All("fatal"); run.Code == 0 || len(f) == 0 || f[0].Str("exception") != "LogTruncationException" || len(run.All("first record")) != 0 {
				t.Fatalf("commit 10 in epoch %d ending at 5, none: want LogTruncationException and no record:\n%s", e0, run)
			}

			// The same divergence under franz-go and librdkafka (issue 32:
			// the risk rests on what the client does next). franz-go
			// validates a position that carries an epoch as the Java
			// consumer does (kgo consumer.go: an exact offset with an
			// epoch loads as loadTypeEpoch; an OffsetForLeaderEpoch end
			// below it is ErrDataLoss, reported, and the position becomes
			// that end): it reads from 5.
			commitWithEpoch(t, b, "diverged-franz", topic, 10, e0)
			fr := Franz(t, env("diverged-franz", "earliest"))
			if first := fr.One(t, "first record", topic, 0); first.Int("offset") != 5 {
				t.Fatalf("commit 10 in epoch %d ending at 5: franz-go's first record %d, want 5 (it rewinds to the divergence):\n%s",
					e0, first.Int("offset"), fr)
			}
			// librdkafka validates from 2.1.0 (KIP-320: rdkafka_offset.c
			// rd_kafka_offset_validate, then a seek to the epoch's end);
			// Debian's 2.0.2 does not: it resumes at the committed 10 and
			// skips 5..9, records written after the divergence that the
			// group never read, the one client pinned here for which the
			// risk is a loss. It commits no epoch of its own either
			// (OffsetCommit's CommittedLeaderEpoch -1), so a group that
			// only such clients consume has epoch-less commits, judged
			// CommittedOffsetDiverged (a loss): the risk's verdict meets
			// it only on a commit a validating client wrote
			// (docs/kafka-semantics.md).
			commitWithEpoch(t, b, "diverged-kcat", topic, 10, e0)
			k := Kcat(t, b.Addrs(), "diverged-kcat", topic, "auto.offset.reset=earliest")
			if got := k.Offsets[0]; len(got) == 0 || got[0] != 10 {
				t.Fatalf("commit 10 in epoch %d ending at 5: librdkafka 2.0.2 read %v, want from 10 (no epoch validation before 2.1)", e0, got)
			}
			if off, epoch := committedEpoch(t, b, "diverged-kcat", topic); off != 15 || epoch != -1 {
				t.Fatalf("librdkafka 2.0.2's own commit: offset %d in leader epoch %d, want 15 in none (-1)", off, epoch)
			}

			// Committed 10 in an epoch above the leader's: the product
			// cannot prove it (Unknown). The client, having read the
			// commit's epoch (ClassicKafkaConsumer.committed →
			// Metadata.updateLastSeenEpochIfNewer), takes the leader's
			// metadata in the older epoch for stale
			// (Metadata.updateLatestMetadata) and never reads the
			// partition: seen on 3.9.2 and 4.4.0, the consumer's own
			// beginningOffsets in its rebalance listener timed out after
			// 30 s (TimeoutException), no record read.
			future := e1 + 5
			commitWithEpoch(t, b, "future", topic, 10, future)
			if r := verdict("future"); r.Verdict != proof.Unknown || len(r.Violations) != 1 ||
				r.Violations[0].Reason != proof.ReasonCommittedLeaderEpochUnknown {
				t.Fatalf("future: %s %+v, want Unknown, %s", r.Verdict, r.Violations, proof.ReasonCommittedLeaderEpochUnknown)
			}
			run = Java(t, env("future", "earliest"))
			if len(run.All("first record")) != 0 || len(run.All("consumed")) != 0 {
				t.Fatalf("commit 10 in epoch %d above the leader's %d: the Java consumer read records, want none (it stalls on the partition's metadata):\n%s",
					future, e1, run)
			}
		})
	}
}

// committedEpoch reads group's commit on topic/0 and its leader epoch
// (-1: none); offset -1 when it has no commit.
func committedEpoch(t *testing.T, b *apachekafka.Broker, group, topic string) (offset int64, epoch int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	req.Topics = []kmsg.OffsetFetchRequestTopic{rt}
	resp, err := req.RequestWith(ctx, b.Client(t))
	if err != nil {
		t.Fatalf("OffsetFetch of %s: %v", group, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("OffsetFetch of %s: %v", group, err)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rt.Topic == topic && rp.Partition == 0 && rp.ErrorCode == 0 && rp.Offset >= 0 {
				return rp.Offset, rp.LeaderEpoch
			}
		}
	}
	return -1, -1
}

// epochOf reads the leader epoch of topic/0 and the topic's ID.
func epochOf(t *testing.T, b *apachekafka.Broker, topic string) (int32, [16]byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = []kmsg.MetadataRequestTopic{rt}
	resp, err := req.RequestWith(ctx, b.Client(t))
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		return -1, [16]byte{}
	}
	return resp.Topics[0].Partitions[0].LeaderEpoch, resp.Topics[0].TopicID
}

// commitWithEpoch commits offset on topic/0 for group as an admin does
// (generation -1), with epoch as its CommittedLeaderEpoch.
func commitWithEpoch(t *testing.T, b *apachekafka.Broker, group, topic string, offset int64, epoch int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	_, rt.TopicID = epochOf(t, b, topic) // OffsetCommit v10+ (4.1+) names topics by ID
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, epoch
	rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{rp}
	req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	for {
		resp, err := req.RequestWith(ctx, b.Client(t))
		if err != nil {
			t.Fatalf("OffsetCommit on Apache Kafka %s: %v", b.Dist.Version, err)
		}
		code := resp.Topics[0].Partitions[0].ErrorCode
		if code == 0 {
			return
		}
		if !kerr.IsRetriable(kerr.ErrorForCode(code)) || ctx.Err() != nil {
			t.Fatalf("OffsetCommit on Apache Kafka %s: %v", b.Dist.Version, kerr.ErrorForCode(code))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
