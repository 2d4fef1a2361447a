package kafka

import (
	"context"
	"slices"
	"sync"
	"time"

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

// readCursors reads the business cursor of every target that has one,
// concurrently, once per key. The pass calls it between the committed
// offsets and the log end, for the reason those two are read in that
// order: a live consumer writes its cursor past the log end read a moment
// earlier, so a cursor read after the log end could look "beyond log end"
// on any busy topic; read before it, the log end can only be at or past
// it. Read after the log start, a cursor below it really was below it.
func (p *pass) readCursors(ctx context.Context) {
	byKey := map[string][]int{}
	var keys []string
	for i, t := range p.targets {
		if t.Cursor == nil {
			continue
		}
		k := t.Cursor.Key()
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], i)
	}
	if len(keys) == 0 {
		return
	}
	start := time.Now()
	var wg sync.WaitGroup
	for _, k := range keys {
		idx := byKey[k]
		wg.Add(1)
		go func() {
			defer wg.Done()
			obs := p.targets[idx[0]].Cursor.ReadCursor(ctx)
			p.mu.Lock()
			for _, i := range idx {
				p.cursors[i] = cursorRead{obs: obs, read: true}
			}
			p.mu.Unlock()
		}()
	}
	wg.Wait()
	p.o.opts.logger.V(1).Info("read business cursors", "connection", p.conn.String(), "cursors", len(keys), "took", time.Since(start).String())
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
		out[topicPartition{topic, int32(row.Partition)}] = row.NextOffset
	}
	return out
}
