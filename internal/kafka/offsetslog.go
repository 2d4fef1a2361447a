package kafka

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The log state: what has been read of one cluster's __consumer_offsets,
// folded from fetched record batches. No I/O and no locks: the fetcher
// (offsetsfetch.go) serializes the passes of a cluster and feeds it; the
// queries return copies, so a result outlives the next fold.

// partitionForGroup is Kafka's GroupCoordinatorService.partitionFor:
// Utils.abs(groupId.hashCode()) % partitions, with Java's String.hashCode
// over UTF-16 code units and Utils.abs mapping Integer.MIN_VALUE to 0.
func partitionForGroup(group string, partitions int32) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(group)) {
		h = 31*h + int32(u)
	}
	switch {
	case h == math.MinInt32:
		h = 0
	case h < 0:
		h = -h
	}
	return h % partitions
}

// offsetsLogState is one cluster's __consumer_offsets as read so far, per
// partition.
type offsetsLogState struct {
	partitions map[int32]*offsetsLogPartition
}

func newOffsetsLogState() *offsetsLogState {
	return &offsetsLogState{partitions: make(map[int32]*offsetsLogPartition)}
}

// follow returns partition pt, following groups on it. A group followed
// for the first time rewinds the partition to its log start: its records
// may lie anywhere in the log, before what was read for the others.
func (s *offsetsLogState) follow(pt int32, groups []string) *offsetsLogPartition {
	lp := s.partitions[pt]
	if lp == nil {
		lp = &offsetsLogPartition{partition: pt, next: -1}
		s.partitions[pt] = lp
	}
	for _, g := range groups {
		if !lp.groups[g] {
			lp.reset(groups)
			break
		}
	}
	return lp
}

// offsetsLogPartition is one partition of __consumer_offsets as read so far.
type offsetsLogPartition struct {
	partition int32
	next      int64 // the next offset to read; -1: from the log start
	groups    map[string]bool
	commits   map[string]map[topicPartition]commitRecord
	meta      map[string]groupMetadataRecord
}

// commitRecord is the latest OffsetCommitValue of a partition.
type commitRecord struct {
	offset     int64
	commitTime time.Time
	expireTime time.Time // an explicit expiry (value v1, OffsetCommit v2–v4 retention); zero when none
	topicID    [16]byte  // the topic ID committed for (value v4, Kafka 4.1+); zero when none
}

// groupMetadataRecord is the latest GroupMetadataValue of a classic group.
type groupMetadataRecord struct {
	protocolType string
	members      int
	stateTime    time.Time // currentStateTimestamp; zero when the record has none (v0/v1)
}

// groupRecords is what the log holds of one group: copies.
type groupRecords struct {
	commits map[topicPartition]commitRecord // the latest commit per partition
	meta    groupMetadataRecord
	hasMeta bool
}

// group returns a copy of what the partition holds of group g.
func (lp *offsetsLogPartition) group(g string) groupRecords {
	m, ok := lp.meta[g]
	return groupRecords{commits: maps.Clone(lp.commits[g]), meta: m, hasMeta: ok}
}

// started reports whether the partition has a next offset to read, rather
// than its log start still to ask.
func (lp *offsetsLogPartition) started() bool { return lp.next >= 0 }

// startAt sets where reading begins: the partition's log start.
func (lp *offsetsLogPartition) startAt(logStart int64) { lp.next = logStart }

// rewind forgets what was read and reads again from logStart: the log
// start moved past the next offset (OffsetOutOfRange), what lay between
// is gone, and what was folded from it may be superseded by what follows.
func (lp *offsetsLogPartition) rewind(logStart int64) {
	lp.reset(nil)
	lp.next = logStart
}

// reset makes the partition be read again from its log start, for the
// groups it followed and groups.
func (lp *offsetsLogPartition) reset(groups []string) {
	old := lp.groups
	lp.next = -1
	lp.groups = make(map[string]bool, len(old)+len(groups))
	for g := range old {
		lp.groups[g] = true
	}
	for _, g := range groups {
		lp.groups[g] = true
	}
	lp.commits = make(map[string]map[topicPartition]commitRecord)
	lp.meta = make(map[string]groupMetadataRecord)
}

