// Package offsetstopic runs the reader of __consumer_offsets
// (spec.kafka.readOffsetsTopic) against real Apache Kafka brokers.
package offsetstopic

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// An exactly-once producer's TxnOffsetCommit left open on Kafka's
// __consumer_offsets holds the partition's last stable offset: the reader,
// read_committed, gets nothing past it, and a group that shares the
// partition re-commits its offset after the transaction began. Read to the
// last stable offset only, the group was judged on its older commit's time
// as exact (seed 003: the commit time is what offsets.retention.minutes
// counts from). The time is exact only when the reader reached the high
// watermark: with the transaction open it is bounded and the problem says
// why; once the transaction is aborted the re-commit is read, exact.
func TestOpenTransactionHoldsExactCommitTimes(t *testing.T) {
	for _, d := range apachekafka.Dists(t) {
		t.Run(d.Line(), func(t *testing.T) {
			t.Parallel()
			b := apachekafka.Start(t, d)
			b.CreateTopic(t, "clicks", 1, nil)
			b.ProduceTo(t, "clicks", 0, 5)
			b.Commit(t, "flink-clicks", "clicks", 0, 4)

			o := kafka.NewObserver()
			t.Cleanup(o.Close)
			conn := kafka.Connection{BootstrapServers: b.Addrs()}
			target := kafka.Target{Group: "flink-clicks", Topics: []string{"clicks"}, ReadOffsetsTopic: true}
			first, problem := lastCommit(t, o, conn, target)
			if first.IsZero() || problem != "" {
				t.Fatalf("before any transaction: last commit %v (problem %q), want an exact time", first, problem)
			}

			// The offsets topic has one partition here (the harness's
			// offsets.topic.num.partitions=1): every group shares it.
			// Requests of 3.9's versions: TxnOffsetCommit names topics
			// (4.x's newest versions name them by ID).
			txn := b.Client(t, kgo.MaxVersions(kversion.V3_9_0()))
			producerID, epoch := openTxnOffsetCommit(t, txn, "eos-job", "clicks", 0, 2)

			time.Sleep(10 * time.Millisecond) // a later commit time, in ms
			b.Commit(t, "flink-clicks", "clicks", 0, 4)
			held, problem := lastCommit(t, o, conn, target)
			if held.Equal(first) {
				t.Errorf("with a transaction open: the older commit time %v is read as exact", first)
			}
			if !strings.Contains(problem, "open transaction") {
				t.Errorf("problem = %q, want the open transaction named", problem)
			}

			endTxn(t, txn, producerID, epoch)
			deadline := time.Now().Add(60 * time.Second)
			for {
				after, problem := lastCommit(t, o, conn, target)
				if after.After(first) && problem == "" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after the transaction was aborted: last commit %v (problem %q), want the re-commit after %v, exact", after, problem, first)
				}
				time.Sleep(200 * time.Millisecond)
			}
		})
	}
}

func lastCommit(t *testing.T, o *kafka.Observer, conn kafka.Connection, target kafka.Target) (time.Time, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	obs := o.Observe(ctx, conn, []kafka.Target{target})[0]
	if len(obs.Failures) > 0 {
		t.Fatalf("observation failed: %+v", obs.Failures)
	}
	if !obs.OffsetsTopic.Requested {
		t.Fatalf("__consumer_offsets not requested: %+v", obs.OffsetsTopic)
	}
	for _, to := range obs.Topics {
		for _, po := range to.Partitions {
			if to.Name == "clicks" && po.Partition == 0 {
				return exactOnly(po, obs.OffsetsTopic), obs.OffsetsTopic.Problem
			}
		}
	}
	t.Fatalf("clicks/0 not observed")
	return time.Time{}, ""
}

// exactOnly is the partition's last commit when it came from the log.
func exactOnly(po proof.PartitionObservation, read proof.OffsetsTopicRead) time.Time {
	if read.Problem != "" {
		return time.Time{}
	}
	return po.LastCommit
}

// openTxnOffsetCommit commits offset for group inside a transaction it
// leaves open: InitProducerID, AddOffsetsToTxn, TxnOffsetCommit (what
// kgo's GroupTransactSession and Kafka Streams' exactly-once send).
func openTxnOffsetCommit(t *testing.T, cl *kgo.Client, group, topic string, partition int32, offset int64) (int64, int16) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var (
		producerID int64
		epoch      int16
	)
	for {
		init := kmsg.NewPtrInitProducerIDRequest()
		init.TransactionalID = kmsg.StringPtr("eos-producer")
		init.TransactionTimeoutMillis = 10 * 60 * 1000 // below transaction.max.timeout.ms (15 min)
		init.ProducerID, init.ProducerEpoch = -1, -1
		resp, err := init.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			if kerr.IsRetriable(err) && ctx.Err() == nil {
				time.Sleep(200 * time.Millisecond) // the transaction coordinator is loading
				continue
			}
			t.Fatalf("InitProducerID: %v", err)
		}
		producerID, epoch = resp.ProducerID, resp.ProducerEpoch
		break
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = "eos-producer", producerID, epoch, group
	addResp, err := add.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(addResp.ErrorCode); err != nil {
		t.Fatalf("AddOffsetsToTxn: %v", err)
	}
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.TransactionalID, commit.Group, commit.ProducerID, commit.ProducerEpoch = "eos-producer", group, producerID, epoch
	commit.Generation, commit.MemberID = -1, ""
	ct := kmsg.NewTxnOffsetCommitRequestTopic()
	ct.Topic = topic
	cp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset, cp.LeaderEpoch = partition, offset, -1
	ct.Partitions = []kmsg.TxnOffsetCommitRequestTopicPartition{cp}
	commit.Topics = []kmsg.TxnOffsetCommitRequestTopic{ct}
	commitResp, err := commit.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range commitResp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				t.Fatalf("TxnOffsetCommit: %v", err)
			}
		}
	}
	return producerID, epoch
}

// endTxn aborts the transaction.
func endTxn(t *testing.T, cl *kgo.Client, producerID int64, epoch int16) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "eos-producer", producerID, epoch, false
	resp, err := end.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("EndTxn: %v", err)
	}
}
