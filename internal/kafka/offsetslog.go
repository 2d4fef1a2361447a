package kafka

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"maps"
	"math"
	"slices"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kbin"
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
	// topics interns the topic names of the commits kept (topicName).
	topics map[string]string
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

// commitRecord is the latest OffsetCommitValue of a partition. Its times
// are the record's own Unix milliseconds rather than time.Time (24 bytes
// each): the log state holds one per partition of every followed group,
// and a pass a copy of its groups' (docs/benchmarks.md,
// BenchmarkOffsetsLogCatchUp).
type commitRecord struct {
	offset   int64
	commitMs int64    // commitTimestamp
	expireMs int64    // an explicit expiry (value v1, OffsetCommit v2–v4 retention); 0 when none
	topicID  [16]byte // the topic ID committed for (value v4, Kafka 4.1+); zero when none
}

// committedAt is the commit's time (commitTimestamp).
func (c commitRecord) committedAt() time.Time { return time.UnixMilli(c.commitMs) }

// expiresAt is the commit's explicit expiry; zero when it has none. The
// coordinator writes one as its clock plus a retention the request gave
// (GroupMetadataManager.storeOffsets).
func (c commitRecord) expiresAt() time.Time {
	if c.expireMs == 0 {
		return time.Time{}
	}
	return time.UnixMilli(c.expireMs)
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

// topicName returns the partition's one copy of a topic's name: a map
// assignment keeps the key it is given, so without it every commit record
// kept would hold a string of its own (kmsg allocates one per key read),
// 24 per group of 24 partitions.
func (lp *offsetsLogPartition) topicName(t string) string {
	if s, ok := lp.topics[t]; ok {
		return s
	}
	if lp.topics == nil {
		lp.topics = make(map[string]string)
	}
	lp.topics[t] = t
	return t
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
	lp.topics = nil
}

// apply folds a fetched partition into what was read and moves the next
// offset past the last whole batch (control batches and aborted
// transactions included); it reports whether the next offset moved. A
// batch it cannot decode (CRC, compression, records that do not parse) is
// an error: what came before it is folded and read past, the batch and
// what follows it are not, and the next pass reads the batch again.
//
// The batches are walked here rather than by kgo.ProcessFetchPartition,
// which builds a kgo.Record for every record of the partition, followed
// group or not, and a string for every key's group and topic: at 5,000
// policies, most of a catch-up's records are other groups', and those
// allocations were most of its garbage (docs/benchmarks.md). kmsg's
// RecordBatch and Record decode a batch's header and each record in place
// (key and value are slices of the Fetch answer, no copy); the group is
// read from the key's first bytes (offsetsKeyGroup) and a record of a
// group not followed goes no further. The rules are kgo's, for
// read_committed: CRC-32C over the batch, aborted transactions from the
// answer's list closed by their ABORT marker, control batches skipped,
// records below the fetch offset skipped, the next offset past the batch's
// last offset (compaction keeps it). Message sets of the formats before
// 0.11 (magic 0 and 1, a log written then and never rewritten) are left
// to kgo: they are rare, and it decodes them.
func (lp *offsetsLogPartition) apply(rp *kmsg.FetchResponseTopicPartition) (advanced bool, err error) {
	from := lp.next
	aborted := newAbortedTransactions(rp.AbortedTransactions)
	var (
		batch  kmsg.RecordBatch
		record kmsg.Record
	)
	raw := rp.RecordBatches
	for len(raw) > 16 { // through the magic byte
		base := int64(binary.BigEndian.Uint64(raw[0:8]))
		length := int64(int32(binary.BigEndian.Uint32(raw[8:12]))) + 12
		if length <= 12 || length > int64(len(raw)) {
			break // a partial batch at the end of the answer: the next Fetch serves it
		}
		magic := raw[16] // of a batch shorter than that, ReadFrom says it does not decode
		chunk := raw[:length]
		raw = raw[length:]
		var next int64
		switch magic {
		case 2:
			next, err = lp.applyBatch(chunk, from, aborted, &batch, &record)
		case 0, 1:
			if len(chunk) < 26 { // offset, size, CRC, magic, attributes, key and value lengths
				err = fmt.Errorf("the message set at offset %d does not decode (%d bytes)", base, len(chunk))
				break
			}
			next, err = lp.applyMessageSet(chunk, rp.Partition, from)
		default:
			err = fmt.Errorf("the batch at offset %d has magic %d, unknown", base, magic)
		}
		if err != nil {
			return advanced, err
		}
		if next > lp.next {
			lp.next = next
			advanced = true
		}
	}
	return advanced, nil
}

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// applyBatch folds one record batch (magic 2, Kafka 0.11+) and returns the
// offset after it.
func (lp *offsetsLogPartition) applyBatch(chunk []byte, from int64, aborted abortedTransactions, batch *kmsg.RecordBatch, record *kmsg.Record) (int64, error) {
	if err := batch.ReadFrom(chunk); err != nil || int(batch.Length) != len(chunk)-12 || batch.NumRecords < 0 {
		return 0, fmt.Errorf("the record batch at offset %d does not decode (%d bytes)",
			int64(binary.BigEndian.Uint64(chunk)), len(chunk))
	}
	if crc := int32(crc32.Checksum(chunk[21:], crc32c)); crc != batch.CRC {
		return 0, fmt.Errorf("the record batch at offset %d has CRC %x, computed %x", batch.FirstOffset, uint32(batch.CRC), uint32(crc))
	}
	next := batch.FirstOffset + int64(batch.LastOffsetDelta) + 1
	if next <= from {
		return next, nil // wholly below the fetch offset
	}
	abort := aborted.aborts(batch)
	if batch.Attributes&0x20 != 0 { // a control batch: a transaction's marker
		// Its one record's key is a version and a type, 0 for ABORT
		// (Kafka's ControlRecordType): the end of the producer's
		// aborted transaction.
		if abort && batch.NumRecords > 0 {
			if n, used := kbin.Varint(batch.Records); used > 0 && n >= 0 && int(n)+used <= len(batch.Records) &&
				record.ReadFrom(batch.Records[:int(n)+used]) == nil && len(record.Key) >= 4 && record.Key[2] == 0 && record.Key[3] == 0 {
				aborted.end(batch.ProducerID)
			}
		}
		return next, nil
	}
	if abort {
		return next, nil
	}
	records := batch.Records
	if codec := batch.Attributes & 0x07; codec != 0 {
		var err error
		if records, err = kgo.DefaultDecompressor().Decompress(records, kgo.CompressionCodecType(codec)); err != nil {
			return 0, fmt.Errorf("the record batch at offset %d does not decompress: %w", batch.FirstOffset, err)
		}
	}
	logAppendTime := batch.Attributes&0x08 != 0
	for i := range batch.NumRecords {
		n, used := kbin.Varint(records)
		if used <= 0 || n < 0 || int(n)+used > len(records) || record.ReadFrom(records[:int(n)+used]) != nil {
			return 0, fmt.Errorf("the record batch at offset %d: record %d of %d does not decode", batch.FirstOffset, i, batch.NumRecords)
		}
		records = records[int(n)+used:]
		offset := batch.FirstOffset + int64(record.OffsetDelta)
		if offset < from {
			continue
		}
		lp.applyRecord(record.Key, record.Value, offset)
		ts := batch.FirstTimestamp + record.TimestampDelta64
		if logAppendTime {
			ts = batch.MaxTimestamp
		}
		if t := time.UnixMilli(ts); t.After(lp.newest) {
			lp.newest = t
		}
	}
	return next, nil
}

// applyMessageSet folds a message set of the formats before 0.11 (magic 0
// or 1), decoded by kgo, and returns the offset after it.
func (lp *offsetsLogPartition) applyMessageSet(chunk []byte, partition int32, from int64) (int64, error) {
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.Partition, rp.RecordBatches = partition, chunk
	fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
		Offset:         from,
		Topic:          offsetsTopicName,
		Partition:      partition,
		IsolationLevel: kgo.ReadCommitted(),
	}, &rp, kgo.DefaultDecompressor(), nil)
	if fp.Err != nil {
		return 0, fp.Err
	}
	for _, r := range fp.Records {
		lp.applyRecord(r.Key, r.Value, r.Offset)
		if r.Timestamp.After(lp.newest) {
			lp.newest = r.Timestamp
		}
	}
	return next, nil
}

