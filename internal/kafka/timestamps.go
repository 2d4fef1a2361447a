package kafka

import (
	"cmp"
	"context"
	"encoding/binary"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// Two record timestamps are read around each committed offset n:
//
//   - the record at n feeds the recoveryHeadroom warning: timestamp +
//     retention.ms − now is how long the group may stay down from here
//     before that record expires (asked while the group lags: n < log end);
//   - the records before n date the commit from below: committing offset n
//     follows the write of record n−1, so their timestamps bound the commit
//     time of offsets that expire per commit (asked only for those, see
//     proof.ExpiresPerCommit: simple, KIP-848 and streams groups, unsubscribed
//     topics).
//
// They are read with raw Fetch requests, one per partition leader for all of
// its partitions, each partition asking for a few bytes only, starting at
// n−1 when the commit needs dating, else at n. A broker answers from the
// start of the record batch holding that offset, and how much of it
// depends on where the partition stands in the response (Apache Kafka
// 3.9 and 4.x, ReplicaManager.readFromLog; kfake alike, see
// test/realkafka/product TestFetchAnswersLargeBatchesWholeOrNotAtAll):
//
//   - the first partition with data comes with its batch whole, however
//     large (minOneMessage);
//   - a later partition whose batch fits the byte limit comes whole:
//     decoded (decompressed if needed), it gives the exact timestamps of
//     n−1 and of the record at n (the first record at or after n, when
//     compaction removed n itself);
//   - a later partition whose batch does not fit comes with nothing at all
//     (Fetch v3+ replaces an incomplete first batch by an empty answer):
//     it is asked again, alone in its own request, where it is first and
//     comes whole. Only the skipped partitions cost a request each;
//   - after a whole batch, the next one may come cut at the limit (Apache
//     Kafka; kfake sends whole batches only): its 61-byte header still
//     says the batch's first timestamp, its max timestamp and whether the
//     broker stamped it (LogAppendTime, where every record has the max
//     timestamp). The first timestamp belongs to the batch's first record:
//     at or before n−1 when the batch starts below n, so a lower bound on
//     the commit; and for a producer stamping in order not later than the
//     record at n's own, so headroom is never overstated.
//
// A partition is asked at one offset per request, so groups at different
// offsets of the same partition take one more request each: the count grows
// with how many groups share a partition, never with partitions — but for
// the re-asks, one per partition whose batch at its offset is larger than
// the limit (topics written in large batches), a few in flight per leader.
//
// Failures here never fail the proof: a missing headroom is a missing
// warning, and an undated commit makes the proof Unknown on its own (fail
// closed). A principal without Read on a topic (TOPIC_AUTHORIZATION_FAILED),
// a leader that moved or a broker that did not answer leaves the timestamps
// zero, logged at V(1), and the rest of the observation stands.

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
	offset int64 // the fetch offset: n−1 to date a commit, else n
}

// commitNeeds is what one group needs around its committed offset, or
// (target ≥ 0) what a target's business cursor needs: the record at it.
type commitNeeds struct {
	group     string
	committed int64
	target    int
}

func (p *pass) fetchCommittedTimestamps(ctx context.Context) {
	byLeader, needers := p.timestampWants()
	if len(needers) == 0 {
		return
	}
	found, denied, emptied := p.fetchByLeader(ctx, byLeader)
	p.rescanTombstones(ctx, needers, found)

	missing := 0
	p.mu.Lock()
	for w, needs := range needers {
		fr, ok := found[w]
		if !ok {
			missing++
			continue
		}
		for _, n := range needs {
			p.keepRecords(w, n, fr)
		}
	}
	p.markUnread(needers, found, emptied, denied)
	p.mu.Unlock()

	if len(denied) > 0 {
		p.o.opts.logger.V(1).Info("Fetch denied: record timestamps around committed offsets (recoveryHeadroom, commit dating) unknown for these topics; the principal needs Read on them",
			"connection", p.conn.String(), "topics", sortedKeys(denied))
	}
	if missing > 0 {
		p.o.opts.logger.V(1).Info("record timestamps around committed offsets not read", "connection", p.conn.String(), "partitions", missing)
	}
}

