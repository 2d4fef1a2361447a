package kafka

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"maps"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Records of __consumer_offsets, encoded as the group coordinator writes
// them (GroupCoordinatorRecordHelpers): keys and values in kmsg's
// encodings of Kafka's OffsetCommitKey/Value and GroupMetadataKey/Value.

type logRecord struct{ key, value []byte }

var commitTime0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// commitAt is a commit of offset by group on topic/partition at the
// given time, as value version 3 (Kafka 2.1+) writes it.
func commitAt(group, topic string, partition int32, offset int64, at time.Time) logRecord {
	k := kmsg.NewOffsetCommitKey()
	k.Version, k.Group, k.Topic, k.Partition = 1, group, topic, partition
	v := kmsg.NewOffsetCommitValue()
	v.Version, v.Offset, v.CommitTimestamp, v.LeaderEpoch = 3, offset, at.UnixMilli(), -1
	return logRecord{k.AppendTo(nil), v.AppendTo(nil)}
}

// commitV1 is a commit with an explicit expiry (value version 1:
// OffsetCommit v2–v4 with a retention time).
func commitV1(group, topic string, partition int32, offset int64, at, expire time.Time) logRecord {
	k := kmsg.NewOffsetCommitKey()
	k.Version, k.Group, k.Topic, k.Partition = 1, group, topic, partition
	v := kmsg.NewOffsetCommitValue()
	v.Version, v.Offset, v.CommitTimestamp, v.ExpireTimestamp = 1, offset, at.UnixMilli(), expire.UnixMilli()
	return logRecord{k.AppendTo(nil), v.AppendTo(nil)}
}

// commitV4 is a commit carrying the topic ID (value version 4, Kafka 4.1+).
func commitV4(group, topic string, partition int32, offset int64, at time.Time, topicID [16]byte) logRecord {
	k := kmsg.NewOffsetCommitKey()
	k.Version, k.Group, k.Topic, k.Partition = 1, group, topic, partition
	v := kmsg.NewOffsetCommitValue()
	v.Version, v.Offset, v.CommitTimestamp, v.LeaderEpoch, v.TopicID = 4, offset, at.UnixMilli(), -1, topicID
	return logRecord{k.AppendTo(nil), v.AppendTo(nil)}
}

// commitTombstone deletes a group's commit of topic/partition (offsets
// expired or deleted).
func commitTombstone(group, topic string, partition int32) logRecord {
	k := kmsg.NewOffsetCommitKey()
	k.Version, k.Group, k.Topic, k.Partition = 1, group, topic, partition
	return logRecord{k.AppendTo(nil), nil}
}

// groupMeta is a classic group's metadata with members members; version
// 3 carries currentStateTimestamp, version 1 does not.
func groupMeta(group string, version int16, members int, stateAt time.Time) logRecord {
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = 2, group
	v := kmsg.NewGroupMetadataValue()
	v.Version, v.ProtocolType, v.Generation, v.CurrentStateTimestamp = version, "consumer", 3, stateAt.UnixMilli()
	for range members {
		m := kmsg.NewGroupMetadataValueMember()
		m.MemberID, m.ClientID, m.ClientHost = "member", "client", "/10.0.0.1"
		v.Members = append(v.Members, m)
	}
	return logRecord{k.AppendTo(nil), v.AppendTo(nil)}
}

func groupMetaTombstone(group string) logRecord {
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = 2, group
	return logRecord{k.AppendTo(nil), nil}
}

// logBatch is a v2 record batch at firstOffset.
type logBatch struct {
	firstOffset     int64
	lastOffsetDelta int32 // above len(records)-1 where compaction removed records; 0: len(records)-1
	producerID      int64 // a transactional producer's; 0: none
	control         bool  // a transaction marker: records hold its key
	records         []logRecord
	gzip            bool // records compressed (offsets.topic.compression.codec 1)
	// badRecords cuts the last bytes of the records, under a CRC that
	// matches: a batch whose records do not parse, as a broker's bug or a
	// proxy rewriting batches may serve.
	badRecords bool
}

