package stack

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
)

// Kafka drives the broker as a team's tools would: an admin creating
// topics and resetting group offsets, a producer writing records, a
// consumer that joins its group and commits.
type Kafka struct {
	Client *kgo.Client
	Admin  *kadm.Client
	addrs  []string
}

// DialKafka connects to addrs.
func DialKafka(addrs ...string) (*Kafka, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		return nil, err
	}
	return &Kafka{Client: cl, Admin: kadm.NewClient(cl), addrs: addrs}, nil
}

// CommitAsMember is a consumer's run: it joins group as a classic consumer
// of topic, commits offsets (partition to offset) and leaves, so the group
// is a classic consumer group, Empty until the next run (seed 003's batch
// consumer).
func (k *Kafka) CommitAsMember(ctx context.Context, group, topic string, offsets map[int32]int64) error {
	return kafkatest.CommitAsMember(ctx, []kgo.Opt{kgo.SeedBrokers(k.addrs...)}, group, topic, offsets)
}

// Close closes the connection.
func (k *Kafka) Close() { k.Client.Close() }

// CreateTopic creates a topic with replication factor 1.
func (k *Kafka) CreateTopic(ctx context.Context, topic string, partitions int32, configs map[string]string) error {
	cfg := map[string]*string{}
	for key, v := range configs {
		cfg[key] = kadm.StringPtr(v)
	}
	resp, err := k.Admin.CreateTopic(ctx, partitions, 1, cfg, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("creating topic %s: %w", topic, err)
	}
	return nil
}

// Produce writes n records to each of partitions partitions of topic.
func (k *Kafka) Produce(ctx context.Context, topic string, partitions int32, n int) error {
	recs := make([]*kgo.Record, 0, int(partitions)*n)
	for p := range partitions {
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte("task-" + strconv.Itoa(i))})
		}
	}
	if err := k.Client.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("producing to %s: %w", topic, err)
	}
	return nil
}

// ProduceAt writes n records to partition p of topic with the given
// timestamp (CreateTime): records mirrored or backfilled with their
// original, older times, which retention deletes sooner.
func (k *Kafka) ProduceAt(ctx context.Context, topic string, p int32, n int, ts time.Time) error {
	recs := make([]*kgo.Record, 0, n)
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Timestamp: ts, Value: []byte("backfill-" + strconv.Itoa(i))})
	}
	if err := k.Client.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("producing to %s: %w", topic, err)
	}
	return nil
}

// Member is a consumer that stays in its group (a running Deployment's
// pod) until Leave.
type Member struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

// JoinGroup starts a classic consumer of topic in group, which polls (and
// commits nothing) until Leave; it returns once the member has its
// partitions, so the group is Stable.
func (k *Kafka) JoinGroup(ctx context.Context, group, topic string) (*Member, error) {
	assigned := make(chan struct{}, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.addrs...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.FetchMaxWait(100*time.Millisecond),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			select {
			case assigned <- struct{}{}:
			default:
			}
		}))
	if err != nil {
		return nil, fmt.Errorf("joining group %s: %w", group, err)
	}
	pctx, cancel := context.WithCancel(context.Background())
	m := &Member{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for pctx.Err() == nil {
			cl.PollFetches(pctx)
		}
	}()
	select {
	case <-assigned:
		return m, nil
	case <-ctx.Done():
		m.Leave()
		return nil, fmt.Errorf("joining group %s: not assigned partitions: %w", group, ctx.Err())
	}
}

// Leave stops polling and leaves the group (the pod stops).
func (m *Member) Leave() {
	m.cancel()
	<-m.done
	m.cl.Close() // leaves the group
}

// Commit commits offsets (partition → offset) of topic for group, as an
// admin does (the group must have no members).
func (k *Kafka) Commit(ctx context.Context, group, topic string, offsets map[int32]int64) error {
	var os kadm.Offsets
	for p, at := range offsets {
		os.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1})
	}
	if err := k.Admin.CommitAllOffsets(ctx, group, os); err != nil {
		return fmt.Errorf("committing %s offsets on %s: %w", group, topic, err)
	}
	return nil
}

