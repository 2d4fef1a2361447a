package kafka

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/retentionguard/retention-guard/internal/groupmemory"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// CursorReader reads a consumer's business cursor from its own database
// (internal/cursor.Query). It lives outside this package; the pass only
// decides when it is read.
type CursorReader interface {
	// Key identifies what a read returns (no secrets): targets are keyed
	// by it, and equal keys are read once per pass.
	Key() string
	// ReadCursor reads the cursor; whatever goes wrong is the
	// observation's Problem.
	ReadCursor(ctx context.Context) proof.CursorObservation
}

// observeTargets returns the pass's observation of every target, giving
// each to deliver (when set) as soon as it is complete. Targets without a
// business cursor are complete once the pass has run. Those with one are
// finished in a cursor pass each (one per cursor key: equal keys are read
// once), concurrently: its cursor is read, then the log end of its topics
// again, then the record timestamps at the cursor. The order the proof
// needs is kept per target (log start, committed offsets, cursor, log end:
// a live consumer writes its cursor past a log end read a moment earlier,
// so a cursor read after the log end could look "beyond log end" on any
// busy topic; read before it, the log end can only be at or past it; read
// after the log start, a cursor below it really was below it), and no
// target waits for another tenant's database.
func (p *pass) observeTargets(ctx context.Context, deliver func(int, Observed)) []Observed {
	out := make([]Observed, len(p.targets))
	byKey := map[string][]int{}
	var keys []string
	for i, t := range p.targets {
		if t.Cursor == nil || !p.answered {
			out[i] = p.observed(i)
			if deliver != nil {
				deliver(i, out[i])
			}
			continue
		}
		k := t.Cursor.Key()
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], i)
	}
	var wg sync.WaitGroup
	for _, k := range keys {
		idx := byKey[k]
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := p.cursorPass(idx)
			q.readCursors(ctx)
			q.listEndOffsets(ctx)
			q.fetchCommittedTimestamps(ctx)
			for j, i := range idx {
				out[i] = q.observed(j) // each index written by one goroutine only
				if deliver != nil {
					deliver(i, out[i])
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// cursorPass is the rest of the pass for the targets at idx, which share
// one cursor key: what the pass read before its log end (metadata,
// configs, group states, log start and committed offsets of their topics,
// the group memory, __consumer_offsets, failures), and the log end and
// record timestamps still to read.
func (p *pass) cursorPass(idx []int) *pass {
	q := &pass{
		o: p.o, cl: p.cl, sasl: p.sasl, conn: p.conn, now: p.now, answered: true,
		brokers: p.brokers, topicIDs: p.topicIDs,
		offsetsRetention: p.offsetsRetention, brokerRetention: p.brokerRetention, transactions: p.transactions,
		topics:       make(map[string]*topicState),
		groupTopics:  make(map[string][]string),
		groupInfo:    make(map[string]*groupState),
		recall:       make(map[string]groupmemory.Recall),
		offsetsTopic: p.offsetsTopic,
		cursors:      make([]cursorRead, len(idx)),
	}
	p.mu.Lock()
	q.failures = slices.Clone(p.failures)
	p.mu.Unlock()
	for _, i := range idx {
		t := p.targets[i]
		q.targets = append(q.targets, t)
		for _, name := range t.Topics {
			if _, ok := q.topics[name]; ok {
				continue
			}
			ts := *p.topics[name]
			ts.partitions = make(map[int32]*partitionState, len(ts.partitions))
			for id, ps := range p.topics[name].partitions {
				c := *ps
				c.logEnd = -1 // read again, after the cursor
				ts.partitions[id] = &c
			}
			q.topics[name] = &ts
		}
		gs, ok := p.groupInfo[t.Group]
		if !ok {
			continue
		}
		if _, ok := q.groupInfo[t.Group]; !ok {
			q.groups = append(q.groups, t.Group)
			c := *gs
			c.committed = make(map[topicPartition]int64)
			c.timestamps = make(map[topicPartition]time.Time)
			c.preceding = make(map[topicPartition]time.Time)
			c.precedingMarker = nil
			// The maps this pass writes are its own: the pass it was cut
			// from is read (Observed) while it runs.
			c.tombstones, c.unread = maps.Clone(gs.tombstones), maps.Clone(gs.unread)
			q.groupInfo[t.Group] = &c
			q.recall[t.Group] = p.recall[t.Group]
		}
		c := q.groupInfo[t.Group]
		for tp, off := range gs.committed {
			if slices.Contains(t.Topics, tp.Topic) {
				c.committed[tp] = off
			}
		}
		for _, name := range t.Topics {
			if !slices.Contains(q.groupTopics[t.Group], name) {
				q.groupTopics[t.Group] = append(q.groupTopics[t.Group], name)
			}
		}
	}
	q.sortGroups()
	return q
}

// readCursors reads the business cursor of every target of a cursor pass
// (one key: one read), between the committed offsets and the log end (see
// observeTargets).
func (p *pass) readCursors(ctx context.Context) {
	if len(p.targets) == 0 {
		return
	}
	start := time.Now()
	obs := p.targets[0].Cursor.ReadCursor(ctx)
	p.mu.Lock()
	for i := range p.targets {
		p.cursors[i] = cursorRead{obs: obs, read: true}
	}
	p.mu.Unlock()
	p.o.opts.logger.V(1).Info("read a business cursor", "connection", p.conn.String(), "targets", len(p.targets), "took", time.Since(start).String())
}

// cursorRead is one target's cursor as read in this pass.
type cursorRead struct {
	obs  proof.CursorObservation
	read bool
	// timestamps of the records at the cursor, for headroom from it.
	timestamps map[topicPartition]time.Time
}

// cursorOffsets are the partitions a target's cursor names that hold a
// record at the cursor (log start ≤ cursor < log end): their record
// timestamps are fetched with the committed offsets'. Rows the proof will
// refuse (unknown partitions, a missing topic column with several topics)
// are skipped.
func (p *pass) cursorOffsets(i int) map[topicPartition]int64 {
	c := p.cursors[i]
	if !c.read || !c.obs.Read {
		return nil
	}
	topics := slices.Clone(p.targets[i].Topics)
	slices.Sort(topics)
	topics = slices.Compact(topics)
	out := map[topicPartition]int64{}
	for _, row := range c.obs.Rows {
		topic := row.Topic
		if !c.obs.HasTopic {
			if len(topics) != 1 {
				return nil
			}
			topic = topics[0]
		}
		ts := p.topics[topic]
		if ts == nil || row.Partition < 0 || row.Partition > 1<<31-1 {
			continue
		}
		ps := ts.partitions[int32(row.Partition)]
		if ps == nil || !ps.usable || ps.logStart < 0 || row.NextOffset < ps.logStart || row.NextOffset >= ps.logEnd {
			continue
		}
		out[topicPartition{Topic: topic, Partition: int32(row.Partition)}] = row.NextOffset
	}
	return out
}
