package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

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
	commit := func(group string, epoch int32) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: "events", Partition: 0, At: 4, LeaderEpoch: epoch})
		if err := c.Admin(t).CommitAllOffsets(ctx, group, os); err != nil {
			t.Fatalf("committing %s: %v", group, err)
		}
	}
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
