package groups

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Transactional commits (TxnOffsetCommit, as a transactional producer's
// sendOffsetsToTransaction sends them) are written to __consumer_offsets
// inside the transaction: they count once it commits. The observer reads
// the topic read_committed, so an aborted transaction's commit record —
// there in the log — never dates the group's offset, and a committed one
// does. While a transaction is open, read_committed stops at its last
// stable offset, below the high watermark: the observer names the open
// transaction and reports no exact time (the proof bounds it instead),
// since a commit after it (of any group of the partition) is unread.
//
// Not parallel with the other tests: an open transaction holds back every
// group of its __consumer_offsets partition on the shared broker
// (txn-app's partition 8 is also 订单-消费者's), which would turn the exact
// times the other tests assert into bounds.
func TestOffsetsTopicTransactionalCommits(t *testing.T) {
	forEach(t, nil, func(t *testing.T, e *env) {
		const topic, group = "txn-orders", "txn-app"
		e.createTopic(t, topic, 1)
		e.Produce(t, topic, 10)
		e.Commit(t, group, topic, 0, 2)
		o := newObserver(t)
		target := kafka.Target{Group: group, Topics: []string{topic}, ReadOffsetsTopic: true}
		first := lastCommitRecord(readOffsetsLog(t, e, group), topic, 0)

		check := func(when string, committed int64, at time.Time) {
			t.Helper()
			// EndTxn answers once the coordinator logged its decision; the
			// markers reach __consumer_offsets after (the transaction
			// coordinator's TransactionMarkerChannelManager sends them on
			// its own): until then the reader is held at the last stable
			// offset, as it says. A clean-tree make test-kafka met that
			// window on 4.4.
			var obs proof.Observation
			pollUntil(t, 30*time.Second, 500*time.Millisecond, when+": the transaction's markers reach "+kafkatest.OffsetsTopic, func() (bool, string) {
				obs = observeOne(t, o, e.conn(reader), target)
				return obs.OffsetsTopic.Problem == "", obs.OffsetsTopic.Problem
			})
			if po := partition(t, obs, topic, 0); po.Committed != committed || !po.LastCommit.Equal(at) {
				t.Fatalf("%s: %s/0 committed %d, last commit %v; want %d committed at %v", when, topic, po.Committed, po.LastCommit, committed, at)
			}
		}

		txnCommit := func(id string, offset int64, end kgo.TransactionEndTry) {
			t.Helper()
			cl := e.Client(t, kgo.TransactionalID(id), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := cl.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("t")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			pid, epoch, err := cl.ProducerID(ctx)
			if err != nil {
				t.Fatal(err)
			}
			add := kmsg.NewPtrAddOffsetsToTxnRequest()
			add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = id, pid, epoch, group
			if r := req[*kmsg.AddOffsetsToTxnResponse](t, cl, add); r.ErrorCode != 0 {
				t.Fatalf("AddOffsetsToTxn: %v", kerr.ErrorForCode(r.ErrorCode))
			}
			tc := kmsg.NewPtrTxnOffsetCommitRequest()
			tc.TransactionalID, tc.Group, tc.ProducerID, tc.ProducerEpoch, tc.Generation = id, group, pid, epoch, -1
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic, rt.TopicID = topic, topicID(t, e, topic) // v6+ (4.x): by ID
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, -1
			rt.Partitions = []kmsg.TxnOffsetCommitRequestTopicPartition{rp}
			tc.Topics = []kmsg.TxnOffsetCommitRequestTopic{rt}
			for _, rt := range req[*kmsg.TxnOffsetCommitResponse](t, cl, tc).Topics {
				for _, rp := range rt.Partitions {
					if rp.ErrorCode != 0 {
						t.Fatalf("TxnOffsetCommit: %v", kerr.ErrorForCode(rp.ErrorCode))
					}
				}
			}
			// Still open: the commit is in the log, not yet the group's,
			// and the reader stops at the last stable offset: no exact
			// time, the open transaction named.
			obs := observeOne(t, o, e.conn(reader), target)
			if p := obs.OffsetsTopic.Problem; !strings.Contains(p, "open transaction") || !strings.Contains(p, kafkatest.OffsetsTopic) {
				t.Fatalf("transaction open: offsets topic problem %q, want the open transaction named", p)
			}
			if po := partition(t, obs, topic, 0); po.Committed != 2 || !po.LastCommit.IsZero() {
				t.Fatalf("transaction open: %s/0 committed %d, last commit %v; want 2, no exact time", topic, po.Committed, po.LastCommit)
			}
			if err := cl.EndTransaction(ctx, end); err != nil {
				t.Fatalf("ending the transaction: %v", err)
			}
		}

		txnCommit("txn-app-aborted", 7, kgo.TryAbort)
		if r := lastCommitRecord(readOffsetsLog(t, e, group), topic, 0); r == nil || r.Committed != 7 {
			t.Fatalf("the aborted transaction's commit record is not in the log (last %+v): the test proves nothing", r)
		}
		check("aborted", 2, first.CommitTimestamp)

		txnCommit("txn-app-committed", 8, kgo.TryCommit)
		last := lastCommitRecord(readOffsetsLog(t, e, group), topic, 0)
		if last == nil || last.Committed != 8 {
			t.Fatalf("the committed transaction's record: %+v", last)
		}
		pollUntil(t, 30*time.Second, 500*time.Millisecond, "the committed transaction's offset is the group's", func() (bool, string) {
			po := partition(t, observeOne(t, o, e.conn(reader), target), topic, 0)
			return po.Committed == 8 && po.LastCommit.Equal(last.CommitTimestamp), fmt.Sprintf("committed %d at %v", po.Committed, po.LastCommit)
		})
	})
}
