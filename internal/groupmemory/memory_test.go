package groupmemory

import (
	"testing"
	"time"

	"github.com/retentionguard/retention-guard/internal/proof"
)

func TestGroupMemory(t *testing.T) {
	var m Memory
	t0 := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	tp := TopicPartition{"orders", 0}
	pass := func(at time.Duration, state string, committed int64) Recall {
		return m.Record("k0:9092", "billing", Facts{
			StateKnown: state != "",
			State:      state,
			Committed:  map[TopicPartition]int64{tp: committed},
		}, t0.Add(at))
	}

	// Every time remembered is a lower bound: the last observation that saw
	// the old state or offset, never the one that saw the change (the
	// change happened before it), so expiry estimates never run late.
	r := pass(0, proof.GroupStateEmpty, 5)
	if !r.EmptySince.IsZero() || !r.CommittedAfter[tp].IsZero() {
		t.Fatalf("first sight: %+v, want nothing known", r)
	}
	r = pass(time.Minute, proof.GroupStateStable, 7)
	if !r.EmptySince.IsZero() || !r.CommittedAfter[tp].Equal(t0) {
		t.Fatalf("Stable, new commit: %+v, want committed after %v", r, t0)
	}
	r = pass(2*time.Minute, proof.GroupStateEmpty, 7)
	if !r.EmptySince.Equal(t0.Add(time.Minute)) || !r.EmptyBy.Equal(t0.Add(2*time.Minute)) || !r.CommittedAfter[tp].Equal(t0) {
		t.Fatalf("became Empty: %+v, want Empty since the Stable observation at +1m, by this one at +2m", r)
	}
	r = pass(3*time.Minute, "", 7) // state unreadable: memory unchanged
	if !r.EmptySince.Equal(t0.Add(time.Minute)) || !r.EmptyBy.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("state unknown: %+v", r)
	}
	r = pass(4*time.Minute, proof.GroupStateEmpty, proof.NoOffset) // offsets expired
	if !r.EmptySince.Equal(t0.Add(time.Minute)) || !r.CommittedAfter[tp].IsZero() {
		t.Fatalf("offset gone: %+v", r)
	}
	// Seed 003: the offset that vanished is remembered (with the last
	// observation that read it) until a new commit appears.
	if v, ok := r.Vanished[tp]; !ok || v.Offset != 7 || !v.SeenAt.Equal(t0.Add(3*time.Minute)) {
		t.Fatalf("offset gone: vanished %+v, want offset 7 last read at +3m", r.Vanished)
	}
	r = pass(4*time.Minute+30*time.Second, proof.GroupStateEmpty, proof.NoOffset)
	if v := r.Vanished[tp]; v.Offset != 7 || !v.SeenAt.Equal(t0.Add(3*time.Minute)) {
		t.Fatalf("still gone: vanished %+v, want it kept", r.Vanished)
	}
	r = pass(5*time.Minute, proof.GroupStateStable, 9)
	if !r.EmptySince.IsZero() || !r.CommittedAfter[tp].Equal(t0.Add(4*time.Minute+30*time.Second)) || len(r.Vanished) != 0 {
		t.Fatalf("back to Stable: %+v, want committed after +4m30s and nothing vanished", r)
	}
	// The same offset again (a client re-committing it, or not): nothing
	// witnessed, the bound stays.
	r = pass(6*time.Minute, proof.GroupStateStable, 9)
	if !r.CommittedAfter[tp].Equal(t0.Add(4*time.Minute + 30*time.Second)) {
		t.Fatalf("unchanged offset: %+v", r)
	}

	// Not observed for longer than the TTL: forgotten, whether or not a
	// sweep (hourly) came by first.
	m.prunedAt = t0.Add(6*time.Minute + TTL)
	r = pass(6*time.Minute+TTL+time.Second, proof.GroupStateEmpty, 9)
	if !r.EmptySince.IsZero() || !r.CommittedAfter[tp].IsZero() {
		t.Fatalf("after the TTL, before a sweep: %+v, want a first sight", r)
	}
	r = pass(7*time.Minute+TTL, proof.GroupStateStable, 10)
	if !r.CommittedAfter[tp].Equal(t0.Add(6*time.Minute + TTL + time.Second)) {
		t.Fatalf("seen again: %+v", r)
	}
}

