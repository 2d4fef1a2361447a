package kafka

import (
	"context"
	"time"
)

// Where a diverged consumer rewinds to (issue 32). A commit whose leader
// epoch ends, on the partition's leader, inside the log and below the
// committed offset (proof.ReasonCommittedEpochDiverged) is validated by
// the Java consumer on restart, which rewinds to the epoch's end and
// re-reads from there: the record at that end is the oldest it has not
// read, and the proof measures the partition's headroom from its
// timestamp (proof.PartitionObservation.RewindTimestamp). Its end is
// known only once OffsetsForLeaderEpoch answered (epochs.go), which runs
// beside the committed records' Fetch (timestamps.go), so the record is
// read after both, with the same raw Fetch: one per partition leader for
// all such partitions (a round per distinct end of one partition, and a
// re-ask per partition whose batch the broker skipped), and none when no
// commit diverged, the common case. A failure leaves the timestamp zero:
// the partition has no headroom, and its message says so.

// rewindWants is, per partition leader, the epoch ends to read the record
// at (inside the log, below the group's committed offset, which is at or
// below the log end), and which groups rewind there.
func (p *pass) rewindWants() (map[int32]map[topicPartition][]int64, map[timestampWant][]commitNeeds) {
	byLeader := make(map[int32]map[topicPartition][]int64)
	needers := make(map[timestampWant][]commitNeeds)
	for _, g := range p.groups {
		gs := p.groupInfo[g]
		for tp, c := range gs.committed {
			ts := p.topics[tp.Topic]
			if ts == nil {
				continue
			}
			ps := ts.partitions[tp.Partition]
			if ps == nil || !ps.usable || ps.logStart < 0 || c > ps.logEnd {
				continue
			}
			e := p.commitEpoch(gs, tp)
			if !e.HasEpoch || !e.EndKnown || e.EndEpoch < 0 || e.EndOffset < ps.logStart || e.EndOffset >= c {
				continue
			}
			w := timestampWant{tp, e.EndOffset}
			if _, ok := needers[w]; !ok {
				if byLeader[ps.leader] == nil {
					byLeader[ps.leader] = make(map[topicPartition][]int64)
				}
				byLeader[ps.leader][tp] = append(byLeader[ps.leader][tp], e.EndOffset)
			}
			needers[w] = append(needers[w], commitNeeds{group: g, committed: c, target: -1})
		}
	}
	return byLeader, needers
}

// fetchRewindTimestamps reads the records diverged consumers rewind to.
func (p *pass) fetchRewindTimestamps(ctx context.Context) {
	byLeader, needers := p.rewindWants()
	if len(needers) == 0 {
		return
	}
	found, denied, _ := p.fetchByLeader(ctx, byLeader)
	p.mu.Lock()
	missing := foldRewindTimestamps(p.groupInfo, needers, found)
	p.mu.Unlock()
	if missing > 0 || len(denied) > 0 {
		p.o.opts.logger.V(1).Info("records where diverged consumers rewind to not dated: their partitions have no recovery headroom",
			"connection", p.conn.String(), "partitions", missing, "deniedTopics", sortedKeys(denied))
	}
}

// foldRewindTimestamps keeps, for each group that rewinds to w, the
// timestamp of the record at w's offset (the first at or after it, as
// for the committed record), and returns how many wants were not dated.
func foldRewindTimestamps(groups map[string]*groupState, needers map[timestampWant][]commitNeeds, found map[timestampWant]fetchedRecords) (missing int) {
	for w, needs := range needers {
		at, _ := found[w].around(w.offset)
		if at.IsZero() {
			missing++
			continue
		}
		for _, n := range needs {
			gs := groups[n.group]
			if gs.rewind == nil {
				gs.rewind = make(map[topicPartition]time.Time)
			}
			gs.rewind[w.tp] = at
		}
	}
	return missing
}
