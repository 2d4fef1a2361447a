// Package groupmemory remembers, pass after pass, what the observer saw of
// each consumer group, and dates from the transitions it witnessed what
// Kafka does not say: since when a group is Empty, after when an offset
// was committed, which offset vanished. It is reasoning over observations,
// with no I/O: internal/kafka feeds it each pass's facts (Memory.Record)
// and copies the Recall into the observation.
package groupmemory

import (
	"cmp"
	"slices"
	"strings"
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

// The memory is dense: at 20,000 policies it holds 480,000 partitions
// (docs/benchmarks.md, "Group memory, dense form"), and a map keyed by
// TopicPartition of entries with five time.Time kept 221.6 B of live
// heap per partition, group entries included; this form keeps 59.28 B
// (go test ./internal/groupmemory -run '^$' -bench
// BenchmarkMemoryPerPartition -benchtime 3x). A partition is 40 B in a
// slice sorted by partition number, under its topic (one name per
// topic, topics sorted by name), and its times are references into
// the group's table of the pass times its partitions still refer to: the
// partitions of one group are read by the same passes, so the table holds
// a few times (the passes that read the old offsets and the one that read
// the latest; at most three a partition) however many partitions there are. A reference gives back
// the very time.Time that was recorded (wall clock, monotonic reading and
// location), so every comparison and every time recalled is what it was
// with the times kept whole; the rare facts (an offset that vanished, a
// log end that went down) live in a side map, allocated only when seen.
type groupEntry struct {
	seenState   bool
	state       string
	kind        string
	stateSeenAt time.Time // the last observation that read the state
	emptySince  time.Time // lower bound; zero unless a transition to Empty was seen
	emptyBy     time.Time // upper bound: the observation that first saw it Empty after another state
	lastSeen    time.Time
	// times are the pass times the partitions refer to (timeRef r is
	// times[r-1], 0 the zero time), compacted after each record to the
	// ones still referred to.
	times  []time.Time
	topics []topicEntry // sorted by name
	// rare holds a partition's vanished offset and its log end's fall,
	// only while it has one of them.
	rare map[TopicPartition]*rareFacts
}

// timeRef is a time of groupEntry.times: 0 is the zero time (unknown).
type timeRef uint32

type topicEntry struct {
	name  string
	parts []partitionEntry // sorted by partition
}

type partitionEntry struct {
	committed    int64
	logEnd       int64 // the last log end read; NoOffset when none
	partition    int32
	witnessEpoch int32 // see below
	// committedAfter: lower bound on the last commit; zero unless a
	// change was seen.
	committedAfter timeRef
	lastSeen       timeRef // the last observation that read this offset
	// witnessEpoch: the leader epoch of the first observation that read
	// this committed offset with the log end at or past it (-1: none
	// yet), at witnessAt (recalled to the millisecond).
	witnessAt timeRef
}

// rareFacts are a partition's facts that most partitions never have.
type rareFacts struct {
	vanished     int64     // the offset seen before it went missing; NoOffset when none
	vanishedSeen time.Time // the last observation that read it
	// diverged: the log end went down (from divergedFrom to divergedTo,
	// first seen at divergedSeen) since the group last changed its offset.
	diverged                 bool
	divergedFrom, divergedTo int64
	divergedSeen             time.Time
}

func (r *rareFacts) empty() bool { return r.vanished == proof.NoOffset && !r.diverged }

// at is the time r refers to.
func (e *groupEntry) at(r timeRef) time.Time {
	if r == 0 {
		return time.Time{}
	}
	return e.times[r-1]
}

// intern returns a reference to t, adding it to the table when it is not
// there (the same time.Time, compared whole).
func (e *groupEntry) intern(t time.Time) timeRef {
	if t == (time.Time{}) {
		return 0
	}
	for i, u := range e.times {
		if u == t {
			return timeRef(i + 1)
		}
	}
	e.times = append(e.times, t)
	return timeRef(len(e.times))
}

// compactTimes drops the times no partition refers to any more and
// renumbers the references.
func (e *groupEntry) compactTimes() {
	var buf [8]timeRef
	remap := buf[:0]
	if len(e.times) > len(buf) {
		remap = make([]timeRef, len(e.times))
	} else {
		remap = buf[:len(e.times)]
	}
	mark := func(r timeRef) {
		if r != 0 {
			remap[r-1] = 1
		}
	}
	for _, t := range e.topics {
		for i := range t.parts {
			p := &t.parts[i]
			mark(p.committedAfter)
			mark(p.lastSeen)
			mark(p.witnessAt)
		}
	}
	n := 0
	for i, used := range remap {
		if used != 0 {
			e.times[n] = e.times[i]
			n++
			remap[i] = timeRef(n)
		}
	}
	if n == len(e.times) {
		return
	}
	clear(e.times[n:])
	e.times = e.times[:n]
	re := func(r timeRef) timeRef {
		if r == 0 {
			return 0
		}
		return remap[r-1]
	}
	for _, t := range e.topics {
		for i := range t.parts {
			p := &t.parts[i]
			p.committedAfter, p.lastSeen, p.witnessAt = re(p.committedAfter), re(p.lastSeen), re(p.witnessAt)
		}
	}
}

// find returns tp's entry, nil when the memory has none.
func (e *groupEntry) find(tp TopicPartition) *partitionEntry {
	ti, ok := slices.BinarySearchFunc(e.topics, tp.Topic, func(t topicEntry, name string) int { return strings.Compare(t.name, name) })
	if !ok {
		return nil
	}
	parts := e.topics[ti].parts
	pi, ok := slices.BinarySearchFunc(parts, tp.Partition, func(p partitionEntry, n int32) int { return cmp.Compare(p.partition, n) })
	if !ok {
		return nil
	}
	return &parts[pi]
}

type addedPartition struct {
	topic string
	pe    partitionEntry
}

// insert adds partitions the memory did not have, sorted into their
// topics (one sort per record, not one insertion per partition).
func (e *groupEntry) insert(added []addedPartition) {
	slices.SortFunc(added, func(a, b addedPartition) int {
		return cmp.Or(strings.Compare(a.topic, b.topic), cmp.Compare(a.pe.partition, b.pe.partition))
	})
	known, newTopics := len(e.topics), false
	for i := 0; i < len(added); {
		j := i + 1
		for j < len(added) && added[j].topic == added[i].topic {
			j++
		}
		ti, ok := slices.BinarySearchFunc(e.topics[:known], added[i].topic, func(t topicEntry, name string) int { return strings.Compare(t.name, name) })
		if !ok {
			e.topics = append(e.topics, topicEntry{name: added[i].topic})
			ti, newTopics = len(e.topics)-1, true
		}
		t := &e.topics[ti]
		parts := make([]partitionEntry, len(t.parts), len(t.parts)+j-i)
		copy(parts, t.parts)
		for _, a := range added[i:j] {
			parts = append(parts, a.pe)
		}
		slices.SortFunc(parts, func(a, b partitionEntry) int { return cmp.Compare(a.partition, b.partition) })
		t.parts = parts
		i = j
	}
	if newTopics {
		slices.SortFunc(e.topics, func(a, b topicEntry) int { return strings.Compare(a.name, b.name) })
	}
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
		e = &groupEntry{}
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
	rare := func(tp TopicPartition) *rareFacts {
		r := e.rare[tp]
		if r == nil {
			r = &rareFacts{vanished: proof.NoOffset}
			if e.rare == nil {
				e.rare = make(map[TopicPartition]*rareFacts)
			}
			e.rare[tp] = r
		}
		return r
	}
	nowRef := e.intern(now)
	var added []addedPartition
	for tp, c := range facts.Committed {
		pe := e.find(tp)
		var fresh partitionEntry
		switch {
		case pe != nil && now.Before(e.at(pe.lastSeen)):
			continue // older than what was seen: not folded
		case pe == nil || now.Sub(e.at(pe.lastSeen)) > TTL:
			if pe == nil {
				pe = &fresh
			}
			*pe = partitionEntry{partition: tp.Partition, committed: c, logEnd: proof.NoOffset, witnessEpoch: -1} // first sight: unknown
			delete(e.rare, tp)
		case pe.committed != c:
			// Witnessed a commit: after the last observation that saw
			// the old offset.
			pe.committedAfter = 0
			if r := e.rare[tp]; r != nil {
				r.vanished, r.vanishedSeen = proof.NoOffset, time.Time{}
				// A new offset: committed after the fall, or reset on
				// purpose (the way out); a fall seen by this same pass
				// is recorded below.
				r.diverged = false
			}
			pe.witnessEpoch, pe.witnessAt = -1, 0
			if c != proof.NoOffset {
				pe.committedAfter = pe.lastSeen
			} else if pe.committed != proof.NoOffset {
				r := rare(tp)
				r.vanished, r.vanishedSeen = pe.committed, e.at(pe.lastSeen)
			}
			pe.committed = c
		}
		if end, read := facts.LogEnds[tp]; read && end >= 0 {
			if pe.logEnd >= 0 && end < pe.logEnd {
				// Witnessed a truncation.
				if r := rare(tp); !r.diverged {
					r.diverged, r.divergedFrom, r.divergedTo, r.divergedSeen = true, pe.logEnd, end, now
				} else {
					r.divergedFrom, r.divergedTo = max(r.divergedFrom, pe.logEnd), min(r.divergedTo, end)
				}
			}
			pe.logEnd = end
			if epoch, ok := facts.EndEpochs[tp]; ok && epoch >= 0 && pe.witnessEpoch < 0 && c >= 0 && end >= c {
				pe.witnessEpoch, pe.witnessAt = epoch, nowRef
			}
		}
		pe.lastSeen = nowRef
		if r := e.rare[tp]; r != nil && r.empty() {
			delete(e.rare, tp)
		}
		if pe == &fresh {
			added = append(added, addedPartition{tp.Topic, fresh})
		}
	}
	e.insert(added)
	e.compactTimes()
	if len(e.rare) == 0 {
		e.rare = nil
	}

	for _, t := range e.topics {
		for i := range t.parts {
			pe := &t.parts[i]
			if pe.committedAfter == 0 {
				continue
			}
			tp := TopicPartition{t.name, pe.partition}
			if c, read := facts.Committed[tp]; read && c != pe.committed {
				continue // an older pass's offset: the bound is another's
			}
			if after := e.at(pe.committedAfter); !after.IsZero() {
				recall.CommittedAfter[tp] = after
			}
		}
	}
	for tp, r := range e.rare {
		if c, read := facts.Committed[tp]; read && c != e.find(tp).committed {
			continue // an older pass's offset: the bound is another's
		}
		if r.vanished != proof.NoOffset {
			recall.Vanished[tp] = Vanished{r.vanished, r.vanishedSeen}
		}
		if r.diverged {
			recall.Diverged[tp] = Divergence{From: r.divergedFrom, To: r.divergedTo, SeenAt: r.divergedSeen}
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
	pe := e.find(tp)
	if pe == nil || pe.committed != committed || pe.witnessEpoch < 0 {
		return Witness{}, false
	}
	return Witness{Epoch: pe.witnessEpoch, SeenAt: time.UnixMilli(e.at(pe.witnessAt).UnixMilli())}, true
}

// prune drops what has not been observed for TTL. Called with mu held.
func (m *Memory) prune(now time.Time) {
	for k, e := range m.groups {
		if now.Sub(e.lastSeen) > TTL {
			delete(m.groups, k)
			continue
		}
		topics := e.topics[:0]
		for _, t := range e.topics {
			parts := t.parts[:0]
			for _, pe := range t.parts {
				if now.Sub(e.at(pe.lastSeen)) > TTL {
					delete(e.rare, TopicPartition{t.name, pe.partition})
					continue
				}
				parts = append(parts, pe)
			}
			clear(t.parts[len(parts):])
			if t.parts = parts; len(parts) > 0 {
				topics = append(topics, t)
			}
		}
		clear(e.topics[len(topics):])
		e.topics = topics
		e.compactTimes()
	}
}