// The sweep for entries past their TTL runs at most once per pruneEvery
// (it walks every group and partition), and drops groups and partitions
// nobody observes any more.
func TestGroupMemorySweep(t *testing.T) {
	var m Memory
	t0 := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	rec := func(group string, at time.Duration, parts ...int32) {
		committed := map[TopicPartition]int64{}
		for _, p := range parts {
			committed[TopicPartition{"orders", p}] = 5
		}
		m.Record("k0:9092", group, Facts{StateKnown: true, State: proof.GroupStateEmpty, Committed: committed}, t0.Add(at))
	}
	rec("a", 0, 0, 1)
	rec("b", 0, 0)
	if !m.prunedAt.Equal(t0) {
		t.Fatalf("first record: swept at %v", m.prunedAt)
	}
	rec("a", TTL-time.Hour, 0) // partition 1 no longer observed
	rec("a", TTL+time.Minute, 0)
	if !m.prunedAt.Equal(t0.Add(TTL + time.Minute)) {
		t.Fatalf("swept at %v", m.prunedAt)
	}
	if _, ok := m.groups[memoryKey{"k0:9092", "b"}]; ok {
		t.Error("group b, unobserved for longer than the TTL, is still remembered")
	}
	if m.groups[memoryKey{"k0:9092", "a"}].find(TopicPartition{"orders", 1}) != nil {
		t.Error("partition orders[1] of group a, unobserved for longer than the TTL, is still remembered")
	}
	rec("c", TTL+30*time.Minute)
	if !m.prunedAt.Equal(t0.Add(TTL + time.Minute)) {
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
	var m Memory
	t0 := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	tp := TopicPartition{"orders", 0}
	pass := func(at time.Duration, state string, committed int64) Recall {
		return m.Record("k0:9092", "billing", Facts{
			StateKnown: state != "",
			State:      state,
			Committed:  map[TopicPartition]int64{tp: committed},
		}, t0.Add(at))
	}
	pass(0, proof.GroupStateStable, 5)
	if r := pass(2*time.Minute, proof.GroupStateEmpty, 7); !r.CommittedAfter[tp].Equal(t0) || !r.EmptySince.Equal(t0) {
		t.Fatalf("new commit, became Empty: %+v, want both after %v", r, t0)
	}
	// A pass that started at +1m, before the group committed 7, records now.
	if r := pass(time.Minute, proof.GroupStateStable, 5); r.CommittedAfter[tp].After(t0) {
		t.Errorf("older pass: offset 5 committed after %v, want no bound past %v (5 was committed before it)", r.CommittedAfter[tp], t0)
	}
	r := pass(3*time.Minute, proof.GroupStateEmpty, 7)
	if !r.CommittedAfter[tp].Equal(t0) {
		t.Errorf("after the older pass: offset 7 committed after %v, want %v (the last pass that saw 5 before 7)", r.CommittedAfter[tp], t0)
	}
	if !r.EmptySince.Equal(t0) {
		t.Errorf("after the older pass: Empty since %v, want %v", r.EmptySince, t0)
	}
}

// Seed 000's fan-out group, read once with kcat: a simple group (it
// commits without joining), Empty, becomes a classic consumer group, Empty
// again once kcat leaves, between two checks that both read Empty. Only a
// member joining changes the protocol type, so the group went Empty after
// the first check: a lower bound, where otherwise its Empty clock would be
// unknown (Unknown, EmptyGroupOffsetsMayExpireBeforeWindow).
func TestGroupMemoryKindChangeIsATransition(t *testing.T) {
	var m Memory
	t0 := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	pass := func(at time.Duration, kind string) Recall {
		return m.Record("k0:9092", "fanout", Facts{StateKnown: true, State: proof.GroupStateEmpty, Kind: kind}, t0.Add(at))
	}
	if r := pass(0, "classic/"); !r.EmptySince.IsZero() {
		t.Fatalf("first sight: Empty since %v, want unknown", r.EmptySince)
	}
	if r := pass(time.Minute, "classic/"); !r.EmptySince.IsZero() {
		t.Fatalf("Empty, same Kind: Empty since %v, want unknown (no transition seen)", r.EmptySince)
	}
	r := pass(2*time.Minute, "classic/consumer")
	if !r.EmptySince.Equal(t0.Add(time.Minute)) || !r.EmptyBy.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("Empty as a consumer group: Empty since %v by %v, want after +1m, by +2m", r.EmptySince, r.EmptyBy)
	}
	if r := pass(3*time.Minute, "classic/consumer"); !r.EmptySince.Equal(t0.Add(time.Minute)) {
		t.Fatalf("still Empty: Empty since %v, want the bound kept", r.EmptySince)
	}
}