// encode lays the batch out as a broker serves it: length, CRC-32C and
// varint records as Kafka's DefaultRecordBatch writes them.
func (b logBatch) encode() []byte {
	var records []byte
	for i, r := range b.records {
		kr := kmsg.Record{OffsetDelta: int32(i), Key: r.key, Value: r.value}
		kr.Length = int32(len(kr.AppendTo(nil)) - 1) // everything after the (one-byte, zero) length
		records = kr.AppendTo(records)
	}
	if b.badRecords {
		records = records[:len(records)-3]
	}
	var attributes int16
	if b.gzip {
		var z bytes.Buffer
		w := gzip.NewWriter(&z)
		if _, err := w.Write(records); err != nil {
			panic(err)
		}
		if err := w.Close(); err != nil {
			panic(err)
		}
		records, attributes = z.Bytes(), 1
	}
	rb := kmsg.RecordBatch{
		Attributes:  attributes,
		FirstOffset: b.firstOffset, Magic: 2, NumRecords: int32(len(b.records)),
		LastOffsetDelta: max(b.lastOffsetDelta, int32(len(b.records)-1)),
		ProducerID:      -1, ProducerEpoch: -1, FirstSequence: -1,
		FirstTimestamp: commitTime0.UnixMilli(), MaxTimestamp: commitTime0.UnixMilli(),
		Records: records,
	}
	if b.producerID > 0 {
		rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = b.producerID, 0, 0
		rb.Attributes |= 0x10 // transactional
	}
	if b.control {
		rb.Attributes |= 0x20
	}
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:12], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:21], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// abortMarker ends producer's transaction as aborted.
func abortMarker(offset, producer int64) logBatch {
	key := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, 0), 0) // version 0, type ABORT
	value := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint16(nil, 0), 0)
	return logBatch{firstOffset: offset, producerID: producer, control: true, records: []logRecord{{key, value}}}
}

// fetched is one Fetch answer for the partition: its batches, laid out one
// after another, cut to cut bytes when cut > 0 (a partial batch at the
// end, as a broker serves when the batch outgrows the fetch size).
type fetched struct {
	batches []logBatch
	aborted []int64 // producers whose transactions were aborted, from the answer's first offset
	cut     int
	corrupt bool // a byte under the last batch's CRC flipped, as a disk or a proxy may
}

func (f fetched) partition(pt int32) *kmsg.FetchResponseTopicPartition {
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.Partition = pt
	for _, b := range f.batches {
		rp.RecordBatches = append(rp.RecordBatches, b.encode()...)
	}
	if f.cut > 0 {
		rp.RecordBatches = rp.RecordBatches[:f.cut]
	}
	if f.corrupt {
		last := f.batches[len(f.batches)-1].encode()
		rp.RecordBatches[len(rp.RecordBatches)-len(last)+30] ^= 0xff
	}
	for _, p := range f.aborted {
		at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		at.ProducerID, at.FirstOffset = p, f.batches[0].firstOffset
		rp.AbortedTransactions = append(rp.AbortedTransactions, at)
	}
	return &rp
}

func batchOf(first int64, records ...logRecord) logBatch {
	return logBatch{firstOffset: first, records: records}
}

