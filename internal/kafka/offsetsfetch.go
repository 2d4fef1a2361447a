package kafka

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// The fetcher: the requests that read __consumer_offsets (Metadata,
// ListOffsets, Fetch) and feed each cluster's log state (offsetslog.go).

// offsetsFetchBytes bounds one partition's share of a Fetch, and
// offsetsFetchRequestBytes the whole answer, whatever the number of
// partitions asked: kgo reads each answer into a buffer of its own, so an
// answer is garbage the size of itself once folded, and 50 partitions at
// 1 MiB each made answers of up to 50 MiB during a catch-up, which set the
// process's peak (docs/benchmarks.md). The broker fills the partitions in
// the order asked up to the bound (at least one batch, KIP-74); the
// partitions it left out are asked again in the next request: a catch-up
// takes more requests, of smaller answers.
const (
	offsetsFetchBytes        = 1 << 20
	offsetsFetchRequestBytes = 4 << 20
)

// offsetsLogTTL drops what a cluster read when no pass asked for it since.
const offsetsLogTTL = 24 * time.Hour

// offsetsLog is what the observer has read of __consumer_offsets, per
// cluster.
type offsetsLog struct {
	mu       sync.Mutex
	clusters map[string]*clusterOffsetsLog
}

// clusterOffsetsLog is one cluster's log state and the lock that lets one
// pass at a time read and fold it.
type clusterOffsetsLog struct {
	mu       sync.Mutex // one reader at a time per cluster
	state    *offsetsLogState
	lastUsed time.Time
}

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
		c = &clusterOffsetsLog{state: newOffsetsLogState()}
		l.clusters[key] = c
	}
	c.lastUsed = now
	return c
}

// readOffsetsTopic reads, for the groups whose targets ask for it, the
// commit records and group metadata from __consumer_offsets.
func (p *pass) readOffsetsTopic(ctx context.Context) {
	var groups []string
	for _, t := range p.targets {
		if t.ReadOffsetsTopic {
			groups = append(groups, t.Group)
		}
	}
	if p.discover != nil && p.discover.ReadOffsetsTopic {
		for _, d := range p.discovered {
			if len(d.topics) > 0 {
				groups = append(groups, d.group)
			}
		}
	}
	if len(groups) == 0 {
		return
	}
	slices.Sort(groups)
	groups = slices.Compact(groups)
	res := p.readOffsetsTopicFor(ctx, groups)
	if res.problem.text != "" {
		p.o.opts.logger.V(1).Info("exact commit times not read from __consumer_offsets; commit times are bounded instead",
			"connection", p.conn.String(), "reason", res.problem.reason, "problem", res.problem.text)
	}
	p.offsetsTopic = res
}

// offsetsTopicProblem says why __consumer_offsets was not read to its end:
// a reason (proof.OffsetsTopic…, data the proof and the status carry) and
// the detail for a person.
type offsetsTopicProblem struct {
	reason string
	text   string
}

func notRead(format string, args ...any) offsetsTopicProblem {
	return offsetsTopicProblem{reason: proof.OffsetsTopicNotRead, text: fmt.Sprintf(format, args...)}
}

