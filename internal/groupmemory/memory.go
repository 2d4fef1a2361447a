// Package groupmemory remembers, pass after pass, what the observer saw of
// each consumer group, and dates from the transitions it witnessed what
// Kafka does not say: since when a group is Empty, after when an offset
// was committed, which offset vanished. It is reasoning over observations,
// with no I/O: internal/kafka feeds it each pass's facts (Memory.Record)
// and copies the Recall into the observation.
package groupmemory

import (
	"sync"
	"time"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// Kafka does not say since when a group is Empty, nor when an offset was
// last committed, in any answer the observer reads by default (only
// __consumer_offsets does; see internal/kafka/offsetstopic.go). The observer remembers what
// it saw, pass after pass, and derives lower bounds from the transitions it
// witnessed — lower, because the proof asks for the earliest time the
// coordinator may delete an offset, which a bound that errs early never
// overstates:
//
//   - EmptySince: a group seen in another state at t0 and Empty at t1
//     became Empty after t0 and by t1. It is t0, the last observation that
//     saw it in another state; t1 is EmptyBy, the first that saw it Empty
//     (together they make an Empty group's offset expiry certain when even
//     t1 + offsets.retention.minutes falls inside the window). Empty at t0
//     as another kind of group (a simple group, protocol type "", now a
//     classic consumer group: kcat or a console consumer read it) counts:
//     only a member joining after t0 changes it.
//   - CommittedAfter: a partition seen at offset a at t0 and b ≠ a at t1 was
//     committed after t0. It is t0, the last observation that saw the old
//     offset. A consumer that commits the same offset again is not seen, so
//     the real last commit can only be later. It is when the commit became
//     visible, not the time it carries: a transactional commit is stamped
//     when sent and shows when its transaction ends, up to
//     transaction.max.timeout.ms later, which the proof subtracts
//     (internal/proof/txncommit.go).
//   - Vanished: a partition seen at offset a and then without one lost its
//     offset (expired after offsets.retention.minutes, or deleted): the
//     observation says so, with a and the last time it was seen, until a
//     new commit appears. Without it a log that starts at 0 makes the
//     missing offset look like a fresh group's (seed 003 on a young topic).
//   - Diverged: a partition whose log end was seen at e0 and then at
//     e1 < e0 was truncated (an unclean leader election, or a topic
//     deleted and recreated). A clean leader change does not read as a
//     fall: a new leader whose high watermark has not reached the start
//     of its epoch answers ListOffsets OFFSET_NOT_AVAILABLE (KIP-207,
//     Partition.fetchOffsetForTimestamp), a failure, not a log end. It is
//     reported, with both ends and the observation that first saw the
//     fall, until the group commits another offset: an offset committed
//     without a leader epoch that lies above e1 may point past records
//     the log replaced, and no consumer validates it (proof's
//     CommittedOffsetOnDivergedLog). Only partitions whose committed
//     offset was read are followed.
//   - Witnessed epoch: the leader epoch of the first observation that read
//     a committed offset with the log end at or past it (ListOffsets
//     answers the leader's epoch with the log end). The records below the
//     offset were in that epoch's log then. Asked later where that epoch
//     ends (OffsetsForLeaderEpoch), a leader whose log diverged below the
//     offset since answers an end below it, even when the log grew back
//     between two observations and no fall was seen: the question a
//     KIP-320 consumer asks of the epoch it committed with, asked for an
//     offset committed without one (internal/kafka/epochs.go).
//
// A group or offset seen for the first time has no witnessed transition, so
// both stay zero (unknown): a one-shot observation (the CLI, a fresh
// Observer, an operator that just restarted) cannot know them and says so.
//
// Passes on one cluster overlap (a live check at a start beside the
// periodic pass) and record in the order they end, not the order they
// began; now is when a pass began. Facts older than what the memory holds
// for a state or an offset are not folded in (they would read as a
// transition after the newer observation: a bound that errs late), and an
// older pass gets no commit bound for an offset the memory no longer
// holds.
//
// Memory is keyed by the cluster (its sorted bootstrap servers, not the
// credentials: rotating a password must not forget a group's history) and
// the group. Entries not observed for TTL are dropped.
type Memory struct {
	mu       sync.Mutex
	groups   map[memoryKey]*groupEntry
	prunedAt time.Time
}

type memoryKey struct{ cluster, group string }

type groupEntry struct {
	seenState   bool
	state       string
	kind        string
	stateSeenAt time.Time // the last observation that read the state
	emptySince  time.Time // lower bound; zero unless a transition to Empty was seen
	emptyBy     time.Time // upper bound: the observation that first saw it Empty after another state
	lastSeen    time.Time
	partitions  map[TopicPartition]partitionEntry // by value: 120,000 of them at 5,000 groups
}

type partitionEntry struct {
	committed      int64
	committedAfter time.Time // lower bound on the last commit; zero unless a change was seen
	lastSeen       time.Time // the last observation that read this offset
	vanished       int64     // the offset seen before it went missing; NoOffset when none
	vanishedSeen   time.Time // the last observation that read it
	logEnd         int64     // the last log end read; NoOffset when none
	// diverged: the log end went down (from divergedFrom to divergedTo,
	// first seen at divergedSeen) since the group last changed its offset.
	diverged                 bool
	divergedFrom, divergedTo int64
	divergedSeen             time.Time
	// witnessEpoch: the leader epoch of the first observation that read
	// this committed offset with the log end at or past it (-1: none
	// yet), at witnessAt (Unix milliseconds: the entry is kept by value,
	// 120,000 of them at 5,000 groups).
	witnessEpoch int32
	witnessAt    int64
}

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// TTL is how long an entry not observed is kept.
const TTL = 24 * time.Hour

// pruneEvery is how often the memory is swept for entries past TTL:
// a sweep walks every group and partition of every cluster (120,000
// offsets for 5,000 groups on two topics of 12 partitions), so sweeping on
// every record made a pass cost quadratic in its groups.
const pruneEvery = time.Hour

// Facts is what one pass learned about a group: its state when it was
// read, and the committed offsets that were read (failed ones are absent).
type Facts struct {
	StateKnown bool
	State      string
	// kind is the group's protocol and protocol type ("classic/consumer",
	// "classic/" for a simple group): a change between two Empty
	// observations means a member joined in between (a simple group
	// joined, a classic group migrated), a transition like any other.
	Kind      string
	Committed map[TopicPartition]int64
	// LogEnds are the partitions' log ends read after the committed
	// offsets (failed ones are absent).
	LogEnds map[TopicPartition]int64
	// EndEpochs are the leader epochs ListOffsets answered with those log
	// ends (absent, or -1, when the broker did not say).
	EndEpochs map[TopicPartition]int32
}

// Witness is the leader epoch a committed offset was first seen in: the
// log end was at or past the offset, in that epoch, at SeenAt.
type Witness struct {
	Epoch  int32
	SeenAt time.Time
}

// Recall is what the memory says after recording a pass.
type Recall struct {
	// EmptySince is the last observation that saw the group in another
	// state before it was Empty (a lower bound); zero unless witnessed.
	EmptySince time.Time
	// EmptyBy is the first observation that saw it Empty after that.
	EmptyBy time.Time
	// CommittedAfter bounds each partition's last commit from below.
	CommittedAfter map[TopicPartition]time.Time
	// Vanished are the offsets seen before they went missing.
	Vanished map[TopicPartition]Vanished
	// Diverged are the partitions whose log end was seen to go down since
	// the group last changed its offset there.
	Diverged map[TopicPartition]Divergence
}

// Divergence is a fall of a partition's log end the memory saw: from
// From to To (the lowest it fell to), first seen at SeenAt.
type Divergence struct {
	From, To int64
	SeenAt   time.Time
}

// Vanished is a committed offset the memory saw and the group no
// longer has.
type Vanished struct {
	Offset int64
	SeenAt time.Time // the last observation that read it
}

// record folds one pass's facts into the memory and returns what the memory
// now knows. Facts that were not read (failures) leave the memory as it was.
func (m *Memory) Record(cluster, group string, facts Facts, now time.Time) Recall {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.groups == nil {
		m.groups = make(map[memoryKey]*groupEntry)
	}
	if now.Sub(m.prunedAt) >= pruneEvery || now.Before(m.prunedAt) {
		m.prune(now)
		m.prunedAt = now
	}

	k := memoryKey{cluster, group}
	e := m.groups[k]
	if e != nil && now.Sub(e.lastSeen) > TTL {
		e = nil // past its TTL, not swept yet: forgotten all the same
	}
	if e == nil {
		e = &groupEntry{partitions: make(map[TopicPartition]partitionEntry)}
		m.groups[k] = e
	}
	if now.After(e.lastSeen) {
		e.lastSeen = now
	}

	if facts.StateKnown && !now.Before(e.stateSeenAt) {
		switch {
		case facts.State != proof.GroupStateEmpty:
			e.emptySince, e.emptyBy = time.Time{}, time.Time{}
		case e.seenState && (e.state != proof.GroupStateEmpty || e.kind != facts.Kind):
			// Witnessed the group become Empty: after the last
			// observation that saw it in another state (or Empty as
			// another kind of group: a member joined since), by this one.
			e.emptySince, e.emptyBy = e.stateSeenAt, now
		}
		e.seenState = true
		e.state, e.kind = facts.State, facts.Kind
		e.stateSeenAt = now
	}

	recall := Recall{EmptySince: e.emptySince, EmptyBy: e.emptyBy, CommittedAfter: make(map[TopicPartition]time.Time),
		Vanished: make(map[TopicPartition]Vanished), Diverged: make(map[TopicPartition]Divergence)}
	for tp, c := range facts.Committed {
		pe, ok := e.partitions[tp]
		switch {
		case ok && now.Before(pe.lastSeen):
			continue // older than what was seen: not folded
		case !ok || now.Sub(pe.lastSeen) > TTL:
			pe = partitionEntry{committed: c, vanished: proof.NoOffset, logEnd: proof.NoOffset, witnessEpoch: -1} // first sight: unknown
		case pe.committed != c:
			// Witnessed a commit: after the last observation that saw
			// the old offset.
			pe.committedAfter = time.Time{}
			pe.vanished, pe.vanishedSeen = proof.NoOffset, time.Time{}
			// A new offset: committed after the fall, or reset on
			// purpose (the way out); a fall seen by this same pass is
			// recorded below.
			pe.diverged = false
			pe.witnessEpoch, pe.witnessAt = -1, 0
			if c != proof.NoOffset {
				pe.committedAfter = pe.lastSeen
			} else if pe.committed != proof.NoOffset {
				pe.vanished, pe.vanishedSeen = pe.committed, pe.lastSeen
			}
			pe.committed = c
		}
		if end, read := facts.LogEnds[tp]; read && end >= 0 {
			if pe.logEnd >= 0 && end < pe.logEnd {
				// Witnessed a truncation.
				if !pe.diverged {
					pe.diverged, pe.divergedFrom, pe.divergedTo, pe.divergedSeen = true, pe.logEnd, end, now
				} else {
					pe.divergedFrom, pe.divergedTo = max(pe.divergedFrom, pe.logEnd), min(pe.divergedTo, end)
				}
			}
			pe.logEnd = end
			if epoch, ok := facts.EndEpochs[tp]; ok && epoch >= 0 && pe.witnessEpoch < 0 && c >= 0 && end >= c {
				pe.witnessEpoch, pe.witnessAt = epoch, now.UnixMilli()
			}
		}
		pe.lastSeen = now
		e.partitions[tp] = pe
	}
	for tp, pe := range e.partitions {
		if c, read := facts.Committed[tp]; read && c != pe.committed {
			continue // an older pass's offset: the bound is another's
		}
		if !pe.committedAfter.IsZero() {
			recall.CommittedAfter[tp] = pe.committedAfter
		}
		if pe.vanished != proof.NoOffset {
			recall.Vanished[tp] = Vanished{pe.vanished, pe.vanishedSeen}
		}
		if pe.diverged {
			recall.Diverged[tp] = Divergence{From: pe.divergedFrom, To: pe.divergedTo, SeenAt: pe.divergedSeen}
		}
	}
	return recall
}

// Witness returns the leader epoch the memory first saw committed on tp
// in (see Witness), when it still holds that offset for the group.
func (m *Memory) Witness(cluster, group string, tp TopicPartition, committed int64) (Witness, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.groups[memoryKey{cluster, group}]
	if e == nil {
		return Witness{}, false
	}
	pe, ok := e.partitions[tp]
	if !ok || pe.committed != committed || pe.witnessEpoch < 0 {
		return Witness{}, false
	}
	return Witness{Epoch: pe.witnessEpoch, SeenAt: time.UnixMilli(pe.witnessAt)}, true
}

// prune drops what has not been observed for TTL. Called with mu held.
func (m *Memory) prune(now time.Time) {
	for k, e := range m.groups {
		if now.Sub(e.lastSeen) > TTL {
			delete(m.groups, k)
			continue
		}
		for tp, pe := range e.partitions {
			if now.Sub(pe.lastSeen) > TTL {
				delete(e.partitions, tp)
			}
		}
	}
}