// timestampWants is which (partition, fetch offset) pairs are needed, per
// partition leader, and by whom: every group's committed offset inside the
// log (the record before it to date the commit, when its expiry goes per
// commit; the record at it for headroom), and every target's cursor.
func (p *pass) timestampWants() (map[int32]map[topicPartition][]int64, map[timestampWant][]commitNeeds) {
	byLeader := make(map[int32]map[topicPartition][]int64)
	needers := make(map[timestampWant][]commitNeeds)
	need := func(w timestampWant, leader int32, n commitNeeds) {
		if _, ok := needers[w]; !ok {
			if byLeader[leader] == nil {
				byLeader[leader] = make(map[topicPartition][]int64)
			}
			byLeader[leader][w.tp] = append(byLeader[leader][w.tp], w.offset)
		}
		needers[w] = append(needers[w], n)
	}
	for _, g := range p.groups {
		gs := p.groupInfo[g]
		kind := gs.observation()
		for tp, c := range gs.committed {
			ps := p.topics[tp.Topic].partitions[tp.Partition]
			if c < 0 || !ps.usable || ps.logStart < 0 || ps.logEnd < 0 || c < ps.logStart || c > ps.logEnd {
				continue
			}
			dating := c > ps.logStart && proof.ExpiresPerCommit(kind, tp.Topic)
			headroom := c < ps.logEnd
			if !dating && !headroom {
				continue
			}
			w := timestampWant{tp, c}
			if dating {
				w.offset = c - 1
			}
			need(w, ps.leader, commitNeeds{group: g, committed: c, target: -1})
		}
	}
	for i := range p.targets {
		for tp, c := range p.cursorOffsets(i) {
			need(timestampWant{tp, c}, p.topics[tp.Topic].partitions[tp.Partition].leader, commitNeeds{committed: c, target: i})
		}
	}
	return byLeader, needers
}