// Issue 33 item 1: a log end that went down is a truncation the memory
// witnesses (as it witnesses Empty spells). It is reported with both ends
// and the observation that first saw the fall until the group's offset
// changes (a reset, the way out), so that an offset committed without a
// leader epoch above the fall cannot be proven.
func TestGroupMemoryWitnessesALogEndThatWentDown(t *testing.T) {
	var m Memory
	t0 := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	tp := TopicPartition{"orders", 0}
	pass := func(at time.Duration, committed, logEnd int64) Recall {
		ends := map[TopicPartition]int64{tp: logEnd}
		if logEnd < 0 {
			ends = nil // the log end was not read
		}
		return m.Record("k0:9092", "billing", Facts{Committed: map[TopicPartition]int64{tp: committed}, LogEnds: ends}, t0.Add(at))
	}
	if r := pass(0, 10, 12); len(r.Diverged) != 0 {
		t.Fatalf("first sight: %+v, want nothing diverged", r.Diverged)
	}
	if r := pass(time.Minute, 10, 14); len(r.Diverged) != 0 {
		t.Fatalf("log end grew: %+v, want nothing diverged", r.Diverged)
	}
	r := pass(2*time.Minute, 10, 5) // an unclean election truncated the log to 5
	if d, ok := r.Diverged[tp]; !ok || d.From != 14 || d.To != 5 || !d.SeenAt.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("log end fell from 14 to 5: %+v, want it witnessed at +2m", r.Diverged)
	}
	pass(3*time.Minute, 10, -1)     // not read: the memory keeps what it saw
	r = pass(4*time.Minute, 10, 20) // grew back past the commit
	if d := r.Diverged[tp]; d.From != 14 || d.To != 5 || !d.SeenAt.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("grown back: %+v, want the fall kept", r.Diverged)
	}
	r = pass(5*time.Minute, 10, 8) // a second fall, not as deep
	if d := r.Diverged[tp]; d.From != 20 || d.To != 5 || !d.SeenAt.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("second fall: %+v, want the lowest end and the highest start", r.Diverged)
	}
	// The way out: the group is reset (to 5): the commit follows the fall.
	if r = pass(6*time.Minute, 5, 9); len(r.Diverged) != 0 {
		t.Fatalf("offset reset: %+v, want the fall forgotten", r.Diverged)
	}
	// A commit and a fall seen by the same pass: which came first is not
	// known, the fall is kept (fail closed).
	if r = pass(7*time.Minute, 7, 6); r.Diverged[tp].To != 6 {
		t.Fatalf("commit and fall in one pass: %+v, want the fall kept", r.Diverged)
	}
	// Another group on the same cluster has its own memory of the partition.
	other := m.Record("k0:9092", "audit", Facts{Committed: map[TopicPartition]int64{tp: 3}, LogEnds: map[TopicPartition]int64{tp: 6}}, t0.Add(8*time.Minute))
	if len(other.Diverged) != 0 {
		t.Fatalf("another group's first sight: %+v", other.Diverged)
	}
}

