package kafka

import (
	"cmp"
	"context"
	"encoding/binary"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The timestamp of the record at a committed offset feeds the
// recoveryHeadroom warning: timestamp + retention.ms − now is how long the
// group may stay down from here before that record expires.
//
// It is read with raw Fetch requests, one per partition leader for all of
// its partitions, each partition asking for a few bytes only, starting at
// the committed offset. A broker answers from the start of the record batch
// holding that offset, so:
//
//   - a small batch comes whole: decoded (decompressed if needed), the
//     record at the committed offset gives its exact timestamp (the first
//     record at or after it, when compaction removed the offset itself);
//   - a larger batch comes cut after our byte limit (real Kafka cuts every
//     partition but the first of a response, which it always sends whole):
//     its 61-byte header still says the batch's first timestamp (the
//     timestamp of its first record), its max timestamp and whether the
//     broker stamped it (LogAppendTime, where every record has the max
//     timestamp). At the batch's first offset, or for broker-stamped
//     batches, that is exact; inside a batch the first timestamp is used:
//     for a producer stamping in order it is not later than the record's
//     own, so headroom is never overstated;
//   - a partition answered with nothing (kfake answers whole batches only,
//     so a batch over the limit is skipped) stays unknown.
//
// A partition is asked at one offset per request, so groups at different
// offsets of the same partition take one more request each: the count grows
// with how many groups share a partition, never with partitions.
//
// Failures here never fail the proof: headroom is a warning. A principal
// without Read on a topic (TOPIC_AUTHORIZATION_FAILED), a leader that moved
// or a broker that did not answer leaves CommittedTimestamp zero, logged at
// V(1), and the rest of the observation stands. Only partitions with a
// committed offset inside [logStart, logEnd) are asked: a caught-up group
// (committed == logEnd) has the full retention ahead, and an offset outside
// the log has no record.

const (
	// batchHeaderSize is the size of a v2 record batch header.
	batchHeaderSize = 61
	// timestampFetchBytes is how many bytes per partition are asked for:
	// enough for a header and small batches whole.
	timestampFetchBytes = 1024
	// firstPartitionSlack is room in a response's byte budget for the
	// one batch a broker always sends whole, however large.
	firstPartitionSlack = 1 << 20
)

type timestampWant struct {
	tp     topicPartition
	offset int64
}

func (p *pass) fetchCommittedTimestamps(ctx context.Context) {
	// Which (partition, offset) pairs are needed, and by which groups.
	byLeader := make(map[int32]map[topicPartition][]int64)
	needers := make(map[timestampWant][]string)
	for _, g := range p.groups {
		gs := p.groupInfo[g]
		for tp, c := range gs.committed {
			ps := p.topics[tp.topic].partitions[tp.partition]
			if c < 0 || !ps.usable || ps.logStart < 0 || ps.logEnd < 0 || c < ps.logStart || c >= ps.logEnd {
				continue
			}
			w := timestampWant{tp, c}
			if _, ok := needers[w]; !ok {
				if byLeader[ps.leader] == nil {
					byLeader[ps.leader] = make(map[topicPartition][]int64)
				}
				byLeader[ps.leader][tp] = append(byLeader[ps.leader][tp], c)
			}
			needers[w] = append(needers[w], g)
		}
	}
	if len(needers) == 0 {
		return
	}

	var (
		mu     sync.Mutex
		found  = make(map[timestampWant]time.Time)
		denied = make(map[string]bool)
		wg     sync.WaitGroup
	)
	for leader, wants := range byLeader {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Round r asks each partition at its r-th offset.
			for round := 0; ; round++ {
				var batch []timestampWant
				for tp, offsets := range wants {
					if round < len(offsets) {
						batch = append(batch, timestampWant{tp, offsets[round]})
					}
				}
				if len(batch) == 0 {
					return
				}
				got, deniedTopics := p.fetchTimestamps(ctx, leader, batch)
				mu.Lock()
				for w, ts := range got {
					found[w] = ts
				}
				for _, t := range deniedTopics {
					denied[t] = true
				}
				mu.Unlock()
				if ctx.Err() != nil {
					return
				}
			}
		}()
	}
	wg.Wait()

	p.mu.Lock()
	for w, groups := range needers {
		ts, ok := found[w]
		if !ok {
			continue
		}
		for _, g := range groups {
			p.groupInfo[g].timestamps[w.tp] = ts
		}
	}
	p.mu.Unlock()

	if len(denied) > 0 {
		p.o.opts.logger.V(1).Info("Fetch denied: committed record timestamps (recoveryHeadroom) unknown for these topics; the principal needs Read on them",
			"connection", p.conn.String(), "topics", sortedKeys(denied))
	}
	if missing := len(needers) - len(found); missing > 0 {
		p.o.opts.logger.V(1).Info("committed record timestamps not read", "connection", p.conn.String(), "partitions", missing)
	}
}