// fetchByLeader reads the wanted offsets, each leader on its own, round r
// asking each partition at its r-th offset. emptied are the wants answered
// without records (unread.go), denied the topics Fetch was denied on.
func (p *pass) fetchByLeader(ctx context.Context, byLeader map[int32]map[topicPartition][]int64) (found map[timestampWant]fetchedRecords, denied map[string]bool, emptied map[timestampWant]bool) {
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	found, denied, emptied = make(map[timestampWant]fetchedRecords), make(map[string]bool), make(map[timestampWant]bool)
	for leader, wants := range byLeader {
		wg.Add(1)
		go func() {
			defer wg.Done()
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
				got, skipped, deniedTopics := p.fetchTimestamps(ctx, leader, batch, timestampFetchBytes)
				if len(batch) > 1 && len(skipped) > 0 {
					// Each partition the broker skipped is asked
					// again, first (alone) in its own request: a
					// broker sends that one's batch whole.
					maps.Copy(got, p.reaskSkipped(ctx, leader, skipped))
				}
				mu.Lock()
				maps.Copy(found, got)
				for _, t := range deniedTopics {
					denied[t] = true
				}
				for _, w := range skipped {
					emptied[w] = true
				}
				mu.Unlock()
				if ctx.Err() != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return found, denied, emptied
}

// keepRecords keeps what one need takes from the records read at w: a
// target's the timestamp at its cursor; a group's the timestamps at and
// before its committed offset, the tombstones after it on a compacting
// topic, and a transaction marker before it. Called with p.mu held.
func (p *pass) keepRecords(w timestampWant, n commitNeeds, fr fetchedRecords) {
	if n.target >= 0 {
		if at, _ := fr.around(n.committed); !at.IsZero() {
			c := &p.cursors[n.target]
			if c.timestamps == nil {
				c.timestamps = make(map[topicPartition]time.Time)
			}
			c.timestamps[w.tp] = at
		}
		return
	}
	gs := p.groupInfo[n.group]
	at, before := fr.around(n.committed)
	if !at.IsZero() {
		gs.timestamps[w.tp] = at
	}
	if !before.IsZero() {
		gs.preceding[w.tp] = before
	}
	if p.compacts(w.tp.Topic) {
		if scan := fr.tombstoneScan(n.committed, p.o.opts.cleaningAllowance); scan != nil {
			if gs.tombstones == nil {
				gs.tombstones = make(map[topicPartition]*proof.TombstoneScan)
			}
			gs.tombstones[w.tp] = scan
		}
	}
	if m := fr.markerBefore(n.committed); !m.IsZero() {
		if gs.precedingMarker == nil {
			gs.precedingMarker = make(map[topicPartition]time.Time)
		}
		gs.precedingMarker[w.tp] = m
	}
}

// tombstoneScanBytes is the per-partition budget of a second read at a
// lagging committed offset of a compacting topic, for the partitions whose
// first read (timestampFetchBytes) did not reach the high watermark and
// whose coarse tombstone bound would fall inside the window
// (proof.TombstoneScan): 256 KiB holds a lag of a couple of thousand
// change records of ~100 bytes, the lag of a CDC consumer a few minutes
// behind. Only those partitions pay it, each in a request of its own.
const tombstoneScanBytes = 256 << 10

// tombstoneScanFetches bounds the fetches of one such second read: a
// broker answers a fetch from one log segment only (LocalLog.read reads
// the first segment holding data at the offset, 3.9 and 4.4), so a lag spanning segments (a small segment.ms, or
// segments the cleaner has not merged) takes one fetch per segment, at
// most 8 × tombstoneScanBytes (2 MiB) per partition.
const tombstoneScanFetches = 8

// fetchOne reads one partition alone from w.offset with
// tombstoneScanBytes.
func (p *pass) fetchOne(ctx context.Context, leader int32, w timestampWant) (fetchedRecords, bool) {
	got, _, _ := p.fetchTimestamps(ctx, leader, []timestampWant{w}, tombstoneScanBytes)
	fr, ok := got[w]
	return fr, ok
}

// extend appends what a fetch at fr.through showed (the next log
// segment's batches). fr keeps its fetchedAt, the earlier: a batch seen
// without a delete horizon then was without one at the first read too.
func (fr *fetchedRecords) extend(next fetchedRecords) {
	fr.records = append(fr.records, next.records...)
	fr.tombstones = append(fr.tombstones, next.tombstones...)
	fr.markers = append(fr.markers, next.markers...)
	fr.cut, fr.through, fr.hw = next.cut, next.through, next.hw
}

// windowOf is the longest recovery window of the targets of group.
func (p *pass) windowOf(group string) time.Duration {
	var w time.Duration
	for _, t := range p.targets {
		if t.Group == group {
			w = max(w, t.RecoveryWindow)
		}
	}
	return w
}

// compacts reports whether the topic's cleanup.policy, as read, compacts.
func (p *pass) compacts(topic string) bool {
	ts := p.topics[topic]
	return ts != nil && ts.cleanupPolicy.Compacts()
}

// rescanTombstones reads again, with tombstoneScanBytes, the lagging
// partitions of compacting topics whose first read did not reach the high
// watermark and whose tombstone headroom from the record at the committed
// offset (its timestamp + delete.retention.ms − now, before the producer's
// clock skew, which only lowers it) is under a needing group's window plus
// DefaultCleaningAllowance: the would-be alarms; and every such partition
// of a topic whose stamps do not bound the write (the proof can date its
// tombstones only by reading them). The others keep their first read.
func (p *pass) rescanTombstones(ctx context.Context, needers map[timestampWant][]commitNeeds, found map[timestampWant]fetchedRecords) {
	byLeader := make(map[int32][]timestampWant)
	for w, needs := range needers {
		fr, ok := found[w]
		if !ok || !p.compacts(w.tp.Topic) || (fr.hw >= 0 && fr.through >= fr.hw) {
			continue
		}
		ts := p.topics[w.tp.Topic]
		dr, ok := ts.deleteRetentionMs.Millis()
		if !ok {
			continue
		}
		// Stamps that do not bound the write (CreateTime with
		// message.timestamp.after.max.ms unbounded, Kafka 3.x's
		// default) date no tombstone: only those read do, so every
		// lagging partition is read on (proof.TombstonesUnread
		// otherwise).
		var to proof.TopicObservation
		ts.configsInto(&to)
		wouldFail := !proof.ClockSkewBounded(&to)
		for _, n := range needs {
			if n.target >= 0 || n.committed >= fr.hw {
				continue
			}
			at, _ := fr.around(n.committed)
			if at.IsZero() || at.Add(dr).Sub(p.now) < p.windowOf(n.group)+p.o.opts.cleaningAllowance {
				wouldFail = true
			}
		}
		if wouldFail {
			leader := p.topics[w.tp.Topic].partitions[w.tp.Partition].leader
			byLeader[leader] = append(byLeader[leader], w)
		}
	}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for leader, wants := range byLeader {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := p.eachAlone(ctx, wants, func(w timestampWant) (fetchedRecords, bool) {
				fr, ok := p.fetchOne(ctx, leader, w)
				// A broker answers from one log segment: past its end,
				// the next fetch starts the next one.
				for i := 1; ok && i < tombstoneScanFetches && fr.through < fr.hw && ctx.Err() == nil; i++ {
					next, more := p.fetchOne(ctx, leader, timestampWant{w.tp, fr.through})
					if !more || next.through <= fr.through {
						break
					}
					fr.extend(next)
				}
				return fr, ok
			})
			mu.Lock()
			defer mu.Unlock()
			for w, fr := range got {
				if fr.through > found[w].through {
					found[w] = fr
				}
			}
		}()
	}
	wg.Wait()
}

// reaskConcurrency bounds the re-asks of skipped partitions in flight
// per leader.
const reaskConcurrency = 4

// reaskSkipped asks each skipped partition again, alone in its request, so
// that it is the first (and only) partition of the response, which a
// broker answers with its batch whole however large. One request per
// skipped partition, a few in flight: the count grows with the partitions
// the broker skipped, never with the others.
func (p *pass) reaskSkipped(ctx context.Context, leader int32, skipped []timestampWant) map[timestampWant]fetchedRecords {
	return p.eachAlone(ctx, skipped, func(w timestampWant) (fetchedRecords, bool) {
		got, _, _ := p.fetchTimestamps(ctx, leader, []timestampWant{w}, timestampFetchBytes)
		fr, ok := got[w]
		return fr, ok
	})
}

// eachAlone reads each of wants with read, reaskConcurrency in flight,
// and returns what was read: the re-asks of skipped partitions and the
// tombstone scans, one partition per request.
func (p *pass) eachAlone(ctx context.Context, wants []timestampWant, read func(timestampWant) (fetchedRecords, bool)) map[timestampWant]fetchedRecords {
	var (
		mu  sync.Mutex
		out = make(map[timestampWant]fetchedRecords, len(wants))
		wg  sync.WaitGroup
		sem = make(chan struct{}, reaskConcurrency)
	)
	for _, w := range wants {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if fr, ok := read(w); ok {
				mu.Lock()
				out[w] = fr
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}

// fetchTimestamps sends one Fetch to leader for the given partition
// offsets and decodes what came back. skipped are the partitions answered
// without error and without a byte although records lie at and after
// their fetch offset (below the high watermark): the broker left them out
// because their first batch was larger than what was left to send.
func (p *pass) fetchTimestamps(ctx context.Context, leader int32, wants []timestampWant, partitionBytes int32) (found map[timestampWant]fetchedRecords, skipped []timestampWant, denied []string) {
	slices.SortFunc(wants, func(a, b timestampWant) int {
		return cmp.Or(cmp.Compare(a.tp.Topic, b.tp.Topic), cmp.Compare(a.tp.Partition, b.tp.Partition))
	})
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis = 0
	req.MinBytes = 0
	req.IsolationLevel = 0
	req.SessionID = 0
	req.SessionEpoch = -1 // no fetch session: a one-off full fetch
	req.MaxBytes = int32(min(int64(partitionBytes)*int64(len(wants))+firstPartitionSlack, 1<<30))
	offsetOf := make(map[topicPartition]int64, len(wants))
	for _, w := range wants {
		offsetOf[w.tp] = w.offset
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != w.tp.Topic {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = w.tp.Topic
			rt.TopicID = p.topics[w.tp.Topic].id
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = w.tp.Partition
		rp.FetchOffset = w.offset
		rp.PartitionMaxBytes = partitionBytes
		rt := &req.Topics[len(req.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}

	sentAt := p.o.opts.now()
	kresp, err := p.cl.Broker(int(leader)).Request(ctx, req)
	if err != nil {
		p.o.opts.logger.V(1).Info("Fetch for committed record timestamps failed",
			"connection", p.conn.String(), "broker", leader, "error", p.conn.redact(describeError(err)))
		return nil, nil, nil
	}
	resp := kresp.(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 {
		p.o.opts.logger.V(1).Info("Fetch for committed record timestamps failed",
			"connection", p.conn.String(), "broker", leader, "error", describeError(kerr.ErrorForCode(resp.ErrorCode)))
		return nil, nil, nil
	}

	out := make(map[timestampWant]fetchedRecords)
	for _, rt := range resp.Topics {
		name := rt.Topic
		if name == "" {
			name = p.topicByID(rt.TopicID)
		}
		for i := range rt.Partitions {
			rp := &rt.Partitions[i]
			tp := topicPartition{Topic: name, Partition: rp.Partition}
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
			w := timestampWant{tp, offset}
			if len(rp.RecordBatches) == 0 && offset < rp.HighWatermark {
				skipped = append(skipped, w)
				continue
			}
			fr := decodeFetched(rp, name, offset)
			fr.fetchedAt = sentAt
			out[w] = fr
		}
	}
	return out, skipped, denied
}

// fetchedRecords is what one fetch at an offset showed: the timestamps of
// the whole batches it decoded, and the header of the first cut batch.
type fetchedRecords struct {
	records []recordStamp // ascending offsets
	cut     batchHeader   // valid when cut.ok
	// markers are the transaction markers (control batches) among the
	// whole batches, which the decoded records leave out: each at its
	// offset, with the timestamp the partition leader stamped it with.
	markers []recordStamp
	// through is the offset after the last whole batch decoded (-1 when
	// none); tombstones are the records with a null value among them,
	// each with its batch's delete horizon (proof.TombstoneScan).
	through    int64
	tombstones []proof.TombstoneSeen
	// hw is the high watermark the answer gave; fetchedAt the observer's
	// clock when it sent the fetch.
	hw        int64
	fetchedAt time.Time
}

type recordStamp struct {
	offset int64
	ts     time.Time
}

// batchHeader is what a cut batch's 61-byte header says.
type batchHeader struct {
	ok          bool
	base, last  int64
	first, max  time.Time
	appendTime  bool // LogAppendTime: every record has the max timestamp
	controlOnly bool // a control batch: no data records
	// deleteHorizon: a cleaned batch of a compacted topic holding
	// tombstones or markers (attribute bit 6, KIP-534): its base
	// timestamp field holds the delete horizon, a time after the
	// cleaning, not its first record's timestamp (DefaultRecordBatch's
	// deleteHorizonMs, MemoryRecordsBuilder's baseTimestamp); the
	// records' deltas are relative to it, so whole batches decode right.
	deleteHorizon bool
}

// decodeFetched decodes a fetched partition; see the comment at the top.
// It decodes the whole batches one at a time, to know each record's batch:
// its delete horizon (a tombstone's, tombstone.go in internal/proof) and
// where the whole batches end. It stops at the first batch of the old
// format (magic < 2, no horizon attribute) or that does not decode.
func decodeFetched(rp *kmsg.FetchResponseTopicPartition, topic string, offset int64) fetchedRecords {
	fr := fetchedRecords{through: -1, hw: rp.HighWatermark}
	raw := rp.RecordBatches
	for len(raw) >= 12 {
		base := int64(binary.BigEndian.Uint64(raw[0:8]))
		length := int64(int32(binary.BigEndian.Uint32(raw[8:12])))
		if length <= 0 || 12+length > int64(len(raw)) || len(raw) < batchHeaderSize || raw[16] != 2 {
			break // cut (cutHeader reads it), or the old format
		}
		one := *rp
		one.RecordBatches = raw[:12+length]
		fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
			Offset:    offset,
			Topic:     topic,
			Partition: rp.Partition,
		}, &one, kgo.DefaultDecompressor(), nil)
		if fp.Err != nil {
			break
		}
		attrs := int16(binary.BigEndian.Uint16(raw[21:23]))
		var horizon time.Time
		if attrs&0x40 != 0 {
			horizon = time.UnixMilli(int64(binary.BigEndian.Uint64(raw[27:35])))
		}
		for _, r := range fp.Records {
			fr.records = append(fr.records, recordStamp{r.Offset, r.Timestamp})
			if r.Value == nil && attrs&0x20 == 0 {
				fr.tombstones = append(fr.tombstones, proof.TombstoneSeen{Offset: r.Offset, Timestamp: r.Timestamp, DeleteHorizon: horizon})
			}
		}
		fr.through = base + int64(int32(binary.BigEndian.Uint32(raw[23:27]))) + 1
		raw = raw[12+length:]
	}
	fr.cut = cutHeader(rp.RecordBatches)
	fr.markers = controlStamps(rp.RecordBatches)
	return fr
}

// tombstoneScan is what fr shows of the tombstones at and after
// committed (proof.TombstoneScan); nil when it decoded nothing there.
func (fr fetchedRecords) tombstoneScan(committed int64, allowance time.Duration) *proof.TombstoneScan {
	if fr.fetchedAt.IsZero() || fr.through <= committed {
		return nil
	}
	s := &proof.TombstoneScan{
		From: committed, Through: fr.through, ReachesEnd: fr.hw >= 0 && fr.through >= fr.hw,
		FetchedAt: fr.fetchedAt, CleaningAllowance: allowance,
	}
	for _, t := range fr.tombstones {
		if t.Offset >= committed {
			s.Found = append(s.Found, t)
		}
	}
	// The batch cut where the decoding stopped starts with the first
	// record not decoded: its header dates it, unless a cleaning put its
	// delete horizon there.
	if h := fr.cut; h.ok && h.base == fr.through && !h.controlOnly && !h.deleteHorizon && h.first.UnixMilli() > 0 {
		s.NextTimestamp = h.first
		if h.appendTime {
			s.NextTimestamp = h.max
		}
	}
	return s
}

// markerBefore is the latest timestamp of the transaction markers before
// committed (a marker at n−1 ends the transaction a consumer read up to
// n): the partition leader's clock when it wrote the marker
// (KafkaApis.handleWriteTxnMarkersRequest, MemoryRecords.withEndTransactionMarker;
// LogAppendTime restamps it by the same clock), which a position past it
// follows. A cut control batch's header says it as well. Zero when the
// fetch showed none.
func (fr fetchedRecords) markerBefore(committed int64) time.Time {
	var before time.Time
	for _, m := range fr.markers {
		if m.offset < committed && m.ts.After(before) {
			before = m.ts
		}
	}
	if h := fr.cut; h.ok && h.controlOnly && h.last < committed && h.max.After(before) && h.max.UnixMilli() > 0 {
		before = h.max
	}
	return before
}

// controlStamps reads the whole control batches' headers: a control batch
// holds one marker, at its last offset, stamped with the batch's max
// timestamp (the leader's write time; under LogAppendTime its append time;
// kept by the cleaner, which rewrites only the base timestamp as a delete
// horizon).
func controlStamps(raw []byte) []recordStamp {
	var out []recordStamp
	for len(raw) >= 12 {
		base := int64(binary.BigEndian.Uint64(raw[0:8]))
		length := int64(int32(binary.BigEndian.Uint32(raw[8:12])))
		if length <= 0 || 12+length > int64(len(raw)) {
			return out // cut: cutHeader reads it
		}
		if len(raw) >= batchHeaderSize && raw[16] == 2 {
			attrs := int16(binary.BigEndian.Uint16(raw[21:23]))
			maxTs := int64(binary.BigEndian.Uint64(raw[35:43]))
			if attrs&0x20 != 0 && maxTs > 0 {
				last := base + int64(int32(binary.BigEndian.Uint32(raw[23:27])))
				out = append(out, recordStamp{last, time.UnixMilli(maxTs)})
			}
		}
		raw = raw[12+length:]
	}
	return out
}

// around returns the timestamp of the record at committed (the first at or
// after it) and the best lower bound on the commit time from the records
// before it (the latest timestamp among them); zero where the fetch did not
// show them.
func (fr fetchedRecords) around(committed int64) (at, before time.Time) {
	for _, r := range fr.records {
		switch {
		case r.offset < committed:
			if r.ts.After(before) {
				before = r.ts
			}
		case at.IsZero():
			at = r.ts
		}
	}
	h := fr.cut
	if !h.ok || h.controlOnly {
		return at, before
	}
	stamp := h.first
	switch {
	case h.appendTime:
		stamp = h.max
	case h.deleteHorizon:
		// The header's first timestamp is the horizon, in the future of
		// the records: it would stretch the headroom and date commits
		// late. Nothing in the header is a record's CreateTime.
		return at, before
	}
	if h.base < committed && before.IsZero() {
		before = stamp
	}
	if h.last >= committed && at.IsZero() {
		at = stamp
	}
	return at, before
}

// cutHeader reads the header of the first batch cut short by the byte
// limit, after the whole ones.
func cutHeader(raw []byte) batchHeader {
	for len(raw) >= 12 {
		base := int64(binary.BigEndian.Uint64(raw[0:8]))
		length := int64(int32(binary.BigEndian.Uint32(raw[8:12])))
		if length <= 0 {
			return batchHeader{}
		}
		if 12+length <= int64(len(raw)) {
			raw = raw[12+length:] // whole batch, already decoded
			continue
		}
		if len(raw) < batchHeaderSize || raw[16] != 2 {
			return batchHeader{}
		}
		attrs := int16(binary.BigEndian.Uint16(raw[21:23]))
		return batchHeader{
			ok:            true,
			base:          base,
			last:          base + int64(int32(binary.BigEndian.Uint32(raw[23:27]))),
			first:         time.UnixMilli(int64(binary.BigEndian.Uint64(raw[27:35]))),
			max:           time.UnixMilli(int64(binary.BigEndian.Uint64(raw[35:43]))),
			appendTime:    attrs&0x08 != 0,
			controlOnly:   attrs&0x20 != 0,
			deleteHorizon: attrs&0x40 != 0,
		}
	}
	return batchHeader{}
}