func (p *pass) readOffsetsTopicFor(ctx context.Context, groups []string) offsetsTopicResult {
	res := offsetsTopicResult{groups: make(map[string]groupRecords)}
	// Metadata of the topic: partitions, leaders, ID.
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(offsetsTopicName)
	req.Topics = []kmsg.MetadataRequestTopic{rt}
	resp, err := req.RequestWith(ctx, p.cl)
	if err != nil {
		res.problem = notRead("metadata of %s: %s", offsetsTopicName, describeError(err))
		return res
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		code := kerr.UnknownTopicOrPartition.Code
		if len(resp.Topics) == 1 {
			code = resp.Topics[0].ErrorCode
		}
		if code == kerr.UnknownTopicOrPartition.Code {
			// Kafka creates the topic at the first FindCoordinator
			// (GroupCoordinator's partitionFor, auto-created): absent, no
			// group of this cluster has committed yet, or the cluster is
			// a service that speaks Kafka's protocol without the topic.
			res.problem = offsetsTopicProblem{reason: proof.OffsetsTopicAbsent,
				text: "the cluster has no topic " + offsetsTopicName + " (Metadata: UNKNOWN_TOPIC_OR_PARTITION)"}
			return res
		}
		res.problem = offsetsTopicDenied(kerr.ErrorForCode(code), "Metadata")
		return res
	}
	mt := resp.Topics[0]
	n := int32(len(mt.Partitions))
	if n == 0 {
		res.problem = notRead("%s has no partitions", offsetsTopicName)
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
	followed := make(map[int32]*offsetsLogPartition, len(byPartition))
	byLeader := make(map[int32][]*offsetsLogPartition)
	for pt, gs := range byPartition {
		lp := cl.state.follow(pt, gs)
		followed[pt] = lp
		leader, ok := leaders[pt]
		if !ok || leader < 0 {
			res.problem = notRead("partition %d of %s has no leader", pt, offsetsTopicName)
			return res
		}
		byLeader[leader] = append(byLeader[leader], lp)
	}

	// One Fetch loop per leader, each on partitions of its own.
	var (
		mu       sync.Mutex
		problems []offsetsTopicProblem
		wg       sync.WaitGroup
	)
	for leader, lps := range byLeader {
		wg.Add(1)
		go func() {
			defer wg.Done()
			problem, ahead := p.catchUp(ctx, leader, mt.TopicID, lps)
			mu.Lock()
			if problem.text != "" {
				problems = append(problems, problem)
			}
			res.coordinatorAhead = max(res.coordinatorAhead, ahead)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(problems) > 0 {
		// A denial first: it is the one a person can fix.
		slices.SortFunc(problems, func(a, b offsetsTopicProblem) int { return strings.Compare(a.text, b.text) })
		res.problem = problems[0]
		if i := slices.IndexFunc(problems, func(p offsetsTopicProblem) bool { return p.reason == proof.OffsetsTopicDenied }); i >= 0 {
			res.problem = problems[i]
		}
		return res
	}
	for pt, gs := range byPartition {
		for _, g := range gs {
			// A copy: the state is folded by the next pass while this
			// result is still being read (exactTimes).
			res.groups[g] = followed[pt].group(g)
		}
	}
	return res
}

// catchUp fetches the partitions led by leader until each reaches the last
// stable offset the first answer gave, or the context ends, and checks that
// the last answer's last stable offset was its high watermark (no open
// transaction held the reader back). It returns why it could not, and how
// far ahead of the observer's clock, when an answer arrived, the newest
// record of a partition read was stamped (the coordinator's clock is at
// least that far ahead; zero when not ahead).
func (p *pass) catchUp(ctx context.Context, leader int32, topicID [16]byte, lps []*offsetsLogPartition) (problem offsetsTopicProblem, ahead time.Duration) {
	problem = p.catchUpFrom(ctx, leader, topicID, lps, &ahead)
	return problem, ahead
}

func (p *pass) catchUpFrom(ctx context.Context, leader int32, topicID [16]byte, lps []*offsetsLogPartition, ahead *time.Duration) offsetsTopicProblem {
	for _, lp := range lps {
		if !lp.started() {
			start, problem := p.offsetsLogStart(ctx, lp.partition)
			if problem.text != "" {
				return problem
			}
			lp.startAt(start)
		}
	}
	c := newCatchUp(lps)
	for {
		req := c.request(topicID)
		if req == nil {
			return c.heldByTransaction()
		}
		if err := ctx.Err(); err != nil {
			return notRead("%s not read to its end before the deadline (%d partitions left); the next observation goes on",
				offsetsTopicName, len(req.Topics[0].Partitions))
		}
		kresp, err := p.cl.Broker(int(leader)).Request(ctx, req)
		if err != nil {
			return notRead("Fetch of %s from broker %d: %s", offsetsTopicName, leader, describeError(err))
		}
		progressed, outOfRange, problem := c.fold(kresp.(*kmsg.FetchResponse), time.Now(), ahead)
		for _, pt := range outOfRange {
			start, problem := p.offsetsLogStart(ctx, pt)
			if problem.text != "" {
				return problem
			}
			c.byNumber[pt].rewind(start)
		}
		if problem.text != "" {
			return problem
		}
		if !progressed {
			return c.stalled()
		}
	}
}

// catchUp is one leader's read of its __consumer_offsets partitions to the
// last stable offset its first answer gave (the goal). The requests and the
// folding of their answers; no I/O.
type catchUp struct {
	lps      []*offsetsLogPartition
	byNumber map[int32]*offsetsLogPartition
	goal     map[int32]int64
	last     map[int32]catchUpEnds // the last answer's
}

type catchUpEnds struct{ highWatermark, lastStable int64 }

func newCatchUp(lps []*offsetsLogPartition) *catchUp {
	c := &catchUp{lps: lps, byNumber: make(map[int32]*offsetsLogPartition, len(lps)),
		goal: make(map[int32]int64), last: make(map[int32]catchUpEnds)}
	for _, lp := range lps {
		c.byNumber[lp.partition] = lp
	}
	return c
}

// request asks each partition below its goal from its next offset,
// read_committed (transactional commits once committed); nil when every
// partition reached its goal.
func (c *catchUp) request(topicID [16]byte) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes = 0, 0
	req.IsolationLevel = 1
	req.SessionID, req.SessionEpoch = 0, -1
	req.MaxBytes = offsetsFetchRequestBytes
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = offsetsTopicName, topicID
	for _, lp := range c.lps {
		if g, ok := c.goal[lp.partition]; ok && lp.next >= g {
			continue
		}
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = lp.partition, lp.next, offsetsFetchBytes
		ft.Partitions = append(ft.Partitions, fp)
	}
	if len(ft.Partitions) == 0 {
		return nil
	}
	req.Topics = []kmsg.FetchRequestTopic{ft}
	return req
}

// fold applies one Fetch answer, received at received: each partition's
// records, its high watermark and last stable offset (the high watermark
// before Fetch v4: no transactions), the first answer's last stable offset
// as its goal; ahead grows to the newest commit time past received.
// outOfRange are the partitions whose log start moved past their next
// offset (to rewind; a rewind is progress). An error, or a batch that
// cannot be decoded (it may hold the latest commit: skipping it would
// leave an older commit time read as exact), is the problem.
func (c *catchUp) fold(resp *kmsg.FetchResponse, received time.Time, ahead *time.Duration) (progressed bool, outOfRange []int32, problem offsetsTopicProblem) {
	if resp.ErrorCode != 0 {
		return false, nil, offsetsTopicDenied(kerr.ErrorForCode(resp.ErrorCode), "Fetch")
	}
	for _, rt := range resp.Topics {
		for i := range rt.Partitions {
			rp := &rt.Partitions[i]
			lp := c.byNumber[rp.Partition]
			switch {
			case lp == nil:
				continue
			case rp.ErrorCode == kerr.OffsetOutOfRange.Code:
				outOfRange = append(outOfRange, rp.Partition)
				progressed = true
				continue
			case rp.ErrorCode != 0:
				return progressed, outOfRange, offsetsTopicDenied(kerr.ErrorForCode(rp.ErrorCode), "Fetch")
			}
			lastStable := rp.LastStableOffset
			if lastStable < 0 {
				lastStable = rp.HighWatermark
			}
			c.last[rp.Partition] = catchUpEnds{rp.HighWatermark, lastStable}
			if _, ok := c.goal[rp.Partition]; !ok {
				c.goal[rp.Partition] = lastStable
			}
			at := lp.next
			advanced, err := lp.apply(rp)
			if err != nil {
				return progressed, outOfRange, offsetsTopicProblem{reason: proof.OffsetsTopicUndecodable, text: fmt.Sprintf(
					"%s partition %d at offset %d: the records cannot be decoded (%v)", offsetsTopicName, rp.Partition, at, err)}
			}
			progressed = progressed || advanced
			if d := lp.newest.Sub(received); d > *ahead {
				*ahead = d
			}
		}
	}
	return progressed, outOfRange, offsetsTopicProblem{}
}

// stalled is the end of a catch-up that an answer did not move: nothing
// new below the goal (an empty answer), caught up as far as the broker
// serves.
func (c *catchUp) stalled() offsetsTopicProblem {
	for _, lp := range c.lps {
		if g, ok := c.goal[lp.partition]; ok && lp.next < g {
			return notRead("%s partition %d: the broker returned nothing between offset %d and %d",
				offsetsTopicName, lp.partition, lp.next, g)
		}
	}
	return c.heldByTransaction()
}

// heldByTransaction says when an open transaction holds a partition's last
// stable offset below its high watermark, as the last answer gave them.
func (c *catchUp) heldByTransaction() offsetsTopicProblem {
	for _, lp := range c.lps {
		if e, ok := c.last[lp.partition]; ok {
			if problem := lp.heldByTransaction(e.highWatermark, e.lastStable); problem != "" {
				return notRead("%s", problem)
			}
		}
	}
	return offsetsTopicProblem{}
}

// offsetsLogStart asks the partition's log start.
func (p *pass) offsetsLogStart(ctx context.Context, pt int32) (int64, offsetsTopicProblem) {
	req := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = offsetsTopicName
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Partition, lp.Timestamp = pt, listEarliest
	lt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{lp}
	req.Topics = []kmsg.ListOffsetsRequestTopic{lt}
	resp, err := req.RequestWith(ctx, p.cl)
	if err != nil {
		return 0, notRead("log start of %s partition %d: %s", offsetsTopicName, pt, describeError(err))
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.Partition != pt {
				continue
			}
			if rp.ErrorCode != 0 {
				return 0, offsetsTopicDenied(kerr.ErrorForCode(rp.ErrorCode), "ListOffsets")
			}
			return rp.Offset, offsetsTopicProblem{}
		}
	}
	return 0, notRead("log start of %s partition %d: the broker's answer left it out", offsetsTopicName, pt)
}

// offsetsTopicDenied explains a failed request on __consumer_offsets: an
// authorization failure is OffsetsTopicDenied (Metadata and ListOffsets
// need Describe on the topic, Fetch needs Read: Kafka's
// KafkaApis.handleFetchRequest, handleListOffsetRequest), anything else
// OffsetsTopicNotRead.
func offsetsTopicDenied(err error, api string) offsetsTopicProblem {
	if isAuthorization(err) {
		return offsetsTopicProblem{reason: proof.OffsetsTopicDenied, text: fmt.Sprintf(
			"%s on %s denied (%s): the principal needs Read on topic %s", api, offsetsTopicName, kerrName(err), offsetsTopicName)}
	}
	return notRead("%s on %s: %s", api, offsetsTopicName, describeError(err))
}