// fetchTimestamps sends one Fetch to leader for the given partition
// offsets and decodes what came back.
func (p *pass) fetchTimestamps(ctx context.Context, leader int32, wants []timestampWant) (map[timestampWant]time.Time, []string) {
	slices.SortFunc(wants, func(a, b timestampWant) int {
		return cmp.Or(cmp.Compare(a.tp.topic, b.tp.topic), cmp.Compare(a.tp.partition, b.tp.partition))
	})
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis = 0
	req.MinBytes = 0
	req.IsolationLevel = 0
	req.SessionID = 0
	req.SessionEpoch = -1 // no fetch session: a one-off full fetch
	req.MaxBytes = int32(min(int64(timestampFetchBytes)*int64(len(wants))+firstPartitionSlack, 1<<30))
	offsetOf := make(map[topicPartition]int64, len(wants))
	for _, w := range wants {
		offsetOf[w.tp] = w.offset
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != w.tp.topic {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = w.tp.topic
			rt.TopicID = p.topics[w.tp.topic].id
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = w.tp.partition
		rp.FetchOffset = w.offset
		rp.PartitionMaxBytes = timestampFetchBytes
		rt := &req.Topics[len(req.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}

	kresp, err := p.cl.Broker(int(leader)).Request(ctx, req)
	if err != nil {
		p.o.opts.logger.V(1).Info("Fetch for committed record timestamps failed",
			"connection", p.conn.String(), "broker", leader, "error", p.conn.redact(describeError(err)))
		return nil, nil
	}
	resp := kresp.(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 {
		p.o.opts.logger.V(1).Info("Fetch for committed record timestamps failed",
			"connection", p.conn.String(), "broker", leader, "error", describeError(kerr.ErrorForCode(resp.ErrorCode)))
		return nil, nil
	}

	out := make(map[timestampWant]time.Time)
	var denied []string
	for _, rt := range resp.Topics {
		name := rt.Topic
		if name == "" {
			name = p.topicByID(rt.TopicID)
		}
		for i := range rt.Partitions {
			rp := &rt.Partitions[i]
			tp := topicPartition{name, rp.Partition}
			offset, ok := offsetOf[tp]
			if !ok {
				continue
			}
			if rp.ErrorCode != 0 {
				err := kerr.ErrorForCode(rp.ErrorCode)
				if isAuthorization(err) {
					denied = append(denied, name)
				} else {
					p.o.opts.logger.V(2).Info("Fetch for a committed record timestamp failed",
						"topic", name, "partition", rp.Partition, "error", describeError(err))
				}
				continue
			}
			if ts, ok := recordTimestamp(rp, name, offset); ok {
				out[timestampWant{tp, offset}] = ts
			}
		}
	}
	return out, denied
}

// recordTimestamp finds the timestamp of the record at offset (or the
// first one after it) in a fetched partition; see the comment at the top.
func recordTimestamp(rp *kmsg.FetchResponseTopicPartition, topic string, offset int64) (time.Time, bool) {
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
		Offset:    offset,
		Topic:     topic,
		Partition: rp.Partition,
	}, rp, kgo.DefaultDecompressor(), nil)
	for _, r := range fp.Records {
		if r.Offset >= offset {
			return r.Timestamp, true
		}
	}
	return headerTimestamp(rp.RecordBatches, offset)
}

// headerTimestamp reads the header of the first cut batch that reaches
// offset.
func headerTimestamp(raw []byte, offset int64) (time.Time, bool) {
	for len(raw) >= 12 {
		base := int64(binary.BigEndian.Uint64(raw[0:8]))
		length := int64(int32(binary.BigEndian.Uint32(raw[8:12])))
		if length <= 0 {
			return time.Time{}, false
		}
		if 12+length <= int64(len(raw)) {
			raw = raw[12+length:] // whole batch, already decoded
			continue
		}
		if len(raw) < batchHeaderSize || raw[16] != 2 {
			return time.Time{}, false
		}
		attrs := int16(binary.BigEndian.Uint16(raw[21:23]))
		if attrs&0x20 != 0 { // control batch: no data records
			return time.Time{}, false
		}
		last := base + int64(int32(binary.BigEndian.Uint32(raw[23:27])))
		if last < offset {
			return time.Time{}, false
		}
		first := int64(binary.BigEndian.Uint64(raw[27:35]))
		maxTS := int64(binary.BigEndian.Uint64(raw[35:43]))
		if attrs&0x08 != 0 { // LogAppendTime: every record has the max timestamp
			return time.UnixMilli(maxTS), true
		}
		return time.UnixMilli(first), true
	}
	return time.Time{}, false
}
