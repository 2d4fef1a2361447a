package kafka

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// Exact commit times, from __consumer_offsets (opt-in: Target.ReadOffsetsTopic).
//
// The group coordinator writes every offset commit to the compacted topic
// __consumer_offsets as a record keyed by (group, topic, partition) whose
// value carries commitTimestamp — the time offsets.retention.minutes is
// counted from for offsets that expire per commit — and every classic
// group's metadata with currentStateTimestamp — when an Empty group became
// Empty (Kafka's GroupCoordinatorRecordHelpers; OffsetCommitValue v0–v4,
// GroupMetadataValue v2+). Reading it is what Burrow does; it needs Read on
// the topic, which many platforms do not grant, hence opt-in.
//
// A group's records live in one partition, Utils.abs(groupId.hashCode()) %
// partitions (Kafka's GroupCoordinatorService.partitionFor). The observer
// reads the partitions of the groups that ask, from the log start, and then
// only what was appended since, pass after pass: per cluster it keeps the
// next offset to read and, for the groups asked, the latest commit record
// per partition and the latest group metadata. It reads read_committed
// (transactional commits count once committed), so it can read no further
// than the partition's last stable offset: an open transaction there
// (TxnOffsetCommit of an exactly-once producer) holds back every later
// commit of every group of the partition. A time is exact only when the
// reader reached the high watermark. A pass that does not (an open
// transaction, a deadline, a batch it cannot decode) reports no exact
// times (the proof bounds them instead) and goes on from there next time.
// A group asked for the first time rewinds its partition to the log start.
//
// What was read is shared by every pass on the cluster (a live check at a
// start runs beside the periodic pass; connections differing only in
// credentials share it): a result holds copies made under the cluster's
// lock, never the maps a later pass writes.

const offsetsTopicName = "__consumer_offsets"

// offsetsFetchBytes bounds one partition's share of a Fetch.
const offsetsFetchBytes = 1 << 20

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

// offsetsLog is what the observer has read of __consumer_offsets, per
// cluster.
type offsetsLog struct {
	mu       sync.Mutex
	clusters map[string]*clusterOffsetsLog
}

type clusterOffsetsLog struct {
	mu         sync.Mutex // one reader at a time per cluster
	partitions map[int32]*offsetsLogPartition
	lastUsed   time.Time
}

