package groups

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
)

// offsetsRecord is one record of __consumer_offsets as the broker wrote
// it, decoded here with kmsg apart from the product's reader.
type offsetsRecord struct {
	Partition  int32
	Offset     int64
	KeyVersion int16
	Group      string
	Topic      string // offset commits
	TopicPart  int32  // offset commits
	Tombstone  bool
	// At is the record's timestamp: when the coordinator wrote it, on the
	// broker's clock.
	At time.Time
	// Offset commits: the value.
	ValueVersion    int16
	Committed       int64
	CommitTimestamp time.Time
	ExpireTimestamp int64
	// Group metadata (key version 2).
	ProtocolType          string
	Members               int
	CurrentStateTimestamp int64
}

// readOffsetsLog reads every partition of __consumer_offsets from its log
// start to its high watermark, as the admin, and returns the records of
// group (key versions 0–2: offset commits and classic group metadata),
// read_uncommitted: records of open and aborted transactions included.
func readOffsetsLog(t *testing.T, e *env, group string) []offsetsRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ends, err := e.Admin(t).ListEndOffsets(ctx, kafkatest.OffsetsTopic)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", kafkatest.OffsetsTopic, err)
	}
	goal := map[int32]int64{}
	parts := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset of %s/%d: %v", o.Topic, o.Partition, o.Err)
		}
		if o.Offset > 0 {
			goal[o.Partition] = o.Offset
			parts[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	if len(parts) == 0 {
		return nil
	}
	cl := e.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{kafkatest.OffsetsTopic: parts}),
		kgo.FetchMaxWait(200*time.Millisecond),
		// Transaction markers too: the log end may be one.
		kgo.KeepControlRecords())
	next := map[int32]int64{}
	var out []offsetsRecord
	for done := false; !done; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: not at its end within a minute (read to %v of %v)", kafkatest.OffsetsTopic, next, goal)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("reading %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			next[r.Partition] = r.Offset + 1
			if r.Attrs.IsControl() {
				return
			}
			if rec, ok := decodeOffsetsRecord(r); ok && rec.Group == group {
				out = append(out, rec)
			}
		})
		done = true
		for p, g := range goal {
			if next[p] < g {
				done = false
			}
		}
	}
	return out
}

func decodeOffsetsRecord(r *kgo.Record) (offsetsRecord, bool) {
	rec := offsetsRecord{Partition: r.Partition, Offset: r.Offset, Tombstone: r.Value == nil, At: r.Timestamp}
	if len(r.Key) < 2 {
		return rec, false
	}
	rec.KeyVersion = int16(binary.BigEndian.Uint16(r.Key))
	switch rec.KeyVersion {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if k.ReadFrom(r.Key) != nil {
			return rec, false
		}
		rec.Group, rec.Topic, rec.TopicPart = k.Group, k.Topic, k.Partition
		if r.Value != nil {
			var v kmsg.OffsetCommitValue
			if v.ReadFrom(r.Value) != nil {
				return rec, false
			}
			rec.ValueVersion, rec.Committed, rec.ExpireTimestamp = v.Version, v.Offset, v.ExpireTimestamp
			rec.CommitTimestamp = time.UnixMilli(v.CommitTimestamp)
		}
	case 2:
		var k kmsg.GroupMetadataKey
		if k.ReadFrom(r.Key) != nil {
			return rec, false
		}
		rec.Group = k.Group
		if r.Value != nil {
			var v kmsg.GroupMetadataValue
			if v.ReadFrom(r.Value) != nil {
				return rec, false
			}
			rec.ValueVersion, rec.ProtocolType, rec.Members, rec.CurrentStateTimestamp = v.Version, v.ProtocolType, len(v.Members), v.CurrentStateTimestamp
		}
	default:
		return rec, false
	}
	return rec, true
}

// lastCommitRecord is the last offset-commit record of topic/partition
// (nil when none); tombstone reports whether it is one.
func lastCommitRecord(recs []offsetsRecord, topic string, p int32) *offsetsRecord {
	var last *offsetsRecord
	for i := range recs {
		r := &recs[i]
		if r.KeyVersion <= 1 && r.Topic == topic && r.TopicPart == p {
			last = r
		}
	}
	return last
}

// lastGroupRecord is the last group-metadata record (nil when none).
func lastGroupRecord(recs []offsetsRecord) *offsetsRecord {
	var last *offsetsRecord
	for i := range recs {
		if recs[i].KeyVersion == 2 {
			last = &recs[i]
		}
	}
	return last
}

// tombstone is the first tombstone of topic/partition written after a
// commit record (nil when none yet).
func tombstone(recs []offsetsRecord, topic string, p int32) *offsetsRecord {
	if last := lastCommitRecord(recs, topic, p); last != nil && last.Tombstone {
		return last
	}
	return nil
}

// commitRecords are the (non-tombstone) commit records of topic/partition.
func commitRecords(recs []offsetsRecord, topic string, p int32) []offsetsRecord {
	var out []offsetsRecord
	for _, r := range recs {
		if r.KeyVersion <= 1 && r.Topic == topic && r.TopicPart == p && !r.Tombstone {
			out = append(out, r)
		}
	}
	return out
}