// The log state folds what a Fetch answer serves into the latest commit
// and metadata record per group: the time offsets.retention.minutes counts
// from is the latest commit record's, so a record folded wrongly (an
// aborted commit kept, a tombstone missed, a later commit lost) dates a
// group's offsets wrongly. The next offset is past the last whole batch,
// so nothing is read twice or skipped.
func TestOffsetsLogFoldsRecords(t *testing.T) {
	at := func(s int) time.Time { return commitTime0.Add(time.Duration(s) * time.Second) }
	id := [16]byte{0xab, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xcd}
	for _, c := range []struct {
		name        string
		groups      []string // followed
		start       int64    // the log start
		answers     []fetched
		wantNext    int64
		wantCommits map[string]map[topicPartition]commitRecord
		wantMeta    map[string]groupMetadataRecord
		wantErr     string
	}{
		{
			name:   "the latest commit of a partition wins, across batches",
			groups: []string{"flink-clicks"},
			answers: []fetched{{batches: []logBatch{
				batchOf(0, commitAt("flink-clicks", "clicks", 0, 10, at(1)), commitAt("flink-clicks", "clicks", 1, 7, at(1))),
				batchOf(2, commitAt("flink-clicks", "clicks", 0, 12, at(2))),
			}}},
			wantNext: 3,
			wantCommits: map[string]map[topicPartition]commitRecord{"flink-clicks": {
				{Topic: "clicks", Partition: 0}: {offset: 12, commitMs: at(2).UnixMilli()},
				{Topic: "clicks", Partition: 1}: {offset: 7, commitMs: at(1).UnixMilli()},
			}},
		},
		{
			name:   "a re-commit of the same offset moves the commit time",
			groups: []string{"flink-clicks"},
			answers: []fetched{
				{batches: []logBatch{batchOf(0, commitAt("flink-clicks", "clicks", 0, 10, at(1)))}},
				{batches: []logBatch{batchOf(1, commitAt("flink-clicks", "clicks", 0, 10, at(60)))}},
			},
			wantNext: 2,
			wantCommits: map[string]map[topicPartition]commitRecord{"flink-clicks": {
				{Topic: "clicks", Partition: 0}: {offset: 10, commitMs: at(60).UnixMilli()},
			}},
		},
		{
			name:   "a tombstone deletes the commit",
			groups: []string{"flink-clicks"},
			answers: []fetched{{batches: []logBatch{
				batchOf(0, commitAt("flink-clicks", "clicks", 0, 10, at(1)), commitAt("flink-clicks", "clicks", 1, 3, at(1))),
				batchOf(2, commitTombstone("flink-clicks", "clicks", 0)),
			}}},
			wantNext: 3,
			wantCommits: map[string]map[topicPartition]commitRecord{"flink-clicks": {
				{Topic: "clicks", Partition: 1}: {offset: 3, commitMs: at(1).UnixMilli()},
			}},
		},
		{
			name:   "groups not followed are not kept",
			groups: []string{"flink-clicks"},
			answers: []fetched{{batches: []logBatch{
				batchOf(0, commitAt("other-job", "clicks", 0, 99, at(1)), groupMeta("other-job", 3, 0, at(1)), commitAt("flink-clicks", "clicks", 0, 4, at(2))),
			}}},
			wantNext: 3,
			wantCommits: map[string]map[topicPartition]commitRecord{"flink-clicks": {
				{Topic: "clicks", Partition: 0}: {offset: 4, commitMs: at(2).UnixMilli()},
			}},
		},
		{
			name:   "an explicit expiry (value v1) and a topic ID (value v4) are kept",
			groups: []string{"flink-clicks"},
			answers: []fetched{{batches: []logBatch{
				batchOf(0, commitV1("flink-clicks", "clicks", 0, 4, at(1), at(3600)), commitV4("flink-clicks", "views", 0, 8, at(2), id)),
			}}},
			wantNext: 2,
			wantCommits: map[string]map[topicPartition]commitRecord{"flink-clicks": {
				{Topic: "clicks", Partition: 0}: {offset: 4, commitMs: at(1).UnixMilli(), expireMs: at(3600).UnixMilli()},
				{Topic: "views", Partition: 0}:  {offset: 8, commitMs: at(2).UnixMilli(), topicID: id},
			}},
		},
		{
			name:   "group metadata: the latest, with its state time from v2 on",
			groups: []string{"flink-clicks", "batch-job"},
			answers: []fetched{{batches: []logBatch{
				batchOf(0, groupMeta("flink-clicks", 3, 2, at(1)), groupMeta("batch-job", 1, 0, at(5))),
				batchOf(2, groupMeta("flink-clicks", 3, 0, at(30))),
			}}},
			wantNext: 3,
			wantMeta: map[string]groupMetadataRecord{
				"flink-clicks": {protocolType: "consumer", members: 0, stateTime: at(30)},
				"batch-job":    {protocolType: "consumer", members: 0}, // v1: no currentStateTimestamp
			},
		},
		{
			name:   "a metadata tombstone deletes the group's metadata",
			groups: []string{"flink-clicks"},
			answers: []fetched{{batches: []logBatch{
				batchOf(0, groupMeta("flink-clicks", 3, 0, at(1))),
				batchOf(1, groupMetaTombstone("flink-clicks")),
			}}},
			wantNext: 2,
		},
		{
			name:   "an aborted transaction's commit is not folded, its marker is read past",
			groups: []string{"flink-clicks", "eos-job"},
			answers: []fetched{{
				batches: []logBatch{
					batchOf(0, commitAt("eos-job", "clicks", 0, 2, at(1))),
					{firstOffset: 1, producerID: 7, records: []logRecord{commitAt("eos-job", "clicks", 0, 5, at(2))}},
					abortMarker(2, 7),
					batchOf(3, commitAt("flink-clicks", "clicks", 0, 4, at(3))),
				},
				aborted: []int64{7},
			}},
			wantNext: 4,
			wantCommits: map[string]map[topicPartition]commitRecord{
				"eos-job":      {{Topic: "clicks", Partition: 0}: {offset: 2, commitMs: at(1).UnixMilli()}},
				"flink-clicks": {{Topic: "clicks", Partition: 0}: {offset: 4, commitMs: at(3).UnixMilli()}},
			},
		},
		{
			name:   "a compacted batch is read past its last offset, not its last record",
			groups: []string{"flink-clicks"},
			start:  40,
			answers: []fetched{{batches: []logBatch{
				{firstOffset: 40, lastOffsetDelta: 9, records: []logRecord{commitAt("flink-clicks", "clicks", 0, 4, at(1))}},
			}}},
			wantNext: 50,
			wantCommits: map[string]map[topicPartition]commitRecord{"flink-clicks": {
				{Topic: "clicks", Partition: 0}: {offset: 4, commitMs: at(1).UnixMilli()},
			}},
		},
		{
			name:   "a partial batch at the end of an answer is read next time",
			groups: []string{"flink-clicks"},
			answers: []fetched{{
				batches: []logBatch{
					batchOf(0, commitAt("flink-clicks", "clicks", 0, 4, at(1))),
					batchOf(1, commitAt("flink-clicks", "clicks", 0, 9, at(2))),
				},
				cut: len(batchOf(0, commitAt("flink-clicks", "clicks", 0, 4, at(1))).encode()) + 30,
			}},
			wantNext: 1,
			wantCommits: map[string]map[topicPartition]commitRecord{"flink-clicks": {
				{Topic: "clicks", Partition: 0}: {offset: 4, commitMs: at(1).UnixMilli()},
			}},
		},
		{
			name:   "an answer with a batch it cannot decode folds nothing",
			groups: []string{"flink-clicks"},
			answers: []fetched{
				{batches: []logBatch{batchOf(0, commitAt("flink-clicks", "clicks", 0, 4, at(1)))}},
				{batches: []logBatch{batchOf(1, commitAt("flink-clicks", "clicks", 0, 4, at(60)))}, corrupt: true},
			},
			wantNext: 1,
			wantCommits: map[string]map[topicPartition]commitRecord{"flink-clicks": {
				{Topic: "clicks", Partition: 0}: {offset: 4, commitMs: at(1).UnixMilli()},
			}},
			wantErr: "crc",
		},
		{
			name:   "a batch it cannot decode after one it can: the first is folded and read past",
			groups: []string{"flink-clicks"},
			answers: []fetched{{batches: []logBatch{
				batchOf(0, commitAt("flink-clicks", "clicks", 0, 4, at(1))),
				batchOf(1, commitAt("flink-clicks", "clicks", 0, 4, at(60))),
			}, corrupt: true}},
			wantNext: 1,
			wantCommits: map[string]map[topicPartition]commitRecord{"flink-clicks": {
				{Topic: "clicks", Partition: 0}: {offset: 4, commitMs: at(1).UnixMilli()},
			}},
			wantErr: "crc",
		},
		{
			name:   "records that do not parse under a CRC that matches are an error, not skipped",
			groups: []string{"flink-clicks"},
			answers: []fetched{
				{batches: []logBatch{batchOf(0, commitAt("flink-clicks", "clicks", 0, 4, at(1)))}},
				{batches: []logBatch{{firstOffset: 1, badRecords: true, records: []logRecord{
					commitAt("other-job", "clicks", 0, 4, at(2)), commitAt("flink-clicks", "clicks", 0, 4, at(60)),
				}}}},
			},
			wantNext: 1,
			wantCommits: map[string]map[topicPartition]commitRecord{"flink-clicks": {
				{Topic: "clicks", Partition: 0}: {offset: 4, commitMs: at(1).UnixMilli()},
			}},
			wantErr: "does not decode",
		},
		{
			name:   "a compressed batch (offsets.topic.compression.codec) is folded",
			groups: []string{"flink-clicks"},
			answers: []fetched{{batches: []logBatch{
				batchOf(0, commitAt("flink-clicks", "clicks", 0, 4, at(1))),
				{firstOffset: 1, gzip: true, records: []logRecord{
					commitAt("other-job", "clicks", 0, 9, at(2)), commitAt("flink-clicks", "clicks", 0, 7, at(3)),
				}},
			}}},
			wantNext: 3,
			wantCommits: map[string]map[topicPartition]commitRecord{"flink-clicks": {
				{Topic: "clicks", Partition: 0}: {offset: 7, commitMs: at(3).UnixMilli()},
			}},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newOffsetsLogState()
			lp := s.follow(0, c.groups)
			if lp.started() {
				t.Fatal("a partition followed for the first time has a next offset before its log start is known")
			}
			lp.startAt(c.start)
			var err error
			for _, a := range c.answers {
				if _, err = lp.apply(a.partition(0)); err != nil {
					break
				}
			}
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("apply: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(strings.ToLower(err.Error()), c.wantErr)):
				t.Fatalf("apply: error %v, want one naming %q", err, c.wantErr)
			}
			if lp.next != c.wantNext {
				t.Errorf("next offset %d, want %d", lp.next, c.wantNext)
			}
			for _, g := range c.groups {
				got := lp.group(g)
				if want := c.wantCommits[g]; !sameCommits(got.commits, want) {
					t.Errorf("commits of %s:\n got %v\nwant %v", g, got.commits, want)
				}
				want, wantOK := c.wantMeta[g]
				if got.hasMeta != wantOK || got.meta.protocolType != want.protocolType ||
					got.meta.members != want.members || !got.meta.stateTime.Equal(want.stateTime) {
					t.Errorf("metadata of %s: %+v (%t), want %+v (%t)", g, got.meta, got.hasMeta, want, wantOK)
				}
			}
		})
	}
}