// Committed returns the group's committed offsets of topic by partition
// (a partition without one is absent).
func (k *Kafka) Committed(ctx context.Context, group, topic string) (map[int32]int64, error) {
	resp, err := k.Admin.FetchOffsets(ctx, group)
	if err == nil {
		err = resp.Error()
	}
	if errors.Is(err, kerr.GroupIDNotFound) {
		return map[int32]int64{}, nil // every offset of the group expired: the group is gone
	}
	if err != nil {
		return nil, fmt.Errorf("fetching %s offsets: %w", group, err)
	}
	out := map[int32]int64{}
	for p, o := range resp[topic] {
		if o.At >= 0 {
			out[p] = o.At
		}
	}
	return out, nil
}

// LogStarts returns the log start offset of every partition of topic.
func (k *Kafka) LogStarts(ctx context.Context, topic string) (map[int32]int64, error) {
	return k.offsets(ctx, topic, k.Admin.ListStartOffsets)
}

// LogEnds returns the log end offset of every partition of topic.
func (k *Kafka) LogEnds(ctx context.Context, topic string) (map[int32]int64, error) {
	return k.offsets(ctx, topic, k.Admin.ListEndOffsets)
}

func (k *Kafka) offsets(ctx context.Context, topic string, list func(context.Context, ...string) (kadm.ListedOffsets, error)) (map[int32]int64, error) {
	lo, err := list(ctx, topic)
	if err == nil {
		err = lo.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("listing offsets of %s: %w", topic, err)
	}
	out := map[int32]int64{}
	lo.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out, nil
}

// DeleteRecords moves the log start of partitions of topic to the given
// offsets, as retention does when it deletes old segments.
func (k *Kafka) DeleteRecords(ctx context.Context, topic string, before map[int32]int64) error {
	var os kadm.Offsets
	for p, at := range before {
		os.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1})
	}
	rs, err := k.Admin.DeleteRecords(ctx, os)
	if err == nil {
		err = rs.Error()
	}
	if err != nil {
		return fmt.Errorf("deleting records of %s: %w", topic, err)
	}
	return nil
}

// SetBrokerConfig sets a dynamic broker config on broker 0.
func (k *Kafka) SetBrokerConfig(ctx context.Context, key, value string) error {
	rs, err := k.Admin.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: key, Value: kadm.StringPtr(value)}}, 0)
	if err == nil {
		for _, r := range rs {
			if r.Err != nil {
				err = fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("setting broker config %s=%s: %w", key, value, err)
	}
	return nil
}

// ResetToLogStart commits the log start of every partition of topic for
// group: what `kafka-consumer-groups --reset-offsets --to-earliest` does,
// the replay a team chooses after a gap.
func (k *Kafka) ResetToLogStart(ctx context.Context, group, topic string) (map[int32]int64, error) {
	starts, err := k.LogStarts(ctx, topic)
	if err != nil {
		return nil, err
	}
	return starts, k.Commit(ctx, group, topic, starts)
}

// Seed000Outbox writes seed 000's outbox as both end-to-end suites replay
// it: topic on one partition with 7 days of retention, offsets 0..29
// written now and committed by group (30), 30..74 a backfill stamped 5
// days ago (the record at the committed offset has 2 days of headroom),
// 75..99 written now.
func (k *Kafka) Seed000Outbox(ctx context.Context, topic, group string) error {
	retention := strconv.FormatInt((7 * 24 * time.Hour).Milliseconds(), 10)
	if err := k.CreateTopic(ctx, topic, 1, map[string]string{"retention.ms": retention}); err != nil {
		return err
	}
	if err := k.Produce(ctx, topic, 1, 30); err != nil {
		return err
	}
	if err := k.ProduceAt(ctx, topic, 0, 45, time.Now().Add(-5*24*time.Hour)); err != nil {
		return err
	}
	if err := k.Produce(ctx, topic, 1, 25); err != nil {
		return err
	}
	return k.Commit(ctx, group, topic, map[int32]int64{0: 30})
}
