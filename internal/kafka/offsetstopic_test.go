package kafka

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
)

// What one cluster's passes read of __consumer_offsets is shared: a live
// check at a start runs beside the periodic pass, and two connections that
// differ only in credentials share the cluster's log. A result must never
// hold the shared maps another pass goes on writing: Go kills the process
// on a concurrent map read and write, the webhook and the reconciler with
// it. Run under -race (make test does), three observers of one group read
// while commits keep being logged; without -race the assertions still
// check each exact time is one the coordinator wrote. (Seed 003: the
// exact commit times are what dates an Empty group's offsets.)
func TestObserveOffsetsTopicConcurrentPasses(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	c.CreateOffsetsTopic(t, 3)
	c.CreateTopic(t, "clicks", 4, nil)
	for p := range int32(4) {
		c.ProduceTo(t, "clicks", p, 200)
	}
	c.CommitOffsets(t, "flink-clicks", "clicks", map[int32]int64{0: 1, 1: 1, 2: 1, 3: 1})
	c.LogCommits(t, "flink-clicks")

	o, _ := newTestObserver(t)
	conn := Connection{BootstrapServers: c.Addrs}
	target := Target{Group: "flink-clicks", Topics: []string{"clicks"}, ReadOffsetsTopic: true}

	var (
		mu      sync.Mutex
		written = map[int64]bool{} // commit times logged, in ms
		stop    = make(chan struct{})
		wg      sync.WaitGroup
		bad     []string
		passes  int
	)
	record := func() {
		mu.Lock()
		defer mu.Unlock()
		for _, commit := range c.GroupInfo("flink-clicks").Commits["clicks"] {
			written[commit.At.UnixMilli()] = true
		}
	}
	record()
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				obs := o.Observe(ctx, conn, []Target{target})
				cancel()
				mu.Lock()
				passes++
				for _, to := range obs[0].Topics {
					for _, po := range to.Partitions {
						if !po.LastCommit.IsZero() && !written[po.LastCommit.UnixMilli()] {
							bad = append(bad, po.LastCommit.String())
						}
					}
				}
				mu.Unlock()
			}
		}()
	}
	deadline := time.Now().Add(3 * time.Second)
	for off := int64(2); time.Now().Before(deadline) && off < 200; off++ {
		c.CommitOffsets(t, "flink-clicks", "clicks", map[int32]int64{0: off, 1: off, 2: off, 3: off})
		record() // before the log holds it: an observer may read it at once
		c.LogCommits(t, "flink-clicks")
	}
	close(stop)
	wg.Wait()
	if passes == 0 {
		t.Fatal("no pass finished")
	}
	if len(bad) > 0 {
		t.Errorf("exact commit times the coordinator never wrote: %v", bad)
	}
}

// A batch of __consumer_offsets the reader cannot decode (a CRC or
// compression it cannot undo) may hold the group's latest commit: here the
// group re-committed the same offset and the only record of that re-commit
// is the undecodable batch. Skipping it read the older commit's time as
// exact, dating the offsets earlier than they are (seed 003: the commit
// time is what offsets.retention.minutes counts from). The reader reports
// why and leaves the time bounded.
func TestObserveOffsetsTopicUndecodableBatch(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	c.CreateOffsetsTopic(t, 1)
	c.CreateTopic(t, "clicks", 1, nil)
	c.ProduceTo(t, "clicks", 0, 5)
	c.Commit(t, "flink-clicks", "clicks", 0, 4)
	c.LogCommits(t, "flink-clicks")
	first := c.GroupInfo("flink-clicks").Commits["clicks"][0].At.Truncate(time.Millisecond)

	o, _ := newTestObserver(t)
	conn := Connection{BootstrapServers: c.Addrs}
	target := Target{Group: "flink-clicks", Topics: []string{"clicks"}, ReadOffsetsTopic: true}
	if p := partition(t, observe(t, o, conn, target)[0], "clicks", 0); !p.LastCommit.Equal(first) {
		t.Fatalf("before: last commit %v, want %v exact", p.LastCommit, first)
	}

	time.Sleep(5 * time.Millisecond) // a later commit time, in ms
	c.Commit(t, "flink-clicks", "clicks", 0, 4)
	produceRawBatch(t, c, kafkatest.OffsetsTopic, 0, undecodableBatch())

	obs := observe(t, o, conn, target)[0]
	p := partition(t, obs, "clicks", 0)
	if p.LastCommit.Equal(first) {
		t.Errorf("the undecodable batch was skipped: the older commit time %v is read as exact", first)
	}
	if !strings.Contains(obs.OffsetsTopic.Problem, "cannot be decoded") {
		t.Errorf("problem = %q, want the undecodable batch named", obs.OffsetsTopic.Problem)
	}
}