// What a pass takes from the log is a copy: the result is read
// (exactTimes) after the cluster's lock is released, while the next pass
// folds more records into the same state. Sharing the maps was issue 23's
// data race, which kills the process.
func TestOffsetsLogGroupIsACopy(t *testing.T) {
	s := newOffsetsLogState()
	lp := s.follow(0, []string{"flink-clicks"})
	lp.startAt(0)
	first := fetched{batches: []logBatch{batchOf(0, commitAt("flink-clicks", "clicks", 0, 4, commitTime0))}}
	if _, err := lp.apply(first.partition(0)); err != nil {
		t.Fatal(err)
	}
	held := lp.group("flink-clicks")

	later := fetched{batches: []logBatch{batchOf(1,
		commitAt("flink-clicks", "clicks", 0, 9, commitTime0.Add(time.Minute)),
		commitAt("flink-clicks", "clicks", 1, 2, commitTime0.Add(time.Minute)))}}
	if _, err := lp.apply(later.partition(0)); err != nil {
		t.Fatal(err)
	}
	want := map[topicPartition]commitRecord{{Topic: "clicks", Partition: 0}: {offset: 4, commitMs: commitTime0.UnixMilli()}}
	if !sameCommits(held.commits, want) {
		t.Errorf("a result held across a later fold changed: %v, want %v", held.commits, want)
	}
	held.commits[topicPartition{Topic: "clicks", Partition: 5}] = commitRecord{offset: 1}
	if _, ok := lp.group("flink-clicks").commits[topicPartition{Topic: "clicks", Partition: 5}]; ok {
		t.Error("writing a result wrote the log state")
	}
}

