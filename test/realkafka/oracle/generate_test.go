package oracle

import (
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"
)

// The generator is seeded: a failing trial is reproduced from its seed and
// index alone, and a run covers every line, group kind and cleanup policy,
// and issue 33's kinds: partitions added while down, transactional commits
// and writers, tombstones behind a lagging group.
func TestGenerateIsSeededAndCoversTheDomain(t *testing.T) {
	lines := []string{"3.9", "4.4"}
	seen := map[string]bool{}
	for i := range 200 {
		s := Generate(7, i, lines)
		if again := Generate(7, i, lines); !reflect.DeepEqual(s, again) {
			t.Fatalf("trial %d differs between two draws of seed 7:\n%s\n%s", i, s, again)
		}
		if s.Line != lines[i%2] {
			t.Errorf("trial %d on %s, want %s (round robin)", i, s.Line, lines[i%2])
		}
		if s.Window <= 0 || s.RetentionMs < scaled(day).Milliseconds() || s.SegmentMs < scaled(time.Hour).Milliseconds() || s.Window < scaled(6*time.Hour) || s.Window > scaled(3*day) || s.Lag > s.Records || s.Partitions < 1 {
			t.Errorf("trial %d out of range: %s", i, s)
		}
		if s.Running && s.Group == groupSimple {
			t.Errorf("trial %d: a simple group has no member to keep running: %s", i, s)
		}
		if s.Group == groupConsumer && s.Line == "3.9" {
			t.Errorf("trial %d: a KIP-848 group on 3.9, which the setup's client joins as classic: %s", i, s)
		}
		seen[s.Group] = true
		seen[s.CleanupPolicy] = true
		seen[s.Reset] = true
		if s.Running {
			seen["running"] = true
		}
		if s.Lag > 0 {
			seen["lagging"] = true
		}
		if s.Window < offsetsRetention && s.Window > 0 {
			seen["window under offsets retention"] = true
		}
		if s.CommitAge+s.Window > offsetsRetention {
			seen["down past offsets retention"] = true
		}
		if _, ok := s.TopicConfigs()["retention.ms"]; !ok && !s.Compacted() {
			seen["default retention, no override"] = true
		}
		if s.Tombstones > 0 && (!s.Compacted() || s.Lag < s.Tombstones) {
			t.Errorf("trial %d: tombstones on a deleting topic, or not all behind the commit: %s", i, s)
		}
		if s.RollEvery > 0 {
			seen["traffic"] = true
			if s.Compacted() {
				seen["traffic, compacted"] = true
			}
			if s.FirstRoll < 0 || s.FirstRoll > s.RollEvery {
				t.Errorf("trial %d: traffic whose first roll is outside its period: %s", i, s)
			}
			if s.Diverged {
				seen["traffic, diverged"] = true
			}
			if s.Tiered {
				seen["traffic, tiered"] = true
			}
		} else {
			seen["quiet"] = true
		}
		if s.AddPartition {
			seen["partition added"] = true
			if s.Reset == "latest" {
				seen["partition added, latest"] = true
			}
		}
		if s.TxnCommit > 0 {
			seen["transactional commit"] = true
		}
		if s.TxnProducer {
			seen["transactional producer"] = true
		}
		if s.Tombstones > 0 {
			seen["tombstones behind the commit"] = true
		}
	}
	for _, want := range []string{groupClassic, groupSimple, groupConsumer, "delete", "compact", "earliest", "latest",
		"running", "lagging", "window under offsets retention", "down past offsets retention", "default retention, no override",
		"partition added", "partition added, latest", "transactional commit", "transactional producer", "tombstones behind the commit",
		"traffic", "traffic, compacted", "traffic, diverged", "traffic, tiered", "quiet"} {
		if !seen[want] {
			t.Errorf("200 trials of seed 7 never drew %q", want)
		}
	}
	if reflect.DeepEqual(Generate(7, 0, lines), Generate(8, 0, lines)) {
		t.Error("seeds 7 and 8 draw the same first trial")
	}
}

// What a consumer resuming at the committed offset must read: every record
// from it on, or on a compacting topic the last record of each key (which
// compaction keeps, a tombstone until delete.retention.ms).
func TestRequired(t *testing.T) {
	log := []produced{
		{0, "a", false}, {1, "b", false}, {2, "a", false}, {3, "c", true}, {4, "b", false}, {5, "a", true},
	}
	if got, want := required(log, 2, false), []int64{2, 3, 4, 5}; !slices.Equal(got, want) {
		t.Errorf("delete: required %v, want %v", got, want)
	}
	// a's last is the tombstone at 5, b's at 4, c's (a tombstone) at 3.
	if got, want := required(log, 2, true), []int64{3, 4, 5}; !slices.Equal(got, want) {
		t.Errorf("compact: required %v, want %v", got, want)
	}
	if got, want := required(log, 5, true), []int64{5}; !slices.Equal(got, want) {
		t.Errorf("compact from 5: required %v, want %v", got, want)
	}
}

