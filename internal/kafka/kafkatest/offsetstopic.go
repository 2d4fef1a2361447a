package kafkatest

import (
	"slices"
	"testing"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetsTopic is the topic where Kafka's group coordinator logs commits.
const OffsetsTopic = "__consumer_offsets"

// kfake keeps groups in memory: it has no __consumer_offsets topic. A test
// of a reader of that topic gets one with CreateOffsetsTopic and fills it
// with LogCommits, which writes what Kafka's coordinator would have
// written for the commits kfake really holds (its own commit times, from
// Cluster.GroupInfo): no time is made up here.

// CreateOffsetsTopic creates __consumer_offsets as Kafka does: compacted,
// internal, with the given number of partitions (Kafka's default is 50).
func (c *Cluster) CreateOffsetsTopic(t testing.TB, partitions int32) {
	t.Helper()
	c.CreateTopic(t, OffsetsTopic, partitions, map[string]string{
		"cleanup.policy":    "compact",
		"kfake.is_internal": "true",
	})
}

// LogCommits appends to __consumer_offsets, for each group, one
// OffsetCommitKey/OffsetCommitValue record per committed offset the
// cluster holds, with the commit time kfake recorded: the record Kafka's
// GroupCoordinatorRecordHelpers.newOffsetCommitRecord writes (key version
// 1, value version 3), in the partition Kafka's
// GroupCoordinatorService.partitionFor picks.
func (c *Cluster) LogCommits(t testing.TB, groups ...string) {
	t.Helper()
	if c.Cluster == nil {
		t.Fatalf("kafkatest: LogCommits needs an in-process cluster")
	}
	n := int32(c.partitions(t, OffsetsTopic))
	var recs []*kgo.Record
	for _, g := range groups {
		info := c.GroupInfo(g)
		if info == nil {
			t.Fatalf("kafkatest: group %s does not exist", g)
		}
		topics := make([]string, 0, len(info.Commits))
		for topic := range info.Commits {
			topics = append(topics, topic)
		}
		slices.Sort(topics)
		for _, topic := range topics {
			for p, commit := range info.Commits[topic] {
				k := kmsg.NewOffsetCommitKey()
				k.Version, k.Group, k.Topic, k.Partition = 1, g, topic, p
				v := kmsg.NewOffsetCommitValue()
				v.Version, v.Offset, v.LeaderEpoch, v.Metadata = 3, commit.Offset, commit.LeaderEpoch, commit.Metadata
				v.CommitTimestamp = commit.At.UnixMilli()
				recs = append(recs, &kgo.Record{
					Topic: OffsetsTopic, Partition: kafkaPartitionFor(g, n),
					Key: k.AppendTo(nil), Value: v.AppendTo(nil), Timestamp: commit.At,
				})
			}
		}
	}
	if len(recs) > 0 {
		c.ProduceRecords(t, recs...)
	}
}

// kafkaPartitionFor is Kafka's Utils.abs(groupId.hashCode()) % partitions,
// written here apart from the product's, from Kafka's source.
func kafkaPartitionFor(group string, partitions int32) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(group)) {
		h = h*31 + int32(u)
	}
	if h == -1<<31 {
		return 0
	}
	if h < 0 {
		h = -h
	}
	return h % partitions
}
