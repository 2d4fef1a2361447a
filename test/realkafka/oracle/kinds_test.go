package oracle

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
)

// The setup of issue 33's kinds: transactional commits and writers, and a
// partition added after the commit.

// txnProducer writes every produce call in a transaction of its own, as
// an exactly-once writer does: a commit marker follows each.
func txnProducer(t *testing.T, b *apachekafka.Broker, id string) *kgo.Client {
	t.Helper()
	return b.Client(t, kgo.TransactionalID(id), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0), kgo.UnknownTopicRetries(-1)) // as producer
}

func produceInTransaction(t *testing.T, cl *kgo.Client, recs []*kgo.Record) {
	t.Helper()
	ctx, cancel := setupContext()
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("beginning a transaction: %v", err)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing in a transaction: %v", err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("committing the transaction: %v", err)
	}
}

// txnCommitOffsets commits offsets of group in a transaction, as a
// read-process-write application does: it writes what it made of the
// records to topic's output (topic-out) and sends its offsets with it
// (sendOffsetsToTransaction: AddOffsetsToTxn, TxnOffsetCommit), as member
// (its ID and generation; none for a simple group), holds the transaction
// open for hold and commits it, then waits until the offsets are the
// group's (the markers reach __consumer_offsets after EndTxn answers).
func txnCommitOffsets(t *testing.T, b *apachekafka.Broker, member *kgo.Client, group, topic string, offsets map[int32]int64, hold time.Duration) {
	t.Helper()
	id := group + "-committer"
	out := topic + "-out"
	b.CreateTopic(t, out, 1, nil)
	cl := b.Client(t, kgo.TransactionalID(id), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	ctx, cancel := setupContext()
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("beginning the commit's transaction: %v", err)
	}
	// The output record also makes the client end the transaction: kgo
	// sends no EndTxn for a transaction it produced nothing in.
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: out, Partition: 0, Value: []byte("out")}).FirstErr(); err != nil {
		t.Fatalf("producing to %s in the commit's transaction: %v", out, err)
	}
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatalf("the committer's producer ID: %v", err)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = id, pid, epoch, group
	ar, err := add.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(ar.ErrorCode)
	}
	if err != nil {
		t.Fatalf("AddOffsetsToTxn: %v", err)
	}
	tds, err := b.Admin(t).ListTopics(ctx, topic)
	if err != nil {
		t.Fatalf("listing %s: %v", topic, err)
	}
	tc := kmsg.NewPtrTxnOffsetCommitRequest()
	tc.TransactionalID, tc.Group, tc.ProducerID, tc.ProducerEpoch, tc.Generation = id, group, pid, epoch, -1
	if member != nil {
		tc.MemberID, tc.Generation = member.GroupMetadata()
	}
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic, rt.TopicID = topic, tds[topic].ID // v6+ (4.x): by ID
	for p, at := range offsets {
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = p, at, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	tc.Topics = []kmsg.TxnOffsetCommitRequestTopic{rt}
	tr, err := tc.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("TxnOffsetCommit: %v", err)
	}
	for _, rt := range tr.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				t.Fatalf("TxnOffsetCommit of %s/%d for %s: %v", rt.Topic, rp.Partition, group, err)
			}
		}
	}
	time.Sleep(hold)
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("committing the commit's transaction: %v", err)
	}
	for {
		fetched, err := b.Admin(t).FetchOffsets(ctx, group)
		shown := err == nil
		for p, at := range offsets {
			if o, ok := fetched.Lookup(topic, p); !ok || o.At != at {
				shown = false
			}
		}
		if shown {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the transactional commit of %s never showed (%v): %v", group, err, fetched)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// addPartition gives topic one more partition, to n+1, and waits until
// the broker's metadata has it.
func addPartition(t *testing.T, b *apachekafka.Broker, topic string, n int32) {
	t.Helper()
	ctx, cancel := setupContext()
	defer cancel()
	adm := b.Admin(t)
	rs, err := adm.CreatePartitions(ctx, 1, topic)
	if err == nil {
		err = rs[topic].Err
	}
	if err != nil {
		t.Fatalf("adding a partition to %s: %v", topic, err)
	}
	for {
		tds, err := adm.ListTopics(ctx, topic)
		if err == nil && len(tds[topic].Partitions) == int(n)+1 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("partition %d of %s never showed in the metadata", n, topic)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// writerID is the transactional ID of a scenario's writer.
func writerID(s Scenario) string { return fmt.Sprintf("%s-writer", s.Topic()) }