// Seed 000's silent skip after an unclean election the passes did not
// see: a reset's commit of 10 (no leader epoch) on a log truncated to 5 and
// grown back past 10 between two passes. No fall of the log end was
// witnessed; the leader epoch the commit was first seen in was, and the
// observer asks where that epoch ends (internal/kafka/epochs.go).
func TestGroupMemoryWitnessesTheEpochACommitWasSeenIn(t *testing.T) {
	m := &Memory{}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tp := TopicPartition{Topic: "settle-task", Partition: 0}
	pass := func(at time.Duration, committed, end int64, epoch int32) {
		m.Record("k0:9092", "settle", Facts{Committed: map[TopicPartition]int64{tp: committed},
			LogEnds: map[TopicPartition]int64{tp: end}, EndEpochs: map[TopicPartition]int32{tp: epoch}}, t0.Add(at))
	}
	witness := func(committed int64) (Witness, bool) { return m.Witness("k0:9092", "settle", tp, committed) }

	pass(0, 10, 8, 3) // the log does not reach the commit: nothing witnessed
	if w, ok := witness(10); ok {
		t.Fatalf("log end 8 below commit 10: witness %+v, want none", w)
	}
	pass(time.Minute, 10, 12, 3)
	if w, ok := witness(10); !ok || w.Epoch != 3 || !w.SeenAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("log end 12 past commit 10 in epoch 3: witness %+v %v, want epoch 3 at +1m", w, ok)
	}
	pass(2*time.Minute, 10, 11, 5) // an unclean election, grown back: the first sighting stays
	if w, _ := witness(10); w.Epoch != 3 || !w.SeenAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("a later epoch: witness %+v, want the first sighting (epoch 3 at +1m) kept", w)
	}
	if w, ok := witness(9); ok {
		t.Fatalf("asked for another offset than the one held: %+v", w)
	}
	if w, ok := m.Witness("k0:9092", "audit", tp, 10); ok {
		t.Fatalf("another group: %+v", w)
	}
	pass(3*time.Minute, 12, 14, 5) // a new commit: witnessed anew, in its own epoch
	if w, ok := witness(12); !ok || w.Epoch != 5 || !w.SeenAt.Equal(t0.Add(3*time.Minute)) {
		t.Fatalf("new commit 12 seen in epoch 5: witness %+v %v", w, ok)
	}
	pass(4*time.Minute, 13, 14, -1) // a broker that did not say its epoch
	if w, ok := witness(13); ok {
		t.Fatalf("no epoch answered: witness %+v, want none", w)
	}
}