// A group followed for the first time may have records anywhere in the
// partition, before what was read for the groups already followed: the
// partition is read again from its log start, for all of them. A group
// already followed does not rewind it (pass after pass reads only what
// was appended), and a log start moving past the next offset
// (OffsetOutOfRange) forgets what was folded and keeps the groups.
func TestOffsetsLogFollowAndRewind(t *testing.T) {
	s := newOffsetsLogState()
	lp := s.follow(3, []string{"flink-clicks"})
	lp.startAt(0)
	answer := fetched{batches: []logBatch{batchOf(0,
		commitAt("flink-clicks", "clicks", 0, 4, commitTime0),
		commitAt("batch-job", "clicks", 0, 7, commitTime0))}}
	if _, err := lp.apply(answer.partition(3)); err != nil {
		t.Fatal(err)
	}

	if again := s.follow(3, []string{"flink-clicks"}); again != lp || !again.started() || again.next != 2 {
		t.Fatalf("following the same group again: next %d (started %t), want 2", again.next, again.started())
	}

	lp = s.follow(3, []string{"batch-job"})
	if lp.started() {
		t.Fatalf("a new group on the partition: next %d, want the log start asked again", lp.next)
	}
	lp.startAt(0)
	if _, err := lp.apply(answer.partition(3)); err != nil {
		t.Fatal(err)
	}
	for g, offset := range map[string]int64{"flink-clicks": 4, "batch-job": 7} {
		if c := lp.group(g).commits[topicPartition{Topic: "clicks", Partition: 0}]; c.offset != offset {
			t.Errorf("after the re-read, %s's commit is %d, want %d", g, c.offset, offset)
		}
	}

	lp.rewind(100)
	if lp.next != 100 || len(lp.group("flink-clicks").commits) != 0 {
		t.Errorf("after the log start moved to 100: next %d, commits %v; want 100 and none", lp.next, lp.group("flink-clicks").commits)
	}
	if !lp.groups["flink-clicks"] || !lp.groups["batch-job"] {
		t.Errorf("a rewind dropped followed groups: %v", lp.groups)
	}
}

