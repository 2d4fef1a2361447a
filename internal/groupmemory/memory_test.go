package kafka

import (
	"testing"
	"time"

	"github.com/retentionguard/retention-guard/internal/proof"
)

func TestGroupMemory(t *testing.T) {
	var m groupMemory
	t0 := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	tp := topicPartition{"orders", 0}
	pass := func(at time.Duration, state string, committed int64) groupRecall {
		return m.record("k0:9092", "billing", groupFacts{
			stateKnown: state != "",
			state:      state,
			committed:  map[topicPartition]int64{tp: committed},
		}, t0.Add(at))
	}

	// Every time remembered is a lower bound: the last observation that saw
	// the old state or offset, never the one that saw the change (the
	// change happened before it), so expiry estimates never run late.
	r := pass(0, proof.GroupStateEmpty, 5)
	if !r.emptySince.IsZero() || !r.committedAfter[tp].IsZero() {
		t.Fatalf("first sight: %+v, want nothing known", r)
	}
	r = pass(time.Minute, proof.GroupStateStable, 7)
	if !r.emptySince.IsZero() || !r.committedAfter[tp].Equal(t0) {
		t.Fatalf("Stable, new commit: %+v, want committed after %v", r, t0)
	}
	r = pass(2*time.Minute, proof.GroupStateEmpty, 7)
	if !r.emptySince.Equal(t0.Add(time.Minute)) || !r.emptyBy.Equal(t0.Add(2*time.Minute)) || !r.committedAfter[tp].Equal(t0) {
		t.Fatalf("became Empty: %+v, want Empty since the Stable observation at +1m, by this one at +2m", r)
	}
	r = pass(3*time.Minute, "", 7) // state unreadable: memory unchanged
	if !r.emptySince.Equal(t0.Add(time.Minute)) || !r.emptyBy.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("state unknown: %+v", r)
	}
	r = pass(4*time.Minute, proof.GroupStateEmpty, proof.NoOffset) // offsets expired
	if !r.emptySince.Equal(t0.Add(time.Minute)) || !r.committedAfter[tp].IsZero() {
		t.Fatalf("offset gone: %+v", r)
	}
	// Seed 003: the offset that vanished is remembered (with the last
	// observation that read it) until a new commit appears.
	if v, ok := r.vanished[tp]; !ok || v.offset != 7 || !v.seenAt.Equal(t0.Add(3*time.Minute)) {
		t.Fatalf("offset gone: vanished %+v, want offset 7 last read at +3m", r.vanished)
	}
	r = pass(4*time.Minute+30*time.Second, proof.GroupStateEmpty, proof.NoOffset)
	if v := r.vanished[tp]; v.offset != 7 || !v.seenAt.Equal(t0.Add(3*time.Minute)) {
		t.Fatalf("still gone: vanished %+v, want it kept", r.vanished)
	}
	r = pass(5*time.Minute, proof.GroupStateStable, 9)
	if !r.emptySince.IsZero() || !r.committedAfter[tp].Equal(t0.Add(4*time.Minute+30*time.Second)) || len(r.vanished) != 0 {
		t.Fatalf("back to Stable: %+v, want committed after +4m30s and nothing vanished", r)
	}
	// The same offset again (a client re-committing it, or not): nothing
	// witnessed, the bound stays.
	r = pass(6*time.Minute, proof.GroupStateStable, 9)
	if !r.committedAfter[tp].Equal(t0.Add(4*time.Minute + 30*time.Second)) {
		t.Fatalf("unchanged offset: %+v", r)
	}

	// Not observed for longer than the TTL: forgotten, whether or not a
	// sweep (hourly) came by first.
	m.prunedAt = t0.Add(6*time.Minute + memoryTTL)
	r = pass(6*time.Minute+memoryTTL+time.Second, proof.GroupStateEmpty, 9)
	if !r.emptySince.IsZero() || !r.committedAfter[tp].IsZero() {
		t.Fatalf("after the TTL, before a sweep: %+v, want a first sight", r)
	}
	r = pass(7*time.Minute+memoryTTL, proof.GroupStateStable, 10)
	if !r.committedAfter[tp].Equal(t0.Add(6*time.Minute + memoryTTL + time.Second)) {
		t.Fatalf("seen again: %+v", r)
	}
}