// The memory keeps a group's partitions in slices sorted by topic and
// partition number and its times in a table of the passes its partitions
// refer to (memory.go, groupEntry). Seed 003's settle-task (24
// partitions) read by a batch consumer that commits on some partitions
// only: the edges of that form must not change what is recalled.
func TestGroupMemoryDenseForm(t *testing.T) {
	// A time as the observer's clock gives it: with a monotonic reading,
	// nanoseconds and a location. What is recalled is the very time that
	// was recorded, not its wall clock to the millisecond.
	t0 := time.Now().Truncate(time.Millisecond).Add(time.Millisecond - time.Nanosecond)
	settle := func(p int32) TopicPartition { return TopicPartition{"settle-task", p} }

	t.Run("partitions out of order and far apart", func(t *testing.T) {
		var m Memory
		rec := func(at time.Duration, committed map[TopicPartition]int64) Recall {
			return m.Record("k0:9092", "ledger-settle", Facts{Committed: committed}, t0.Add(at))
		}
		rec(0, map[TopicPartition]int64{settle(23): 5, settle(1_000_000): 5, settle(0): 5, {"audit", 3}: 5})
		// Partitions first seen later land between and around the known ones.
		rec(time.Minute, map[TopicPartition]int64{settle(23): 6, settle(1_000_000): 6, settle(0): 6, settle(7): 5,
			settle(-1): 5, {"audit", 3}: 6, {"accounts", 2}: 5, {"zebra", 0}: 5})
		r := rec(2*time.Minute, map[TopicPartition]int64{settle(23): 6, settle(1_000_000): 6, settle(0): 6, settle(7): 8,
			settle(-1): 9, {"audit", 3}: 6, {"accounts", 2}: 9, {"zebra", 0}: 9})
		want := map[TopicPartition]time.Time{settle(23): t0, settle(1_000_000): t0, settle(0): t0, {"audit", 3}: t0,
			settle(7): t0.Add(time.Minute), settle(-1): t0.Add(time.Minute), {"accounts", 2}: t0.Add(time.Minute), {"zebra", 0}: t0.Add(time.Minute)}
		if len(r.CommittedAfter) != len(want) {
			t.Fatalf("committed after %v, want %v", r.CommittedAfter, want)
		}
		for tp, at := range want {
			if got, ok := r.CommittedAfter[tp]; !ok || got != at {
				t.Errorf("%v committed after %v, want exactly %v", tp, got, at)
			}
		}
	})

	t.Run("a topic no longer observed", func(t *testing.T) {
		var m Memory
		rec := func(at time.Duration, committed map[TopicPartition]int64) Recall {
			return m.Record("k0:9092", "ledger-settle", Facts{Committed: committed}, t0.Add(at))
		}
		rec(0, map[TopicPartition]int64{settle(0): 5, {"audit", 0}: 5, {"zebra", 0}: 5})
		rec(time.Minute, map[TopicPartition]int64{settle(0): 6, {"audit", 0}: 6, {"zebra", 0}: 6})
		// The group stops consuming audit: swept after the TTL (by the
		// hourly sweep), the topics around it are still found.
		rec(TTL, map[TopicPartition]int64{settle(0): 6, {"zebra", 0}: 6})
		r := rec(TTL+time.Hour+2*time.Minute, map[TopicPartition]int64{settle(0): 7, {"zebra", 0}: 6})
		e := m.groups[memoryKey{"k0:9092", "ledger-settle"}]
		if e.find(TopicPartition{"audit", 0}) != nil || len(e.topics) != 2 {
			t.Fatalf("audit unobserved past the TTL: topics %+v, want it dropped", e.topics)
		}
		if got := r.CommittedAfter[settle(0)]; got != t0.Add(TTL) {
			t.Errorf("settle-task[0] committed after %v, want %v", got, t0.Add(TTL))
		}
		if got := r.CommittedAfter[TopicPartition{"zebra", 0}]; got != t0 {
			t.Errorf("zebra[0] committed after %v, want %v", got, t0)
		}
		// Seen again: a first sight, nothing known.
		r = rec(TTL+time.Hour+3*time.Minute, map[TopicPartition]int64{{"audit", 0}: 9})
		if _, ok := r.CommittedAfter[TopicPartition{"audit", 0}]; ok {
			t.Errorf("audit seen again after the sweep: %v, want a first sight", r.CommittedAfter)
		}
	})

	t.Run("times kept whole, witness to the millisecond", func(t *testing.T) {
		var m Memory
		tp := settle(4)
		rec := func(at time.Duration, committed int64) Recall {
			return m.Record("k0:9092", "ledger-settle", Facts{Committed: map[TopicPartition]int64{tp: committed},
				LogEnds: map[TopicPartition]int64{tp: 20}, EndEpochs: map[TopicPartition]int32{tp: 2}}, t0.Add(at))
		}
		rec(0, 10)
		rec(time.Nanosecond, proof.NoOffset) // one nanosecond later, past the millisecond
		if r := rec(2*time.Nanosecond, proof.NoOffset); r.Vanished[tp] != (Vanished{10, t0}) {
			t.Fatalf("vanished %+v, want offset 10 last read at exactly %v", r.Vanished[tp], t0)
		}
		r := rec(3*time.Nanosecond, 12)
		if got := r.CommittedAfter[tp]; got != t0.Add(2*time.Nanosecond) {
			t.Fatalf("committed after %v, want exactly %v (the nanosecond before)", got, t0.Add(2*time.Nanosecond))
		}
		if w, ok := m.Witness("k0:9092", "ledger-settle", tp, 12); !ok || w.Epoch != 2 || !w.SeenAt.Equal(time.UnixMilli(t0.Add(3*time.Nanosecond).UnixMilli())) {
			t.Fatalf("witness %+v %v, want epoch 2 seen at %v to the millisecond", w, ok, t0.Add(3*time.Nanosecond))
		}
	})

	t.Run("the table of times stays small", func(t *testing.T) {
		var m Memory
		committed := map[TopicPartition]int64{}
		for p := range int32(24) {
			committed[settle(p)] = 0
		}
		for pass := range 100 {
			// The batch consumer commits on half its partitions each pass.
			for p := range int32(24) {
				if int(p)%2 == pass%2 {
					committed[settle(p)]++
				}
			}
			r := m.Record("k0:9092", "ledger-settle", Facts{Committed: committed}, t0.Add(time.Duration(pass)*time.Minute))
			if pass > 1 && (r.CommittedAfter[settle(0)] != t0.Add(time.Duration(pass-1-(pass%2))*time.Minute) ||
				r.CommittedAfter[settle(1)] != t0.Add(time.Duration(pass-2+(pass%2))*time.Minute)) {
				t.Fatalf("pass %d: committed after %v and %v", pass, r.CommittedAfter[settle(0)], r.CommittedAfter[settle(1)])
			}
		}
		if e := m.groups[memoryKey{"k0:9092", "ledger-settle"}]; len(e.times) > 3 {
			t.Errorf("%d times held for 24 partitions, want the 3 passes they refer to", len(e.times))
		}
	})
}
