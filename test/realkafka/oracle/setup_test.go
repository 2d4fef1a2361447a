package oracle

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
)

// setupTimeout bounds each step that sets a scenario up. kafkatest's
// helpers allow 15 s; a run of trials beside other engineers' brokers on
// two cores (load averages of 60 to 90 were seen) needs more.
const setupTimeout = 90 * time.Second

func setupContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), setupTimeout)
}

// producer writes the trial's records to the partitions they name. A
// KRaft broker applies a new topic from the metadata log on its own
// schedule: the metadata another broker answers can name a leader that
// does not host the partition yet, and answers UNKNOWN_TOPIC_OR_PARTITION
// (seen on a loaded three-node 3.9 cluster, the first produce of a
// diverged trial). The topic exists (created and awaited), so the
// producer retries that error without kgo's limit of 4, bounded by
// setupTimeout.
func producer(t *testing.T, b *apachekafka.Broker) *kgo.Client {
	t.Helper()
	return b.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0), kgo.UnknownTopicRetries(-1))
}

func produceRecords(t *testing.T, cl *kgo.Client, recs []*kgo.Record) {
	t.Helper()
	ctx, cancel := setupContext()
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing: %v", err)
	}
}

// commitOffsets commits as a simple group does: OffsetCommit
// without joining, with the leader epochs given (none when nil).
func commitOffsets(t *testing.T, b *apachekafka.Broker, group, topic string, offsets map[int32]int64, epochs map[int32]int32) {
	t.Helper()
	ctx, cancel := setupContext()
	defer cancel()
	var os kadm.Offsets
	for p, at := range offsets {
		os.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: epochOf(epochs, p)})
	}
	if err := b.Admin(t).CommitAllOffsets(ctx, group, os); err != nil {
		t.Fatalf("committing %s on %s: %v", group, topic, err)
	}
}

// joinAndCommit joins group with protocol (kafkatest.Classic or
// kafkatest.Consumer), subscribed to topic, waits for its assignment and
// commits offsets as the member, with the leader epochs given (none when
// nil). The member stays until closed.
func joinAndCommit(t *testing.T, b *apachekafka.Broker, group, protocol, topic string, offsets map[int32]int64, epochs map[int32]int32) *kgo.Client {
	t.Helper()
	cl := join(t, b, group, protocol, topic)
	ctx, cancel := setupContext()
	defer cancel()
	if err := kafkatest.CommitSyncEpochs(ctx, cl, topic, offsets, epochs); err != nil {
		t.Fatalf("group %s: %v", group, err)
	}
	return cl
}

// join joins group with protocol, subscribed to topic, and waits for its
// assignment. The member stays until closed.
func join(t *testing.T, b *apachekafka.Broker, group, protocol, topic string) *kgo.Client {
	t.Helper()
	assigned := make(chan struct{}, 1)
	opts := []kgo.Opt{
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			select {
			case assigned <- struct{}{}:
			default:
			}
		}),
	}
	if protocol == kafkatest.Consumer {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	cl := b.Client(t, opts...)
	deadline := time.After(setupTimeout)
	for joined := false; !joined; {
		pctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		cl.PollFetches(pctx)
		cancel()
		select {
		case <-assigned:
			joined = true
		case <-deadline:
			t.Fatalf("a %s member of group %s was not assigned within %s", protocol, group, setupTimeout)
		default:
		}
	}
	return cl
}

// waitEmpty polls until the group is Empty (its member left).
func waitEmpty(t *testing.T, b *apachekafka.Broker, group string) {
	t.Helper()
	deadline := time.Now().Add(setupTimeout)
	for {
		if state(b.Admin(t), group) == "Empty" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s is not Empty after %s (%s)", group, setupTimeout, state(b.Admin(t), group))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// state is the group's state: KIP-848 groups through
// ConsumerGroupDescribe, classic ones through DescribeGroups.
func state(adm *kadm.Client, group string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if cgs, err := adm.DescribeConsumerGroups(ctx, group); err == nil {
		if g, ok := cgs[group]; ok && g.Err == nil && g.State != "" {
			return g.State
		}
	}
	gs, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return gs[group].State
}