// What the consumer read is its consumed ranges less the gaps it reported.
func TestReadOffsets(t *testing.T) {
	r := consumerRun{lines: []consumerLine{
		{Msg: "consumed", Topic: "t", Partition: 0, First: 3, Last: 6},
		{Msg: "skipped", Topic: "t", Partition: 0, From: 4, To: 4},
		{Msg: "consumed", Topic: "t", Partition: 1, First: 0, Last: 1},
		{Msg: "consumed", Topic: "other", Partition: 0, First: 0, Last: 9},
	}}
	got := r.readOffsets("t")
	for p, want := range map[int32][]int64{0: {3, 5, 6}, 1: {0, 1}} {
		var offs []int64
		for o := range got[p] {
			offs = append(offs, o)
		}
		slices.Sort(offs)
		if !slices.Equal(offs, want) {
			t.Errorf("partition %d read %v, want %v", p, offs, want)
		}
	}
}

// Where the restarted consumer fetched from first (issue 32's claim that
// it rewinds): its first record; without one, the position it logged after
// its first poll (past that poll's records, seed 1 trial 32: position 18
// logged, first record 8); the first of each only.
func TestRestartedAt(t *testing.T) {
	off := func(v int64) *int64 { return &v }
	r := consumerRun{lines: []consumerLine{
		{Msg: "assigned", Topic: "t", Partition: 0, Committed: off(13)},
		{Msg: "position", Topic: "t", Partition: 0, Offset: off(18)},
		{Msg: "first record", Topic: "t", Partition: 0, Offset: off(8)},
		{Msg: "first record", Topic: "t", Partition: 0, Offset: off(20)},
		{Msg: "position", Topic: "t", Partition: 1, Offset: off(12)},
		{Msg: "position", Topic: "t", Partition: 1, Offset: off(20)},
		{Msg: "first record", Topic: "other", Partition: 2, Offset: off(3)},
	}}
	got := r.restartedAt("t")
	if want := map[int32]int64{0: 8, 1: 12}; !maps.Equal(got, want) {
		t.Errorf("restarted at %v, want %v", got, want)
	}
}

// A trial judges only when what decides where the consumer resumes was the
// same at its return as at the window's end.
func TestChangedFor(t *testing.T) {
	end := brokerState{0: {committed: 10, logStart: 0}}
	cases := []struct {
		name    string
		back    brokerState
		changed bool
	}{
		{"same", brokerState{0: {committed: 10, logStart: 0}}, false},
		{"log start moved below the committed offset", brokerState{0: {committed: 10, logStart: 5}}, false},
		{"log start passed the committed offset", brokerState{0: {committed: 10, logStart: 12}}, true},
		{"offset expired", brokerState{0: {committed: -1, logStart: 0}}, true},
	}
	for _, c := range cases {
		if got := end.changedFor(c.back) != ""; got != c.changed {
			t.Errorf("%s: changed %v, want %v (%q)", c.name, got, c.changed, end.changedFor(c.back))
		}
	}
	expired := brokerState{0: {committed: -1, logStart: 3}}
	if expired.changedFor(brokerState{0: {committed: -1, logStart: 4}}) == "" {
		t.Error("with no committed offset, a moved log start changes where earliest resumes: want changed")
	}
}

// A consumer stopped in the poll that fetched what it had to read commits
// a position past what it logged: not a loss when no reset could have
// moved it (seed 32 trial 24: position 11 logged, records 11..13 fetched,
// 14 committed at the stop, none logged, the log starting at 0). The same
// commit after a reset past deleted records (the log start above the
// logged position) is a loss, as is one the last commit does not cover.
func TestStoppedMidPoll(t *testing.T) {
	off := func(v int64) *int64 { return &v }
	run := consumerRun{lines: []consumerLine{
		{Msg: "assigned", Topic: "t", Partition: 0, Committed: off(11), LogStart: off(0)},
		{Msg: "position", Topic: "t", Partition: 0, Offset: off(11)},
		{Msg: "stopping"},
		{Msg: "committed", Offsets: map[string]map[int32]int64{"t": {0: 14}}},
	}}
	seen, final := run.shown("t")
	lost := map[int32][]int64{0: {11, 12, 13}}
	assigned := run.assignedState("t")
	if got := stoppedMidPoll(lost, seen, final, assigned, brokerState{0: {committed: 14, logStart: 0}}); got == "" {
		t.Error("trial 24's signature: want inconclusive")
	}
	if got := stoppedMidPoll(lost, seen, final, assigned, brokerState{0: {committed: 14, logStart: 12}}); got != "" {
		t.Errorf("the log start passed the logged position: a reset may have skipped them, want a loss, got %q", got)
	}
	if got := stoppedMidPoll(map[int32][]int64{0: {11, 12, 13, 14}}, seen, final, assigned, brokerState{0: {committed: 14, logStart: 0}}); got != "" {
		t.Errorf("offset 14 lost beyond the last commit: want a loss, got %q", got)
	}
	none := brokerState{0: {committed: -1, logStart: 0}}
	if got := stoppedMidPoll(lost, seen, final, none, brokerState{0: {committed: 14, logStart: 0}}); got != "" {
		t.Errorf("no committed offset at the assignment (a reset decides): want a loss, got %q", got)
	}
}
