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
	if !r.emptySince.Equal(t0.Add(time.Minute)) || !r.committedAfter[tp].Equal(t0) {
		t.Fatalf("became Empty: %+v, want Empty since the Stable observation at +1m", r)
	}
	r = pass(3*time.Minute, "", 7) // state unreadable: memory unchanged
	if !r.emptySince.Equal(t0.Add(time.Minute)) {
		t.Fatalf("state unknown: %+v", r)
	}
	r = pass(4*time.Minute, proof.GroupStateEmpty, proof.NoOffset) // offsets expired
	if !r.emptySince.Equal(t0.Add(time.Minute)) || !r.committedAfter[tp].IsZero() {
		t.Fatalf("offset gone: %+v", r)
	}
	r = pass(5*time.Minute, proof.GroupStateStable, 9)
	if !r.emptySince.IsZero() || !r.committedAfter[tp].Equal(t0.Add(4*time.Minute)) {
		t.Fatalf("back to Stable: %+v, want committed after +4m", r)
	}
	// The same offset again (a client re-committing it, or not): nothing
	// witnessed, the bound stays.
	r = pass(6*time.Minute, proof.GroupStateStable, 9)
	if !r.committedAfter[tp].Equal(t0.Add(4 * time.Minute)) {
		t.Fatalf("unchanged offset: %+v", r)
	}

	// Not observed for longer than the TTL: forgotten.
	r = pass(6*time.Minute+memoryTTL+time.Second, proof.GroupStateEmpty, 9)
	if !r.emptySince.IsZero() || !r.committedAfter[tp].IsZero() {
		t.Fatalf("after the TTL: %+v, want a first sight", r)
	}
}
