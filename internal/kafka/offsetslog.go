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
	// undecodable holds, per group, the keys whose latest record could
	// not be decoded, with why: a later record of the key that decodes
	// replaces it, a tombstone removes it.
	undecodable map[string]map[recordKey]string
	// newest is the newest timestamp of any record read (any group): the
	// coordinator's clock, which the observer compares with its own
	// (proof.OffsetsTopicRead.CoordinatorAhead).
	newest time.Time
}

// recordKey is a record's key in __consumer_offsets as the log state
// tells them apart: a partition's commit, or the group's metadata
// (metadata: true, tp zero).
type recordKey struct {
	tp       topicPartition
	metadata bool
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
	// undecodable says why a latest record of the group could not be
	// decoded (the first, by key); empty when every one was.
	undecodable string
}

// group returns a copy of what the partition holds of group g.
func (lp *offsetsLogPartition) group(g string) groupRecords {
	m, ok := lp.meta[g]
	r := groupRecords{commits: maps.Clone(lp.commits[g]), meta: m, hasMeta: ok}
	for _, why := range lp.undecodable[g] {
		if r.undecodable == "" || why < r.undecodable {
			r.undecodable = why
		}
	}
	return r
}

// markUndecodable records that the latest record of group g's key k could
// not be decoded; ok clears it (a record of the key that decoded, or a
// tombstone).
func (lp *offsetsLogPartition) markUndecodable(g string, k recordKey, why string, ok bool) {
	if ok {
		delete(lp.undecodable[g], k)
		return
	}
	if lp.undecodable[g] == nil {
		lp.undecodable[g] = make(map[recordKey]string)
	}
	lp.undecodable[g][k] = why
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
	lp.undecodable = make(map[string]map[recordKey]string)
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
		lp.applyRecord(r.Key, r.Value, r.Offset)
		if r.Timestamp.After(lp.newest) {
			lp.newest = r.Timestamp
		}
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

// Value versions the log state decodes: Kafka's OffsetCommitValue.json
// and GroupMetadataValue.json ("validVersions": "0-4" on 3.9 and 4.0–4.4;
// KIP-915: a version past 4 is no longer readable as 4). kmsg reads any
// flexible version as the newest it knows, so a newer one is refused here
// rather than misread.
const (
	maxOffsetCommitValueVersion  = 4
	maxGroupMetadataValueVersion = 4
)

// applyRecord folds one record of __consumer_offsets, for the groups read.
// Keys start with an int16: 0 and 1 are offset commits, 2 classic group
// metadata, 3 and up KIP-848 and share group records (not needed: their
// offsets are offset commit records too). A null value is a tombstone. A
// value it cannot decode is marked, never guessed at or skipped silently:
// the group's exact times are then not read (offsetstopic.go).
func (lp *offsetsLogPartition) applyRecord(key, value []byte, offset int64) {
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
		rk := recordKey{tp: tp}
		if value == nil {
			delete(lp.commits[k.Group], tp)
			lp.markUndecodable(k.Group, rk, "", true)
			return
		}
		var v kmsg.OffsetCommitValue
		if why := undecodable("OffsetCommitValue", v.ReadFrom(value), value, maxOffsetCommitValueVersion); why != "" {
			lp.markUndecodable(k.Group, rk, fmt.Sprintf("%s partition %d offset %d, the commit of %s: %s",
				offsetsTopicName, lp.partition, offset, fmt.Sprintf("%s[%d]", k.Topic, k.Partition), why), false)
			return
		}
		lp.markUndecodable(k.Group, rk, "", true)
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
		rk := recordKey{metadata: true}
		if value == nil {
			delete(lp.meta, k.Group)
			lp.markUndecodable(k.Group, rk, "", true)
			return
		}
		var v kmsg.GroupMetadataValue
		if why := undecodable("GroupMetadataValue", v.ReadFrom(value), value, maxGroupMetadataValueVersion); why != "" {
			lp.markUndecodable(k.Group, rk, fmt.Sprintf("%s partition %d offset %d, the group's metadata: %s",
				offsetsTopicName, lp.partition, offset, why), false)
			return
		}
		lp.markUndecodable(k.Group, rk, "", true)
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

// undecodable says why a record value cannot be read: a version past the
// newest known, or what kmsg's decoder said; empty when it was read.
func undecodable(what string, err error, value []byte, maxVersion int16) string {
	if len(value) >= 2 {
		if v := int16(binary.BigEndian.Uint16(value)); v > maxVersion || v < 0 {
			return fmt.Sprintf("%s version %d, newer than the versions 0–%d this guard decodes (upgrade retention-guard)", what, v, maxVersion)
		}
	}
	if err != nil {
		return fmt.Sprintf("%s does not decode: %v", what, err)
	}
	return ""
}