// abortedTransactions are a Fetch answer's aborted transactions, per
// producer the first offsets in order (kgo's aborter, sorted as the Java
// consumer's queue is: a broker need not list them in order). A
// transactional batch of a producer whose oldest aborted transaction
// began at or before it is aborted, until the producer's ABORT marker
// ends that transaction.
type abortedTransactions map[int64][]int64

func newAbortedTransactions(list []kmsg.FetchResponseTopicPartitionAbortedTransaction) abortedTransactions {
	if len(list) == 0 {
		return nil
	}
	a := make(abortedTransactions)
	for _, t := range list {
		a[t.ProducerID] = append(a[t.ProducerID], t.FirstOffset)
	}
	for pid := range a {
		slices.Sort(a[pid])
	}
	return a
}

func (a abortedTransactions) aborts(b *kmsg.RecordBatch) bool {
	if b.Attributes&0x10 == 0 { // not transactional
		return false
	}
	firsts := a[b.ProducerID]
	return len(firsts) > 0 && b.FirstOffset >= firsts[0]
}

func (a abortedTransactions) end(producerID int64) {
	switch firsts := a[producerID]; {
	case len(firsts) > 1:
		a[producerID] = firsts[1:]
	case len(firsts) == 1:
		delete(a, producerID)
	}
}

// offsetsKeyGroup is the group ID of a key of __consumer_offsets, read
// without decoding the rest: kmsg decodes a whole key (OffsetCommitKey's
// group and topic as two new strings), and most records a catch-up reads
// are other groups'. The group is the first field after the key's version
// in both keys it serves: OffsetCommitKey (versions 0 and 1) and
// GroupMetadataKey (version 2), neither with flexible versions in Kafka's
// OffsetCommitKey.json and GroupMetadataKey.json, so a string is an int16
// length and its bytes. ok is false when the key is too short for it.
func offsetsKeyGroup(key []byte) (group []byte, ok bool) {
	if len(key) < 4 {
		return nil, false
	}
	n := int(int16(binary.BigEndian.Uint16(key[2:4])))
	if n < 0 || len(key) < 4+n {
		return nil, false
	}
	return key[4 : 4+n], true
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
	case 0, 1, 2:
		// Nothing is allocated for a group not followed (the map lookup
		// of a converted []byte does not copy it).
		if g, ok := offsetsKeyGroup(key); !ok || !lp.groups[string(g)] {
			return
		}
	}
	switch binary.BigEndian.Uint16(key) {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if k.ReadFrom(key) != nil || !lp.groups[k.Group] {
			return
		}
		tp := topicPartition{Topic: lp.topicName(k.Topic), Partition: k.Partition}
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
		c := commitRecord{offset: v.Offset, commitMs: v.CommitTimestamp, topicID: v.TopicID}
		if v.Version == 1 && v.ExpireTimestamp >= 0 {
			// 0 means none in expireMs; an expiry at the epoch (which no
			// coordinator writes) stays one, a millisecond later.
			c.expireMs = max(v.ExpireTimestamp, 1)
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