// The sweep for entries past their TTL runs at most once per pruneEvery
// (it walks every group and partition), and drops groups and partitions
// nobody observes any more.
func TestGroupMemorySweep(t *testing.T) {
	var m groupMemory
	t0 := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	rec := func(group string, at time.Duration, parts ...int32) {
		committed := map[topicPartition]int64{}
		for _, p := range parts {
			committed[topicPartition{"orders", p}] = 5
		}
		m.record("k0:9092", group, groupFacts{stateKnown: true, state: proof.GroupStateEmpty, committed: committed}, t0.Add(at))
	}
	rec("a", 0, 0, 1)
	rec("b", 0, 0)
	if !m.prunedAt.Equal(t0) {
		t.Fatalf("first record: swept at %v", m.prunedAt)
	}
	rec("a", memoryTTL-time.Hour, 0) // partition 1 no longer observed
	rec("a", memoryTTL+time.Minute, 0)
	if !m.prunedAt.Equal(t0.Add(memoryTTL + time.Minute)) {
		t.Fatalf("swept at %v", m.prunedAt)
	}
	if _, ok := m.groups[memoryKey{"k0:9092", "b"}]; ok {
		t.Error("group b, unobserved for longer than the TTL, is still remembered")
	}
	if _, ok := m.groups[memoryKey{"k0:9092", "a"}].partitions[topicPartition{"orders", 1}]; ok {
		t.Error("partition orders[1] of group a, unobserved for longer than the TTL, is still remembered")
	}
	rec("c", memoryTTL+30*time.Minute)
	if !m.prunedAt.Equal(t0.Add(memoryTTL + time.Minute)) {
		t.Errorf("swept again after 29 minutes (at %v)", m.prunedAt)
	}
}

// Passes on one cluster overlap (a live check at a start beside the
// periodic pass): one that started earlier can record after one that
// started later. Its facts are older than what the memory holds; folding
// them in read the older offset as a new commit "after" the later pass,
// a bound later than the real commit (optimistic: the offsets' expiry
// estimated late, seed 003), and the next pass read the offset it had
// seen already as another commit. Older facts are not folded, and the
// older pass gets no bound for an offset the memory no longer holds.
func TestGroupMemoryOutOfOrderPasses(t *testing.T) {
	var m groupMemory
	t0 := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	tp := topicPartition{"orders", 0}
	pass := func(at time.Duration, state string, committed int64) groupRecall {
		return m.record("k0:9092", "billing", groupFacts{
			stateKnown: state != "",
			state:      state,
			committed:  map[topicPartition]int64{tp: committed},
		}, t0.Add(at))
	}
	pass(0, proof.GroupStateStable, 5)
	if r := pass(2*time.Minute, proof.GroupStateEmpty, 7); !r.committedAfter[tp].Equal(t0) || !r.emptySince.Equal(t0) {
		t.Fatalf("new commit, became Empty: %+v, want both after %v", r, t0)
	}
	// A pass that started at +1m, before the group committed 7, records now.
	if r := pass(time.Minute, proof.GroupStateStable, 5); r.committedAfter[tp].After(t0) {
		t.Errorf("older pass: offset 5 committed after %v, want no bound past %v (5 was committed before it)", r.committedAfter[tp], t0)
	}
	r := pass(3*time.Minute, proof.GroupStateEmpty, 7)
	if !r.committedAfter[tp].Equal(t0) {
		t.Errorf("after the older pass: offset 7 committed after %v, want %v (the last pass that saw 5 before 7)", r.committedAfter[tp], t0)
	}
	if !r.emptySince.Equal(t0) {
		t.Errorf("after the older pass: Empty since %v, want %v", r.emptySince, t0)
	}
}

// Seed 000's fan-out group, read once with kcat: a simple group (it
// commits without joining), Empty, becomes a classic consumer group, Empty
// again once kcat leaves, between two checks that both read Empty. Only a
// member joining changes the protocol type, so the group went Empty after
// the first check: a lower bound, where otherwise its Empty clock would be
// unknown (Unknown, EmptyGroupOffsetsMayExpireBeforeWindow).
func TestGroupMemoryKindChangeIsATransition(t *testing.T) {
	var m groupMemory
	t0 := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	pass := func(at time.Duration, kind string) groupRecall {
		return m.record("k0:9092", "fanout", groupFacts{stateKnown: true, state: proof.GroupStateEmpty, kind: kind}, t0.Add(at))
	}
	if r := pass(0, "classic/"); !r.emptySince.IsZero() {
		t.Fatalf("first sight: Empty since %v, want unknown", r.emptySince)
	}
	if r := pass(time.Minute, "classic/"); !r.emptySince.IsZero() {
		t.Fatalf("Empty, same kind: Empty since %v, want unknown (no transition seen)", r.emptySince)
	}
	r := pass(2*time.Minute, "classic/consumer")
	if !r.emptySince.Equal(t0.Add(time.Minute)) || !r.emptyBy.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("Empty as a consumer group: Empty since %v by %v, want after +1m, by +2m", r.emptySince, r.emptyBy)
	}
	if r := pass(3*time.Minute, "classic/consumer"); !r.emptySince.Equal(t0.Add(time.Minute)) {
		t.Fatalf("still Empty: Empty since %v, want the bound kept", r.emptySince)
	}
}