// An open transaction on a partition of __consumer_offsets (an
// exactly-once producer's TxnOffsetCommit, here for another group of the
// same partition) holds its last stable offset: read_committed serves
// nothing past it. The group's re-commit of the same offset, written after
// the transaction began, is unread; reading only to the last stable offset
// judged the group on its older commit's time, as exact. Exact only when
// the reader reached the high watermark; once the transaction ends the
// re-commit is read. (kfake models transactions and the last stable
// offset; test/realkafka/offsetstopic shows the same on Apache Kafka.)
func TestObserveOffsetsTopicOpenTransaction(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	c.CreateOffsetsTopic(t, 1)
	c.CreateTopic(t, "clicks", 1, nil)
	c.ProduceTo(t, "clicks", 0, 5)
	c.Commit(t, "flink-clicks", "clicks", 0, 4)
	c.LogCommits(t, "flink-clicks")
	first := c.GroupInfo("flink-clicks").Commits["clicks"][0].At.Truncate(time.Millisecond)

	o, _ := newTestObserver(t)
	conn := Connection{BootstrapServers: c.Addrs}
	target := Target{Group: "flink-clicks", Topics: []string{"clicks"}, ReadOffsetsTopic: true}
	if p := partition(t, observe(t, o, conn, target)[0], "clicks", 0); !p.LastCommit.Equal(first) {
		t.Fatalf("before: last commit %v, want %v exact", p.LastCommit, first)
	}

	// A transaction left open, writing to the partition.
	txn := c.Client(t, kgo.TransactionalID("eos-producer"), kgo.DefaultProduceTopic(kafkatest.OffsetsTopic))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	k := kmsg.NewOffsetCommitKey()
	k.Version, k.Group, k.Topic, k.Partition = 1, "eos-job", "clicks", 0
	v := kmsg.NewOffsetCommitValue()
	v.Version, v.Offset, v.CommitTimestamp = 3, 2, time.Now().UnixMilli()
	if err := txn.ProduceSync(ctx, &kgo.Record{Partition: 0, Key: k.AppendTo(nil), Value: v.AppendTo(nil)}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	time.Sleep(5 * time.Millisecond) // a later commit time, in ms
	c.Commit(t, "flink-clicks", "clicks", 0, 4)
	c.LogCommits(t, "flink-clicks") // past the last stable offset
	second := c.GroupInfo("flink-clicks").Commits["clicks"][0].At.Truncate(time.Millisecond)

	obs := observe(t, o, conn, target)[0]
	if p := partition(t, obs, "clicks", 0); p.LastCommit.Equal(first) {
		t.Errorf("with a transaction open: the older commit time %v is read as exact (the re-commit at %v is past the last stable offset)", first, second)
	}
	if !strings.Contains(obs.OffsetsTopic.Problem, "open transaction") {
		t.Errorf("problem = %q, want the open transaction named", obs.OffsetsTopic.Problem)
	}

	if err := txn.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	obs = observe(t, o, conn, target)[0]
	if p := partition(t, obs, "clicks", 0); !p.LastCommit.Equal(second) || obs.OffsetsTopic.Problem != "" {
		t.Errorf("after the transaction ended: last commit %v (problem %q), want %v exact", p.LastCommit, obs.OffsetsTopic.Problem, second)
	}
}

// undecodableBatch is a v2 record batch that says it is gzip-compressed
// and is not: its length and CRC are right, so the broker stores it.
func undecodableBatch() []byte {
	rb := kmsg.RecordBatch{
		Magic: 2, Attributes: 1, NumRecords: 1, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		FirstTimestamp: time.Now().UnixMilli(), MaxTimestamp: time.Now().UnixMilli(),
		Records: []byte("this is not gzip"),
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:12], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:21], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// produceRawBatch appends a raw record batch to a partition.
func produceRawBatch(t *testing.T, c *kafkatest.Cluster, topic string, partition int32, batch []byte) {
	t.Helper()
	cl := c.Client(t, kgo.MaxVersions(kversion.V3_9_0())) // Produce by topic name
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce of a raw batch: %v", kerr.ErrorForCode(code))
	}
}
