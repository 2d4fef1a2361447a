package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Issue 33 item 1 on kfake (the fast tests' and the demo's broker): the
// committed leader epoch is read from OffsetFetch and its end asked of the
// leader with one OffsetsForLeaderEpoch for the partitions whose commit
// has one. kfake answers it like Kafka for a consumer (replica -1): the
// high watermark for its current epoch, -1/-1 for an epoch above it. A
// commit without an epoch is not asked about. Real brokers:
// test/realkafka/proof TestCommitPastItsLeaderEpochIsADivergence.
func TestObserveCommitLeaderEpoch(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "events", 1, nil)
	c.ProduceTo(t, "events", 0, 10)
	commit := func(group string, epoch int32) { commitWithEpoch(t, c, group, "events", 4, epoch) }
	commit("current", 0)
	commit("future", 5)
	commit("reset", -1)

	var counter requestCounter
	o, _ := newTestObserver(t, WithRequestHook(counter.hook))
	obs := observe(t, o, Connection{BootstrapServers: c.Addrs},
		Target{Group: "current", Topics: []string{"events"}},
		Target{Group: "future", Topics: []string{"events"}},
		Target{Group: "reset", Topics: []string{"events"}})
	for i, want := range []proof.CommitEpoch{
		{HasEpoch: true, Epoch: 0, EndKnown: true, EndEpoch: 0, EndOffset: 10},
		{HasEpoch: true, Epoch: 5, EndKnown: true, EndEpoch: -1, EndOffset: -1},
		{},
	} {
		requireNoFailures(t, obs[i])
		if got := partition(t, obs[i], "events", 0).CommitEpoch; got != want {
			t.Errorf("%s: commit epoch %+v, want %+v", obs[i].Group.ID, got, want)
		}
	}
	if n := counter.reset()["OffsetForLeaderEpoch"]; n != 2 {
		t.Errorf("OffsetForLeaderEpoch sent %d times, want 2: one per leader per epoch asked (0 and 5), none for the commit without an epoch", n)
	}
	if r := proof.Evaluate(obs[1], proof.Policy{GroupID: "future", Topics: []string{"events"}, RecoveryWindow: time.Hour}, obs[1].ObservedAt); r.Verdict != proof.Unknown {
		t.Errorf("a commit in an epoch kfake does not know: %s, want Unknown", r.Verdict)
	}
}

// Issue 32 follow-up on kfake, seed 000's lagging group after an unclean
// election: offsets 0-9 written in leader epoch 0, a leader election
// (epoch 1), offsets 10-19 written in it. A commit of 15 in epoch 0 has
// diverged (the epoch ends at 10): the consumer rewinds to 10, and the
// observer reads the record there for the proof's headroom, with one more
// Fetch to its leader. A commit of 15 in epoch 1 has not: no Fetch beyond
// the committed record's. Real brokers: test/realkafka/proof
// TestCommitPastItsLeaderEpochIsADivergence.
func TestObserveRewindTimestamp(t *testing.T) {
	t.Parallel()
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "settle-task", 1, map[string]string{"retention.ms": "2592000000"})
	base := time.UnixMilli(time.Now().Add(-72 * time.Hour).UnixMilli())
	stamp := func(i int) time.Time { return base.Add(time.Duration(i) * time.Minute) }
	produce := func(from, to int) {
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			recs = append(recs, &kgo.Record{Topic: "settle-task", Partition: 0, Value: []byte("record"), Timestamp: stamp(i)})
		}
		c.ProduceRecords(t, recs...)
	}
	produce(0, 10)
	c.ShufflePartitionLeaders()
	produce(10, 20)
	commit := func(group string, epoch int32) { commitWithEpoch(t, c, group, "settle-task", 15, epoch) }
	commit("ledger-settle-consumer", 0)
	commit("ledger-settle-current", 1)

	var counter requestCounter
	o, _ := newTestObserver(t, WithRequestHook(counter.hook))
	obs := observe(t, o, Connection{BootstrapServers: c.Addrs}, Target{Group: "ledger-settle-current", Topics: []string{"settle-task"}})[0]
	requireNoFailures(t, obs)
	po := partition(t, obs, "settle-task", 0)
	if po.CommitEpoch.EndOffset != 20 || !po.RewindTimestamp.IsZero() {
		t.Errorf("commit in the current epoch: epoch %+v, rewind timestamp %v; want the end 20 and none", po.CommitEpoch, po.RewindTimestamp)
	}
	if n := counter.reset()["Fetch"]; n != 1 {
		t.Errorf("Fetch sent %d times for a commit that did not diverge, want 1 (the committed record's)", n)
	}

	obs = observe(t, o, Connection{BootstrapServers: c.Addrs}, Target{Group: "ledger-settle-consumer", Topics: []string{"settle-task"}})[0]
	requireNoFailures(t, obs)
	po = partition(t, obs, "settle-task", 0)
	if want := (proof.CommitEpoch{HasEpoch: true, Epoch: 0, EndKnown: true, EndEpoch: 0, EndOffset: 10}); po.CommitEpoch != want {
		t.Fatalf("commit epoch %+v, want %+v", po.CommitEpoch, want)
	}
	if !po.RewindTimestamp.Equal(stamp(10)) || !po.CommittedTimestamp.Equal(stamp(15)) {
		t.Errorf("rewind timestamp %v, committed %v; want the records at 10 (%v) and 15 (%v)", po.RewindTimestamp, po.CommittedTimestamp, stamp(10), stamp(15))
	}
	if n := counter.reset()["Fetch"]; n != 2 {
		t.Errorf("Fetch sent %d times, want 2: the committed record's and one to the leader for the rewind point", n)
	}
	r := proof.Evaluate(obs, proof.Policy{GroupID: "ledger-settle-consumer", Topics: []string{"settle-task"}, RecoveryWindow: time.Hour}, obs.ObservedAt)
	if len(r.Partitions) != 1 || r.Partitions[0].Reason != proof.ReasonCommittedEpochDiverged ||
		!r.Partitions[0].HasHeadroom || r.Partitions[0].Headroom != stamp(10).Add(30*24*time.Hour).Sub(obs.ObservedAt) {
		t.Errorf("partitions %+v, want %s with the headroom of the record at 10", r.Partitions, proof.ReasonCommittedEpochDiverged)
	}
}

// commitWithEpoch commits at on partition 0 of topic for group, carrying
// leader epoch epoch (-1: none, as kafka-consumer-groups --reset-offsets).
func commitWithEpoch(t *testing.T, c *kafkatest.Cluster, group, topic string, at int64, epoch int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: at, LeaderEpoch: epoch})
	if err := c.Admin(t).CommitAllOffsets(ctx, group, os); err != nil {
		t.Fatalf("committing %s: %v", group, err)
	}
}
