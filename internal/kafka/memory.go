package kafka

import (
	"sync"
	"time"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// Kafka does not say since when a group is Empty, nor when an offset was
// last committed. The observer remembers what it saw, pass after pass, and
// derives both from transitions it witnessed:
//
//   - EmptySince is the time of the first observation that saw the group
//     Empty after an observation that saw it in another state (or absent).
//     It is at most one observation interval late.
//   - LastCommit is the time of the first observation that saw a
//     partition's committed offset at its current value after an
//     observation that saw another value (or none). A consumer that commits
//     the same offset again is not seen, so LastCommit is never later than
//     the real last commit: expiry estimates from it err early, not late.
//
// A group or offset seen for the first time has no witnessed transition, so
// both stay zero (unknown): a one-shot observation (the CLI, a fresh
// Observer, an operator that just restarted) cannot know them and says so.
//
// Memory is keyed by the cluster (its sorted bootstrap servers, not the
// credentials: rotating a password must not forget a group's history) and
// the group. Entries not observed for memoryTTL are dropped.
type groupMemory struct {
	mu     sync.Mutex
	groups map[memoryKey]*groupEntry
}

type memoryKey struct{ cluster, group string }

type groupEntry struct {
	seenState  bool
	state      string
	emptySince time.Time
	lastSeen   time.Time
	partitions map[topicPartition]*partitionEntry
}

type partitionEntry struct {
	committed  int64
	lastCommit time.Time
	lastSeen   time.Time
}

type topicPartition struct {
	topic     string
	partition int32
}

const memoryTTL = 24 * time.Hour

// groupFacts is what one pass learned about a group: its state when it was
// read, and the committed offsets that were read (failed ones are absent).
type groupFacts struct {
	stateKnown bool
	state      string
	committed  map[topicPartition]int64
}

// groupRecall is what the memory says after recording a pass.
type groupRecall struct {
	emptySince time.Time
	lastCommit map[topicPartition]time.Time
}

// record folds one pass's facts into the memory and returns what the memory
// now knows. Facts that were not read (failures) leave the memory as it was.
func (m *groupMemory) record(cluster, group string, facts groupFacts, now time.Time) groupRecall {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.groups == nil {
		m.groups = make(map[memoryKey]*groupEntry)
	}
	m.prune(now)

	k := memoryKey{cluster, group}
	e := m.groups[k]
	if e == nil {
		e = &groupEntry{partitions: make(map[topicPartition]*partitionEntry)}
		m.groups[k] = e
	}
	e.lastSeen = now

	if facts.stateKnown {
		switch {
		case facts.state != proof.GroupStateEmpty:
			e.emptySince = time.Time{}
		case e.seenState && e.state != proof.GroupStateEmpty:
			e.emptySince = now // witnessed the group become Empty
		}
		e.seenState = true
		e.state = facts.state
	}

	recall := groupRecall{emptySince: e.emptySince, lastCommit: make(map[topicPartition]time.Time)}
	for tp, c := range facts.committed {
		pe := e.partitions[tp]
		switch {
		case pe == nil:
			pe = &partitionEntry{committed: c} // first sight: unknown
			e.partitions[tp] = pe
		case pe.committed != c:
			pe.committed = c
			pe.lastCommit = time.Time{}
			if c != proof.NoOffset {
				pe.lastCommit = now // witnessed a commit
			}
		}
		pe.lastSeen = now
	}
	for tp, pe := range e.partitions {
		if !pe.lastCommit.IsZero() {
			recall.lastCommit[tp] = pe.lastCommit
		}
	}
	return recall
}

// prune drops what has not been observed for memoryTTL. Called with mu held.
func (m *groupMemory) prune(now time.Time) {
	for k, e := range m.groups {
		if now.Sub(e.lastSeen) > memoryTTL {
			delete(m.groups, k)
			continue
		}
		for tp, pe := range e.partitions {
			if now.Sub(pe.lastSeen) > memoryTTL {
				delete(e.partitions, tp)
			}
		}
	}
}