// offsetsLogPartition is one partition of __consumer_offsets as read so far.
type offsetsLogPartition struct {
	next    int64 // the next offset to read; -1: from the log start
	groups  map[string]bool
	commits map[string]map[topicPartition]commitRecord
	meta    map[string]groupMetadataRecord
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

// offsetsLogTTL drops what a cluster read when no pass asked for it since.
const offsetsLogTTL = 24 * time.Hour

func (l *offsetsLog) cluster(key string, now time.Time) *clusterOffsetsLog {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.clusters == nil {
		l.clusters = make(map[string]*clusterOffsetsLog)
	}
	for k, c := range l.clusters {
		if now.Sub(c.lastUsed) > offsetsLogTTL {
			delete(l.clusters, k)
		}
	}
	c := l.clusters[key]
	if c == nil {
		c = &clusterOffsetsLog{partitions: make(map[int32]*offsetsLogPartition)}
		l.clusters[key] = c
	}
	c.lastUsed = now
	return c
}

// offsetsTopicResult is what one pass learned from __consumer_offsets.
type offsetsTopicResult struct {
	problem string // why exact times are missing; empty when read
	// per group: commit records and metadata, only when caught up
	commits map[string]map[topicPartition]commitRecord
	meta    map[string]groupMetadataRecord
}

// readOffsetsTopic reads, for the groups whose targets ask for it, the
// commit records and group metadata from __consumer_offsets.
func (p *pass) readOffsetsTopic(ctx context.Context) {
	var groups []string
	for _, t := range p.targets {
		if t.ReadOffsetsTopic && !slices.Contains(groups, t.Group) {
			groups = append(groups, t.Group)
		}
	}
	if len(groups) == 0 {
		return
	}
	slices.Sort(groups)
	res := p.readOffsetsTopicFor(ctx, groups)
	if res.problem != "" {
		p.o.opts.logger.V(1).Info("exact commit times not read from __consumer_offsets; commit times are bounded instead",
			"connection", p.conn.String(), "problem", res.problem)
	}
	p.offsetsTopic = res
}

func (p *pass) readOffsetsTopicFor(ctx context.Context, groups []string) offsetsTopicResult {
	res := offsetsTopicResult{
		commits: make(map[string]map[topicPartition]commitRecord),
		meta:    make(map[string]groupMetadataRecord),
	}
	// Metadata of the topic: partitions, leaders, ID.
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(offsetsTopicName)
	req.Topics = []kmsg.MetadataRequestTopic{rt}
	resp, err := req.RequestWith(ctx, p.cl)
	if err != nil {
		res.problem = "metadata of " + offsetsTopicName + ": " + describeError(err)
		return res
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		code := kerr.UnknownTopicOrPartition.Code
		if len(resp.Topics) == 1 {
			code = resp.Topics[0].ErrorCode
		}
		res.problem = offsetsTopicDenied(kerr.ErrorForCode(code), "Metadata")
		return res
	}
	mt := resp.Topics[0]
	n := int32(len(mt.Partitions))
	if n == 0 {
		res.problem = offsetsTopicName + " has no partitions"
		return res
	}
	leaders := make(map[int32]int32, n)
	for _, mp := range mt.Partitions {
		leaders[mp.Partition] = mp.Leader
	}
	byPartition := make(map[int32][]string)
	for _, g := range groups {
		pt := partitionForGroup(g, n)
		byPartition[pt] = append(byPartition[pt], g)
	}

	cl := p.o.offsetsLog.cluster(p.conn.clusterKey(), p.now)
	cl.mu.Lock()
	defer cl.mu.Unlock()
	byLeader := make(map[int32][]int32)
	for pt, gs := range byPartition {
		lp := cl.partitions[pt]
		if lp == nil {
			lp = &offsetsLogPartition{next: -1}
			cl.partitions[pt] = lp
		}
		for _, g := range gs {
			if !lp.groups[g] {
				// A group asked for the first time: its records may
				// lie anywhere in the log. Read the partition again.
				lp.reset(gs)
				break
			}
		}
		leader, ok := leaders[pt]
		if !ok || leader < 0 {
			res.problem = fmt.Sprintf("partition %d of %s has no leader", pt, offsetsTopicName)
			return res
		}
		byLeader[leader] = append(byLeader[leader], pt)
	}

	var (
		mu       sync.Mutex
		problems []string
		wg       sync.WaitGroup
	)
	for leader, pts := range byLeader {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if problem := p.catchUp(ctx, leader, mt.TopicID, pts, cl); problem != "" {
				mu.Lock()
				problems = append(problems, problem)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(problems) > 0 {
		slices.Sort(problems)
		res.problem = problems[0]
		return res
	}
	for pt, gs := range byPartition {
		lp := cl.partitions[pt]
		for _, g := range gs {
			// A copy: the live map is written by the next pass, while
			// this result is still being read (exactTimes).
			res.commits[g] = maps.Clone(lp.commits[g])
			if m, ok := lp.meta[g]; ok {
				res.meta[g] = m
			}
		}
	}
	return res
}

// reset makes the partition be read again from its log start, for groups.
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

// catchUp fetches the partitions led by leader until each reaches the last
// stable offset the first answer gave, or the context ends, and checks that
// the last answer's last stable offset was its high watermark (no open
// transaction held the reader back). It returns why it could not.
func (p *pass) catchUp(ctx context.Context, leader int32, topicID [16]byte, pts []int32, cl *clusterOffsetsLog) string {
	goal := make(map[int32]int64)
	// Per partition, the last answer's high watermark and last stable
	// offset.
	type ends struct{ highWatermark, lastStable int64 }
	last := make(map[int32]ends)
	for _, pt := range pts {
		if cl.partitions[pt].next < 0 {
			start, problem := p.offsetsLogStart(ctx, pt)
			if problem != "" {
				return problem
			}
			cl.partitions[pt].next = start
		}
	}
	for {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes = 0, 0
		req.IsolationLevel = 1 // read_committed: transactional commits once committed
		req.SessionID, req.SessionEpoch = 0, -1
		req.MaxBytes = offsetsFetchBytes * int32(len(pts))
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = offsetsTopicName, topicID
		for _, pt := range pts {
			lp := cl.partitions[pt]
			if g, ok := goal[pt]; ok && lp.next >= g {
				continue
			}
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = pt, lp.next, offsetsFetchBytes
			ft.Partitions = append(ft.Partitions, fp)
		}
		if len(ft.Partitions) == 0 {
			return openTransaction(pts, cl, func(pt int32) (int64, int64, bool) {
				e, ok := last[pt]
				return e.highWatermark, e.lastStable, ok
			})
		}
		if err := ctx.Err(); err != nil {
			return fmt.Sprintf("%s not read to its end before the deadline (%d partitions left); the next observation goes on",
				offsetsTopicName, len(ft.Partitions))
		}
		req.Topics = []kmsg.FetchRequestTopic{ft}
		kresp, err := p.cl.Broker(int(leader)).Request(ctx, req)
		if err != nil {
			return fmt.Sprintf("Fetch of %s from broker %d: %s", offsetsTopicName, leader, describeError(err))
		}
		resp := kresp.(*kmsg.FetchResponse)
		if resp.ErrorCode != 0 {
			return offsetsTopicDenied(kerr.ErrorForCode(resp.ErrorCode), "Fetch")
		}
		progressed := false
		for _, rt := range resp.Topics {
			for i := range rt.Partitions {
				rp := &rt.Partitions[i]
				lp := cl.partitions[rp.Partition]
				if lp == nil {
					continue
				}
				switch {
				case rp.ErrorCode == kerr.OffsetOutOfRange.Code:
					start, problem := p.offsetsLogStart(ctx, rp.Partition)
					if problem != "" {
						return problem
					}
					lp.reset(groupsOf(lp))
					lp.next = start
					progressed = true
					continue
				case rp.ErrorCode != 0:
					return offsetsTopicDenied(kerr.ErrorForCode(rp.ErrorCode), "Fetch")
				}
				lastStable := rp.LastStableOffset
				if lastStable < 0 { // Fetch before v4: no transactions
					lastStable = rp.HighWatermark
				}
				last[rp.Partition] = ends{rp.HighWatermark, lastStable}
				if _, ok := goal[rp.Partition]; !ok {
					goal[rp.Partition] = lastStable
				}
				next, err := lp.apply(rp)
				if err != nil {
					// A batch that cannot be decoded (CRC, compression) may
					// hold the latest commit: skipping it would leave an
					// older commit time read as exact.
					return fmt.Sprintf("%s partition %d at offset %d: the records cannot be decoded (%v)",
						offsetsTopicName, rp.Partition, lp.next, err)
				}
				if next > lp.next {
					lp.next = next
					progressed = true
				}
			}
		}
		if !progressed {
			// Nothing new below the goal (an empty answer): caught up as
			// far as the broker serves.
			for _, pt := range pts {
				if g, ok := goal[pt]; ok && cl.partitions[pt].next < g {
					return fmt.Sprintf("%s partition %d: the broker returned nothing between offset %d and %d",
						offsetsTopicName, pt, cl.partitions[pt].next, g)
				}
			}
			return openTransaction(pts, cl, func(pt int32) (int64, int64, bool) {
				e, ok := last[pt]
				return e.highWatermark, e.lastStable, ok
			})
		}
	}
}

// openTransaction tells why a partition read to its last stable offset is
// still not read to its end: an open transaction holds the last stable
// offset below the high watermark, and read_committed serves nothing past
// it, so commits written after the transaction began (of any group of the
// partition) are unread, and a re-commit of the same offset would be
// judged on the older commit's time. Empty when every partition was read to
// its high watermark.
func openTransaction(pts []int32, cl *clusterOffsetsLog, ends func(int32) (highWatermark, lastStable int64, ok bool)) string {
	for _, pt := range pts {
		hw, ls, ok := ends(pt)
		if ok && ls < hw && cl.partitions[pt].next < hw {
			return fmt.Sprintf("%s partition %d: an open transaction holds its last stable offset at %d, below its high watermark %d; the commits after it are unread until the transaction ends",
				offsetsTopicName, pt, ls, hw)
		}
	}
	return ""
}

func groupsOf(lp *offsetsLogPartition) []string {
	var gs []string
	for g := range lp.groups {
		gs = append(gs, g)
	}
	return gs
}

// offsetsLogStart asks the partition's log start.
func (p *pass) offsetsLogStart(ctx context.Context, pt int32) (int64, string) {
	req := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = offsetsTopicName
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Partition, lp.Timestamp = pt, listEarliest
	lt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{lp}
	req.Topics = []kmsg.ListOffsetsRequestTopic{lt}
	resp, err := req.RequestWith(ctx, p.cl)
	if err != nil {
		return 0, fmt.Sprintf("log start of %s partition %d: %s", offsetsTopicName, pt, describeError(err))
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.Partition != pt {
				continue
			}
			if rp.ErrorCode != 0 {
				return 0, offsetsTopicDenied(kerr.ErrorForCode(rp.ErrorCode), "ListOffsets")
			}
			return rp.Offset, ""
		}
	}
	return 0, fmt.Sprintf("log start of %s partition %d: the broker's answer left it out", offsetsTopicName, pt)
}

// offsetsTopicDenied explains a failed request on __consumer_offsets.
func offsetsTopicDenied(err error, api string) string {
	if isAuthorization(err) {
		return fmt.Sprintf("%s on %s denied (%s): the principal needs Read and Describe on topic %s",
			api, offsetsTopicName, kerrName(err), offsetsTopicName)
	}
	return fmt.Sprintf("%s on %s: %s", api, offsetsTopicName, describeError(err))
}

// apply folds a fetched partition into what was read and returns the next
// offset to read: past the last whole batch (control batches and aborted
// transactions included). A batch it cannot decode is an error, and
// nothing of the answer is folded: the next pass reads it again.
func (lp *offsetsLogPartition) apply(rp *kmsg.FetchResponseTopicPartition) (int64, error) {
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
		Offset:         lp.next,
		Topic:          offsetsTopicName,
		Partition:      rp.Partition,
		IsolationLevel: kgo.ReadCommitted(),
	}, rp, kgo.DefaultDecompressor(), nil)
	if fp.Err != nil {
		return lp.next, fp.Err
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
	return next, nil
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
		tp := topicPartition{k.Topic, k.Partition}
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

// exactTimes sets, in an observation of a group, the exact times read from
// __consumer_offsets: each partition's last commit when the record holds
// the committed offset the observation read (a commit that landed between
// the two reads leaves it bounded), and an Empty classic group's Empty
// time.
func (r *offsetsTopicResult) exactTimes(obs *proof.Observation, retention time.Duration, hasRetention bool) {
	g := obs.Group.ID
	commits := r.commits[g]
	for i := range obs.Topics {
		t := &obs.Topics[i]
		for j := range t.Partitions {
			po := &t.Partitions[j]
			c, ok := commits[topicPartition{t.Name, po.Partition}]
			if !ok || c.offset != po.Committed || po.Committed < 0 {
				continue
			}
			// An explicit expiry (OffsetCommit v2–v4 retention_time)
			// replaces the group's clock: the proof reads it as such.
			po.LastCommit, po.ExpireAt = c.commitTime, c.expireTime
			if c.topicID != ([16]byte{}) {
				po.CommitTopicID = hex.EncodeToString(c.topicID[:])
			}
		}
	}
	m, ok := r.meta[g]
	if ok && obs.Group.Protocol == proof.ProtocolClassic && obs.Group.State == proof.GroupStateEmpty &&
		m.members == 0 && !m.stateTime.IsZero() {
		obs.Group.EmptySince, obs.Group.EmptySinceExact = m.stateTime, true
	}
}