// Read to the last stable offset is not read to the end while an open
// transaction holds it below the high watermark: the commits after it
// are unread, and exact times would be older than they are.
func TestOffsetsLogHeldByTransaction(t *testing.T) {
	for _, c := range []struct {
		next, highWatermark, lastStable int64
		held                            bool
	}{
		{next: 10, highWatermark: 10, lastStable: 10},
		{next: 6, highWatermark: 10, lastStable: 6, held: true},
		{next: 10, highWatermark: 10, lastStable: 6}, // the transaction ended, read past it
	} {
		lp := &offsetsLogPartition{partition: 2, next: c.next}
		got := lp.heldByTransaction(c.highWatermark, c.lastStable)
		if (got != "") != c.held {
			t.Errorf("next %d, high watermark %d, last stable %d: %q, want held=%t", c.next, c.highWatermark, c.lastStable, got, c.held)
		}
		if c.held && !strings.Contains(got, "partition 2") {
			t.Errorf("%q does not name the partition", got)
		}
	}
}

// sameCommits compares commit records (their times are milliseconds).
func sameCommits(a, b map[topicPartition]commitRecord) bool {
	return maps.Equal(a, b)
}

// A record version the guard does not know is never misread (kmsg reads
// any flexible version as the newest it knows) nor skipped in silence (an
// older record of the key would then date a newer commit): the group's
// exact times are withheld with a problem naming the record, and a later
// record of the key that decodes, or a tombstone, lifts it. The versions
// known are those 3.9 and 4.0–4.4 write: OffsetCommitValue and
// GroupMetadataValue 0–4 (KIP-915: a newer one is not readable as 4).
func TestOffsetsLogUnknownRecordVersions(t *testing.T) {
	withVersion := func(r logRecord, v int16) logRecord {
		value := append([]byte(nil), r.value...)
		binary.BigEndian.PutUint16(value, uint16(v))
		return logRecord{r.key, value}
	}
	at := commitTime0
	for _, c := range []struct {
		name    string
		batches []logBatch
		want    string // in the group's problem; empty: none
	}{
		{
			name:    "value versions 0-4 decode",
			batches: []logBatch{batchOf(0, commitV1("g", "t", 0, 3, at, at), commitAt("g", "t", 1, 4, at), commitV4("g", "t", 2, 5, at, [16]byte{1}), groupMeta("g", 3, 0, at))},
		},
		{
			name:    "an OffsetCommitValue version 5 withholds the group's times",
			batches: []logBatch{batchOf(0, commitAt("g", "t", 0, 3, at), withVersion(commitV4("g", "t", 0, 3, at.Add(time.Hour), [16]byte{1}), 5))},
			want:    "__consumer_offsets partition 0 offset 1, the commit of t[0]: OffsetCommitValue version 5, newer than the versions 0–4",
		},
		{
			name:    "a GroupMetadataValue version 5 withholds the group's times",
			batches: []logBatch{batchOf(0, withVersion(groupMeta("g", 3, 0, at), 5))},
			want:    "the group's metadata: GroupMetadataValue version 5",
		},
		{
			name:    "a later record of the key that decodes lifts it",
			batches: []logBatch{batchOf(0, withVersion(commitAt("g", "t", 0, 3, at), 5), commitAt("g", "t", 0, 4, at))},
		},
		{
			name:    "a tombstone of the key lifts it",
			batches: []logBatch{batchOf(0, withVersion(groupMeta("g", 3, 0, at), 9), groupMetaTombstone("g"))},
		},
		{
			name:    "another group's unknown record is not this group's problem",
			batches: []logBatch{batchOf(0, withVersion(commitAt("other", "t", 0, 3, at), 5), commitAt("g", "t", 0, 4, at))},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newOffsetsLogState()
			lp := s.follow(0, []string{"g", "other"})
			lp.startAt(0)
			if _, err := lp.apply(fetched{batches: c.batches}.partition(0)); err != nil {
				t.Fatal(err)
			}
			got := lp.group("g").undecodable
			switch {
			case c.want == "" && got != "":
				t.Errorf("problem %q, want none", got)
			case c.want != "" && !strings.Contains(got, c.want):
				t.Errorf("problem %q, want it to contain %q", got, c.want)
			}
		})
	}
}

