package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// retentionMs is every topic's retention.ms: 7 days, more than the
// policies' 72h recovery window.
const retentionMs = 7 * 24 * 3600 * 1000

// populateKafka gives cluster c its topics (each partition holding
// s.Records records) and the committed offsets of the groups of every
// policy on it, up to s.maxPolicies(): at the log end, or five records short
// of it for lagging groups. Groups commit as admin tools and simple
// consumers do (OffsetCommit without joining).
func (s shape) populateKafka(ctx context.Context, c int, addrs []string, logf func(string, ...any)) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	topics := make([]string, s.TopicsPerCluster)
	for t := range topics {
		topics[t] = topicName(t)
	}
	for i := 0; i < len(topics); i += 100 {
		batch := topics[i:min(i+100, len(topics))]
		resp, err := adm.CreateTopics(ctx, int32(s.Partitions), 1,
			map[string]*string{"retention.ms": kadm.StringPtr(strconv.Itoa(retentionMs))}, batch...)
		if err != nil {
			return fmt.Errorf("creating topics on cluster %d: %w", c, err)
		}
		if err := resp.Error(); err != nil {
			return fmt.Errorf("creating topics on cluster %d: %w", c, err)
		}
	}
	for _, t := range topics {
		recs := make([]*kgo.Record, 0, s.Partitions*s.Records)
		for p := range s.Partitions {
			for r := range s.Records {
				recs = append(recs, &kgo.Record{Topic: t, Partition: int32(p), Value: []byte("event-" + strconv.Itoa(r))})
			}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return fmt.Errorf("producing to %s on cluster %d: %w", t, c, err)
		}
	}
	var groups []int
	for g := range s.maxPolicies() {
		if s.cluster(g) == c {
			groups = append(groups, g)
		}
	}
	err = forAll(ctx, len(groups), func(ctx context.Context, i int) error {
		g := groups[i]
		at := int64(s.Records)
		if lagging(g) {
			at -= 5
		}
		var os kadm.Offsets
		for _, t := range s.topics(g) {
			for p := range s.Partitions {
				os.Add(kadm.Offset{Topic: t, Partition: int32(p), At: at, LeaderEpoch: -1})
			}
		}
		if err := adm.CommitAllOffsets(ctx, groupName(g), os); err != nil {
			return fmt.Errorf("committing offsets of %s on cluster %d: %w", groupName(g), c, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	logf("  Kafka cluster %d: %d topics × %d partitions, %d records each, %d groups committed", c, len(topics), s.Partitions, s.Records, len(groups))
	return nil
}