// apply folds a fetched partition into what was read and moves the next
// offset past the last whole batch (control batches and aborted
// transactions included); it reports whether the next offset moved. A
// batch it cannot decode is an error, and nothing of the answer is folded:
// the next pass reads it again.
func (lp *offsetsLogPartition) apply(rp *kmsg.FetchResponseTopicPartition) (advanced bool, err error) {
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
		Offset:         lp.next,
		Topic:          offsetsTopicName,
		Partition:      rp.Partition,
		IsolationLevel: kgo.ReadCommitted(),
	}, rp, kgo.DefaultDecompressor(), nil)
	if fp.Err != nil {
		return false, fp.Err
	}
	for _, r := range fp.Records {
		lp.applyRecord(r.Key, r.Value)
	}
	next := lp.next
	raw := rp.RecordBatches
	for len(raw) >= 12 {
		base := int64(binary.BigEndian.Uint64(raw[0:8]))
		length := int64(int32(binary.BigEndian.Uint32(raw[8:12])))
		if length <= 0 || 12+length > int64(len(raw)) || len(raw) < batchHeaderSize {
			break
		}
		last := base + int64(int32(binary.BigEndian.Uint32(raw[23:27])))
		next = max(next, last+1)
		raw = raw[12+length:]
	}
	if next > lp.next {
		lp.next = next
		return true, nil
	}
	return false, nil
}

// applyRecord folds one record of __consumer_offsets, for the groups read.
// Keys start with an int16: 0 and 1 are offset commits, 2 classic group
// metadata, 3 and up KIP-848 and share group records (not needed: their
// offsets are offset commit records too). A null value is a tombstone.
func (lp *offsetsLogPartition) applyRecord(key, value []byte) {
	if len(key) < 2 {
		return
	}
	switch binary.BigEndian.Uint16(key) {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if k.ReadFrom(key) != nil || !lp.groups[k.Group] {
			return
		}
		tp := topicPartition{Topic: k.Topic, Partition: k.Partition}
		if value == nil {
			delete(lp.commits[k.Group], tp)
			return
		}
		var v kmsg.OffsetCommitValue
		if v.ReadFrom(value) != nil {
			return
		}
		c := commitRecord{offset: v.Offset, commitTime: time.UnixMilli(v.CommitTimestamp), topicID: v.TopicID}
		if v.Version == 1 && v.ExpireTimestamp >= 0 {
			c.expireTime = time.UnixMilli(v.ExpireTimestamp)
		}
		if lp.commits[k.Group] == nil {
			lp.commits[k.Group] = make(map[topicPartition]commitRecord)
		}
		lp.commits[k.Group][tp] = c
	case 2:
		var k kmsg.GroupMetadataKey
		if k.ReadFrom(key) != nil || !lp.groups[k.Group] {
			return
		}
		if value == nil {
			delete(lp.meta, k.Group)
			return
		}
		var v kmsg.GroupMetadataValue
		if v.ReadFrom(value) != nil {
			return
		}
		m := groupMetadataRecord{protocolType: v.ProtocolType, members: len(v.Members)}
		if v.Version >= 2 && v.CurrentStateTimestamp >= 0 {
			m.stateTime = time.UnixMilli(v.CurrentStateTimestamp)
		}
		lp.meta[k.Group] = m
	}
}

// heldByTransaction tells why the partition, read to the last stable
// offset of the last answer, is still not read to its end: an open
// transaction holds the last stable offset below the high watermark, and
// read_committed serves nothing past it, so commits written after the
// transaction began (of any group of the partition) are unread, and a
// re-commit of the same offset would be judged on the older commit's time.
// Empty when the partition was read to its high watermark.
func (lp *offsetsLogPartition) heldByTransaction(highWatermark, lastStable int64) string {
	if lastStable < highWatermark && lp.next < highWatermark {
		return fmt.Sprintf("%s partition %d: an open transaction holds its last stable offset at %d, below its high watermark %d; the commits after it are unread until the transaction ends",
			offsetsTopicName, lp.partition, lastStable, highWatermark)
	}
	return ""
}