// BenchmarkOffsetsLogCatchUp is the CPU and memory side of a manager's
// catch-up on __consumer_offsets after a restart (issue 32, item 4): one
// partition of a production-shaped topic (20,000 groups of 24 partitions
// over Kafka's default 50 partitions: 400 groups, 9,600 commit records a
// partition, written in batches of 100 as the coordinator appends them),
// folded from its log start, the guard following a quarter of its groups
// (5,000 of 20,000 guarded). It reports the records folded per second and
// the bytes the state keeps per followed group; the network side is the
// real-broker measurement (docs/benchmarks.md).
func BenchmarkOffsetsLogCatchUp(b *testing.B) {
	const groups, partitions, perBatch = 400, 24, 100
	var names, followed []string
	for g := range groups {
		name := fmt.Sprintf("orders-consumer-%05d", g)
		names = append(names, name)
		if g%4 == 0 {
			followed = append(followed, name)
		}
	}
	var answers []*kmsg.FetchResponseTopicPartition
	var batch []logRecord
	offset, first := int64(0), int64(0)
	for _, name := range names {
		for p := range int32(partitions) {
			batch = append(batch, commitAt(name, "orders", p, 1000+int64(p), commitTime0))
			offset++
			if len(batch) == perBatch {
				answers = append(answers, fetched{batches: []logBatch{batchOf(first, batch...)}}.partition(0))
				batch, first = nil, offset
			}
		}
	}
	records := offset
	b.ReportAllocs()
	b.ResetTimer()
	var lp *offsetsLogPartition
	for range b.N {
		s := newOffsetsLogState()
		lp = s.follow(0, followed)
		lp.startAt(0)
		for _, a := range answers {
			if _, err := lp.apply(a); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(records)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	// Retained: ten states built and held, measured after a collection.
	lp = nil
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	held := make([]*offsetsLogState, 10)
	for i := range held {
		held[i] = newOffsetsLogState()
		p := held[i].follow(0, followed)
		p.startAt(0)
		for _, a := range answers {
			if _, err := p.apply(a); err != nil {
				b.Fatal(err)
			}
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(len(held)*len(followed)), "B/followed-group")
	runtime.KeepAlive(held)
}

// The newest record read, of any group of the partition, is the
// coordinator's clock the observer compares with its own
// (proof.OffsetsTopicRead.CoordinatorAhead): a record of a group not
// followed counts too.
func TestOffsetsLogNewestRecord(t *testing.T) {
	s := newOffsetsLogState()
	lp := s.follow(0, []string{"flink-clicks"})
	lp.startAt(0)
	if !lp.newest.IsZero() {
		t.Fatalf("newest %v before any record", lp.newest)
	}
	other := fetched{batches: []logBatch{batchOf(0, commitAt("someone-else", "clicks", 0, 4, commitTime0))}}
	if _, err := lp.apply(other.partition(0)); err != nil {
		t.Fatal(err)
	}
	if !lp.newest.Equal(commitTime0) {
		t.Errorf("newest = %v, want the batch's timestamp %v", lp.newest, commitTime0)
	}
}

// BenchmarkOffsetsLogFetchAnswer is the garbage of one Fetch answer of
// __consumer_offsets (issue 32, item 4: the reader's RSS right after a
// catch-up): one partition's 1 MiB share of a Fetch, from a topic of
// 20,000 groups of 24 partitions over Kafka's default 50 partitions (400
// groups a partition), each batch one group's OffsetCommit of its 24
// partitions as the coordinator appends it (seed 003's auto-committing
// consumers). The state already holds every followed group's commits, as
// after the first answer of a catch-up, so what an answer allocates is
// what it leaves for the collector. Followed: a quarter of the groups
// (5,000 guarded of 20,000) and one in a hundred (200).
func BenchmarkOffsetsLogFetchAnswer(b *testing.B) {
	const groups, partitions, answerBytes = 400, 24, 1 << 20
	var names []string
	for g := range groups {
		names = append(names, fmt.Sprintf("orders-consumer-%05d", g))
	}
	f := fetched{}
	size, offset := 0, int64(0)
	for i := 0; size < answerBytes; i++ {
		name := names[i%groups]
		var records []logRecord
		for p := range int32(partitions) {
			records = append(records, commitAt(name, fmt.Sprintf("orders-%02d", i%groups/20), p, 1000+int64(i), commitTime0.Add(time.Duration(i)*time.Millisecond)))
		}
		batch := batchOf(offset, records...)
		size += len(batch.encode())
		offset += partitions
		f.batches = append(f.batches, batch)
	}
	answer := f.partition(0)
	for _, every := range []int{4, 100} {
		b.Run(fmt.Sprintf("followed=1in%d", every), func(b *testing.B) {
			var followed []string
			for g, name := range names {
				if g%every == 0 {
					followed = append(followed, name)
				}
			}
			lp := newOffsetsLogState().follow(0, followed)
			lp.startAt(0)
			if _, err := lp.apply(answer); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(answer.RecordBatches)))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				lp.startAt(0)
				if _, err := lp.apply(answer); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if lp.next != offset {
				b.Fatalf("next offset %d, want %d", lp.next, offset)
			}
			b.ReportMetric(float64(offset), "records/answer")
		})
	}
}

// A cluster that ran Kafka before 0.11 may still hold message sets of the
// old formats (magic 0 and 1) in __consumer_offsets' oldest segments; a
// log of many years is what a long-lived cluster like seed 003's carries.
// They are read (by kgo) and folded as the record batches after them are,
// and the timestamp of a batch written with LogAppendTime is the broker's.
func TestOffsetsLogOldMessageFormatAndLogAppendTime(t *testing.T) {
	old := commitAt("flink-clicks", "clicks", 0, 4, commitTime0)
	m := kmsg.MessageV1{Offset: 0, Magic: 1, Timestamp: commitTime0.UnixMilli(), Key: old.key, Value: old.value}
	raw := m.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:12], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[12:16], crc32.ChecksumIEEE(raw[16:]))

	later := commitTime0.Add(time.Hour)
	batch := batchOf(1, commitAt("flink-clicks", "clicks", 1, 9, later)).encode()
	// LogAppendTime: the batch's MaxTimestamp is every record's.
	binary.BigEndian.PutUint16(batch[21:23], 0x08)
	binary.BigEndian.PutUint64(batch[35:43], uint64(later.Add(time.Minute).UnixMilli()))
	binary.BigEndian.PutUint32(batch[17:21], crc32.Checksum(batch[21:], crc32.MakeTable(crc32.Castagnoli)))

	s := newOffsetsLogState()
	lp := s.follow(0, []string{"flink-clicks"})
	lp.startAt(0)
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.RecordBatches = append(raw, batch...)
	if _, err := lp.apply(&rp); err != nil {
		t.Fatal(err)
	}
	want := map[topicPartition]commitRecord{
		{Topic: "clicks", Partition: 0}: {offset: 4, commitMs: commitTime0.UnixMilli()},
		{Topic: "clicks", Partition: 1}: {offset: 9, commitMs: later.UnixMilli()},
	}
	if got := lp.group("flink-clicks").commits; !sameCommits(got, want) {
		t.Errorf("commits %v, want %v", got, want)
	}
	if lp.next != 2 {
		t.Errorf("next offset %d, want 2", lp.next)
	}
	if !lp.newest.Equal(later.Add(time.Minute)) {
		t.Errorf("newest %v, want the LogAppendTime batch's %v", lp.newest, later.Add(time.Minute))
	}
}

// A batch whose length says it ends before its own header (a broker's bug
// or a proxy's) is an error, never a crash of the manager.
func TestOffsetsLogShortBatch(t *testing.T) {
	raw := batchOf(0, commitAt("flink-clicks", "clicks", 0, 4, commitTime0)).encode()
	binary.BigEndian.PutUint32(raw[8:12], 3)
	s := newOffsetsLogState()
	lp := s.follow(0, []string{"flink-clicks"})
	lp.startAt(0)
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.RecordBatches = raw
	if _, err := lp.apply(&rp); err == nil || !strings.Contains(err.Error(), "does not decode") {
		t.Errorf("apply: error %v, want the batch named as not decoding", err)
	}
	if lp.next != 0 {
		t.Errorf("next offset %d, want 0", lp.next)
	}
}
