package oracle

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// What a violation claims the broker will do to a group that stays down
// for its window. A verdict is scored claim by claim against what the
// broker did (issue 32 item 5), not only by whether the restarted consumer
// skipped records: with auto.offset.reset=earliest a consumer whose
// offsets did expire replays from the log start and skips nothing, and the
// alarm was right all the same.
const (
	// The group's committed offsets disappear before it is back.
	claimOffsetsExpire = "offsets expire"
	// A record the group needs (at or after its committed offset, from 0
	// on a partition without one) is deleted before it is back: the log
	// start passes it.
	claimRecordsDeleted = "records deleted"
	// A tombstone the group needs (the last record of its key, at or after
	// the committed offset) is dropped by the cleaner before it is back.
	claimTombstonesDropped = "tombstones dropped"
	// A partition holds records and no committed offset: the client's
	// auto.offset.reset decides where the group starts on it (latest
	// skips them).
	claimResetDecides = "reset decides"
	// The log diverged below a commit that carries its leader epoch: the
	// consumer validates the epoch on restart and rewinds to where it
	// ends (issue 32), on every partition where it diverged.
	claimRewinds = "consumer rewinds to the epoch's end"
)

// reasonClaims maps each reason the oracle's scenarios can produce to what
// it claims. A reason not here (connection failures, policies such as
// InfiniteRetentionNotAllowed, epoch-less commits on diverged logs,
// cursors, share groups) is not scored: a verdict with no scored reason is
// judged by the consumer's loss alone, as before.
var reasonClaims = map[string]string{
	proof.ReasonOffsetsRetentionUnreadable:             claimOffsetsExpire,
	proof.ReasonOffsetsRetentionShorterThanWindow:      claimOffsetsExpire,
	proof.ReasonOffsetsExpireBeforeWindow:              claimOffsetsExpire,
	proof.ReasonOffsetsMayExpireBeforeWindow:           claimOffsetsExpire,
	proof.ReasonGroupTypeUnknown:                       claimOffsetsExpire,
	proof.ReasonEmptyGroupOffsetsExpireBeforeWindow:    claimOffsetsExpire,
	proof.ReasonEmptyGroupOffsetsMayExpireBeforeWindow: claimOffsetsExpire,
	proof.ReasonExplicitOffsetExpiryBeforeWindow:       claimOffsetsExpire,

	proof.ReasonRetentionUnreadable:               claimRecordsDeleted,
	proof.ReasonRetentionShorterThanWindow:        claimRecordsDeleted,
	proof.ReasonSizeBoundedRetention:              claimRecordsDeleted,
	proof.ReasonRecoveryHeadroomShorterThanWindow: claimRecordsDeleted,
	proof.ReasonRecordTimestampUnread:             claimRecordsDeleted,
	proof.ReasonCommittedOffsetExpired:            claimRecordsDeleted,

	proof.ReasonTombstoneRetentionShorterThanWindow: claimTombstonesDropped,
	proof.ReasonTombstoneHeadroomShorterThanWindow:  claimTombstonesDropped,
	proof.ReasonTombstonesUnread:                    claimTombstonesDropped,

	// A partition without a committed offset whose log no longer starts
	// at 0, or, compacting, is not empty: the reset decides what the
	// group reads of it.
	proof.ReasonNoCommittedOffset:         claimResetDecides,
	proof.ReasonResetToLatestSkipsRecords: claimResetDecides,
	proof.ReasonOffsetResetMaySkipRecords: claimResetDecides,

	// A risk, not a loss: the consumer rewinds and re-reads. A verdict
	// Violated by it alone whose consumer did rewind, nothing lost, is a
	// true alarm (claims held), not a false one.
	proof.ReasonCommittedEpochDiverged: claimRewinds,
}

// partitionFacts is what the broker did to one partition, as far as the
// claims go.
type partitionFacts struct {
	// Committed is the group's committed offset as the trial set it up
	// (-1: none, a partition added after the commit).
	Committed int64
	// CommittedBack and LogStartBack are the group's committed offset (-1:
	// none) and the log start when the consumer was back: read at the
	// window's end, when the gate opened (a trial whose state changed
	// before the consumer's return in a way that matters is
	// inconclusive, not scored).
	CommittedBack, LogStartBack int64
	// Last is the offset of the partition's last record (-1: none).
	Last int64
	// TombstonesNeeded is how many tombstones the group needed (the last
	// record of their key, at or after Committed); TombstonesGone how many
	// of them the log no longer held when the consumer was back.
	TombstonesNeeded, TombstonesGone int
	// Diverged: the log was truncated below a commit that carries its
	// leader epoch, to DivergedTo (the end of that epoch on the new
	// leader). RestartedAt is where the restarted consumer fetched from
	// first (its first record, else its logged position; -1: neither
	// logged).
	Diverged                bool
	DivergedTo, RestartedAt int64
}

// claimHeld reports whether the broker (or, for claimRewinds, the
// client) did what claim says.
func claimHeld(claim string, facts map[int32]partitionFacts) bool {
	if claim == claimRewinds {
		// Every partition where the log diverged under the commit, and at
		// least one.
		diverged := 0
		for _, f := range facts {
			if !f.Diverged {
				continue
			}
			if f.RestartedAt != f.DivergedTo {
				return false
			}
			diverged++
		}
		return diverged > 0
	}
	for _, f := range facts {
		from := max(f.Committed, 0)
		switch claim {
		case claimOffsetsExpire:
			if f.Committed >= 0 && f.CommittedBack < 0 {
				return true
			}
		case claimRecordsDeleted:
			if f.Last >= from && f.LogStartBack > from {
				return true
			}
		case claimTombstonesDropped:
			if f.TombstonesGone > 0 {
				return true
			}
		case claimResetDecides:
			if f.CommittedBack < 0 && f.Last >= f.LogStartBack {
				return true
			}
		}
	}
	return false
}

// claimResult is one violation reason of a verdict, scored.
type claimResult struct {
	Reason string
	Claim  string // "" when the reason is not scored
	Held   bool
}

// scoreClaims scores each distinct reason of a verdict against facts.
func scoreClaims(reasons []string, facts map[int32]partitionFacts) []claimResult {
	var out []claimResult
	for _, r := range reasons {
		c := reasonClaims[r]
		out = append(out, claimResult{Reason: r, Claim: c, Held: c != "" && claimHeld(c, facts)})
	}
	return out
}

// Verdicts that are alarms, by how they are true: records lost, or
// nothing lost (earliest replayed, the records were read again) while
// every claim held.
const (
	alarmLost   = "records lost"
	alarmClaims = "claims held"
)

// judge is the outcome of a judged trial: the verdict (Proven or not),
// whether the consumer lost records, whether the proof's own numbers
// predicted that loss (warned), and the verdict's claims scored. A not
// Proven verdict is a true alarm when records were lost, or when it made
// at least one claim the oracle scores and every one of those held; a
// false alarm otherwise. The second return says which kind of true alarm.
func judge(proven, lost, warned bool, claims []claimResult) (kind, how string) {
	switch {
	case proven && !lost:
		return trueProven, ""
	case proven && warned:
		return warnedProven, ""
	case proven:
		return falseProven, ""
	case lost:
		return trueAlarm, alarmLost
	}
	scored, held := 0, 0
	for _, c := range claims {
		if c.Claim != "" {
			scored++
			if c.Held {
				held++
			}
		}
	}
	if scored > 0 && held == scored {
		return trueAlarm, alarmClaims
	}
	return falseAlarm, ""
}

// neededTombstones are, per partition, the offsets of the tombstones a
// consumer resuming at committed must read (the last record of their key).
func neededTombstones(log map[int32][]produced, committed map[int32]int64) map[int32][]int64 {
	out := map[int32][]int64{}
	for p, recs := range log {
		tomb := map[int64]bool{}
		for _, r := range recs {
			tomb[r.offset] = r.tombstone
		}
		for _, off := range required(recs, max(committed[p], 0), true) {
			if tomb[off] {
				out[p] = append(out[p], off)
			}
		}
	}
	return out
}

// tombstoneReader is a client reading a compacting topic's partitions
// from their first needed tombstone on (nil when none is needed); made on
// the test's goroutine, read on another by tombstonesGone.
func tombstoneReader(t *testing.T, b *apachekafka.Broker, topic string, needed map[int32][]int64) *kgo.Client {
	t.Helper()
	from := map[string]map[int32]kgo.Offset{topic: {}}
	for p, offs := range needed {
		if len(offs) > 0 {
			from[topic][p] = kgo.NewOffset().At(offs[0])
		}
	}
	if len(from[topic]) == 0 {
		return nil
	}
	return b.Client(t, kgo.ConsumePartitions(from))
}

// tombstonesGone reads the log through cl (tombstoneReader) as the broker
// holds it now, and counts the needed tombstones no longer there. A
// tombstone past the last offset the read reached in its time (10 s) is
// not counted: unknown is not gone.
func tombstonesGone(cl *kgo.Client, needed map[int32][]int64) map[int32]int {
	gone := map[int32]int{}
	if cl == nil {
		return gone
	}
	defer cl.Close()
	last := map[int32]int64{}
	for p, offs := range needed {
		if len(offs) > 0 {
			last[p] = offs[len(offs)-1]
		}
	}
	seen := map[int32]map[int64]bool{}
	reached := map[int32]int64{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := func() bool {
		for p, l := range last {
			if r, ok := reached[p]; !ok || r < l {
				return false
			}
		}
		return true
	}
	for !done() && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			for _, r := range fp.Records {
				if seen[r.Partition] == nil {
					seen[r.Partition] = map[int64]bool{}
				}
				seen[r.Partition][r.Offset] = true
				reached[r.Partition] = max(reached[r.Partition], r.Offset)
			}
			// Past the last needed tombstone once the high watermark
			// is: nothing more to read there.
			if fp.HighWatermark > 0 && fp.HighWatermark-1 >= last[fp.Partition] && len(fp.Records) == 0 {
				reached[fp.Partition] = max(reached[fp.Partition], fp.HighWatermark-1)
			}
		})
	}
	for p, offs := range needed {
		for _, off := range offs {
			if r, ok := reached[p]; ok && off <= r && !seen[p][off] {
				gone[p]++
			}
		}
	}
	return gone
}

// Why no sound proof could say Proven in a scenario: what Kafka allows the
// broker to do to the group's data while the group is down, read from the
// scenario's settings and the records written before the verdict (never
// from what the broker did, nor from the verdict). A false alarm in such a scenario is one no proof could avoid
// without an assumption the guard cannot check: its claim was that the
// broker may, and this time it did not. An alarm elsewhere is one a
// sounder or sharper proof might have avoided. The rules, each from
// Kafka's source (docs/kafka-semantics.md):
//
//   - A segment rolls when the next batch would overflow it
//     (LogSegment.shouldRoll by size), at any time: whenever a topic takes
//     traffic. Retention deletes a closed segment once its newest record
//     is retention.ms old (UnifiedLog.deleteRetentionMsBreachedSegments),
//     so a record may be deleted retention.ms after its write.
//   - The cleaner keeps a tombstone until delete.retention.ms after the
//     start of the first cleaning that kept it (MemoryRecords.filterTo), a
//     cleaning may start as soon as its segment is closed, and a cleaning
//     already running when the guard reads is not seen: a tombstone may go
//     delete.retention.ms after its write, or after the read.
//   - Each replica rolls its own segments (a follower appends the leader's
//     batches in its own fetch sizes, and rolls by its own clock), and a
//     leader change brings its boundaries: what the leader's segments look
//     like bounds nothing.
//   - Kafka 4.x makes a classic group a consumer group when a member
//     joins it with group.protocol=consumer (KIP-848; an Empty one whatever
//     group.consumer.migration.policy says, a Stable one under its
//     default, bidirectional: GroupMetadataManager.getOrMaybeCreateConsumerGroup),
//     whose offsets expire per commit once it is Empty again: the client
//     settings of the consumers that come back, which the guard cannot
//     read, decide.
const (
	floorRetention  = "retention.ms under the window: a record written once the group is down may be deleted before it is back"
	floorTombstone  = "delete.retention.ms under the window: a tombstone written once the group is down may be dropped before it is back"
	floorBehind     = "retention.ms at most the window plus the commit's age: a record the group has not read, written before the verdict, may be deleted before it is back"
	floorTombBehind = "delete.retention.ms at most the window: a tombstone the group needs, behind its commit, may be cleaned as the guard reads and dropped before the group is back"
	floorMigration  = "a 4.x classic group whose commit is older than offsets.retention.minutes at the window's end: converted by a consumer joining with group.protocol=consumer, its offsets expire per commit"
)

// unprovable is why no sound proof could say Proven in s (see the rules
// above), tombstonesBehind saying whether the group was behind a
// tombstone it needs as the verdict was taken; "" when one could.
func unprovable(s Scenario, tombstonesBehind bool) string {
	window, retention, deleteRetention := s.Window.Milliseconds(), s.RetentionMs, s.DeleteRetentionMs
	deletes := strings.Contains(s.CleanupPolicy, "delete") && retention >= 0
	switch {
	case deletes && retention < window:
		return floorRetention
	case s.Compacted() && deleteRetention < window:
		return floorTombstone
	case deletes && (s.Lag > 0 || s.Diverged) && retention <= window+s.CommitAge.Milliseconds():
		// The records the group has not read were written before its
		// commit; on a diverged log, where it rewinds to, before the
		// truncation.
		return floorBehind
	case deletes && s.AddPartition && retention <= window:
		// The added partition's records are written before the verdict.
		return floorBehind
	case s.Compacted() && tombstonesBehind && deleteRetention <= window:
		// Written before the verdict: a cleaning may start as the guard
		// reads, and stamp it delete.retention.ms from then.
		return floorTombBehind
	case kip848Line(s.Line) && s.Group == groupClassic && s.CommitAge+s.Window > offsetsRetention:
		return floorMigration
	}
	return ""
}

// floor counts, among the judged trials whose scenario is in, those no
// sound proof could prove (unprovable), by kind of verdict, and the false
// alarms there per rule.
type floor struct {
	judged, falseAlarms, trueAlarms, proven int
	rules                                   map[string]int
}

func floorOf(os []outcome, in func(Scenario) bool) floor {
	f := floor{rules: map[string]int{}}
	for _, o := range os {
		rule := unprovable(o.scenario, o.tombstonesBehind)
		if o.kind == inconclusive || !in(o.scenario) || rule == "" {
			continue
		}
		f.judged++
		switch o.kind {
		case falseAlarm:
			f.falseAlarms++
			f.rules[rule]++
		case trueAlarm:
			f.trueAlarms++
		default:
			f.proven++
		}
	}
	return f
}

// claimTally counts, per reason, the verdicts whose claim held and did
// not (unscored reasons apart).
type claimTally struct{ held, notHeld, unscored int }

func tallyClaims(os []outcome) map[string]*claimTally {
	out := map[string]*claimTally{}
	for _, o := range os {
		if o.kind == inconclusive {
			continue
		}
		for _, c := range o.claims {
			t := out[c.Reason]
			if t == nil {
				t = &claimTally{}
				out[c.Reason] = t
			}
			switch {
			case c.Claim == "":
				t.unscored++
			case c.Held:
				t.held++
			default:
				t.notHeld++
			}
		}
	}
	return out
}

// formatTally is the tally as lines, one per reason, sorted.
func formatTally(m map[string]*claimTally) string {
	rs := make([]string, 0, len(m))
	for r := range m {
		rs = append(rs, r)
	}
	sort.Strings(rs)
	var b strings.Builder
	for _, r := range rs {
		t := m[r]
		claim := reasonClaims[r]
		if claim == "" {
			fmt.Fprintf(&b, "\n  %s (not scored): %d", r, t.unscored)
			continue
		}
		fmt.Fprintf(&b, "\n  %s (%s): held %d, did not hold %d", r, claim, t.held, t.notHeld)
	}
	return b.String()
}

// The claims each reason makes are scored against what the broker did:
// seed 003's expired offsets replayed by earliest are a true alarm, not a
// false one; a tombstone alarm where every needed tombstone survived is
// false.
func TestScoreClaims(t *testing.T) {
	expired := map[int32]partitionFacts{
		0: {Committed: 10, CommittedBack: -1, LogStartBack: 0, Last: 30},
		1: {Committed: 12, CommittedBack: 12, LogStartBack: 0, Last: 30},
	}
	kept := map[int32]partitionFacts{0: {Committed: 10, CommittedBack: 10, LogStartBack: 0, Last: 30}}
	deleted := map[int32]partitionFacts{0: {Committed: 10, CommittedBack: 10, LogStartBack: 11, Last: 30}}
	deletedBelow := map[int32]partitionFacts{0: {Committed: 10, CommittedBack: 10, LogStartBack: 10, Last: 30}}
	added := map[int32]partitionFacts{
		0: {Committed: 10, CommittedBack: 10, Last: 30},
		1: {Committed: -1, CommittedBack: -1, Last: 4},
	}
	addedEmpty := map[int32]partitionFacts{1: {Committed: -1, CommittedBack: -1, LogStartBack: 0, Last: -1}}
	tombGone := map[int32]partitionFacts{0: {Committed: 10, CommittedBack: 10, Last: 30, TombstonesNeeded: 2, TombstonesGone: 1}}
	tombKept := map[int32]partitionFacts{0: {Committed: 10, CommittedBack: 10, Last: 30, TombstonesNeeded: 2}}
	// Issue 32, seed 000's diverged log: committed 10 with its epoch, the
	// log truncated to 5 and grown back; the restarted consumer fetched
	// first from 5 (it validated the epoch and rewound), or from 10.
	rewound := map[int32]partitionFacts{
		0: {Committed: 5, CommittedBack: 10, Last: 30, Diverged: true, DivergedTo: 5, RestartedAt: 5},
		1: {Committed: 12, CommittedBack: 12, Last: 30, RestartedAt: 12},
	}
	resumed := map[int32]partitionFacts{0: {Committed: 5, CommittedBack: 10, Last: 30, Diverged: true, DivergedTo: 5, RestartedAt: 10}}
	halfRewound := map[int32]partitionFacts{
		0: {Committed: 5, CommittedBack: 10, Last: 30, Diverged: true, DivergedTo: 5, RestartedAt: 5},
		1: {Committed: 6, CommittedBack: 9, Last: 30, Diverged: true, DivergedTo: 6, RestartedAt: -1},
	}

	cases := []struct {
		name  string
		claim string
		facts map[int32]partitionFacts
		held  bool
	}{
		{"one partition's offset expired", claimOffsetsExpire, expired, true},
		{"offsets kept", claimOffsetsExpire, kept, false},
		{"an added partition never had an offset", claimOffsetsExpire, added, false},
		{"log start passed the committed offset", claimRecordsDeleted, deleted, true},
		{"log start at the committed offset", claimRecordsDeleted, deletedBelow, false},
		{"nothing deleted", claimRecordsDeleted, kept, false},
		{"a needed tombstone dropped", claimTombstonesDropped, tombGone, true},
		{"every needed tombstone kept", claimTombstonesDropped, tombKept, false},
		{"a partition without an offset holds records", claimResetDecides, added, true},
		{"expired offsets leave the reset to decide", claimResetDecides, expired, true},
		{"a partition without an offset and without records", claimResetDecides, addedEmpty, false},
		{"every partition committed", claimResetDecides, kept, false},
		{"the consumer rewound to where the log diverged", claimRewinds, rewound, true},
		{"the consumer resumed at the commit", claimRewinds, resumed, false},
		{"one diverged partition never positioned", claimRewinds, halfRewound, false},
		{"no partition diverged", claimRewinds, kept, false},
	}
	for _, c := range cases {
		if got := claimHeld(c.claim, c.facts); got != c.held {
			t.Errorf("%s: %q held = %v, want %v", c.name, c.claim, got, c.held)
		}
	}

	// Every reason the proof's constants name for a group's offsets,
	// records, tombstones or resets is scored.
	for _, r := range []string{proof.ReasonOffsetsRetentionShorterThanWindow, proof.ReasonEmptyGroupOffsetsMayExpireBeforeWindow,
		proof.ReasonRecoveryHeadroomShorterThanWindow, proof.ReasonTombstoneRetentionShorterThanWindow, proof.ReasonOffsetResetMaySkipRecords,
		proof.ReasonNoCommittedOffset, proof.ReasonCommittedEpochDiverged} {
		if reasonClaims[r] == "" {
			t.Errorf("%s is not scored", r)
		}
	}

	reasons := []string{proof.ReasonOffsetsRetentionShorterThanWindow, proof.ReasonTombstoneRetentionShorterThanWindow, proof.ReasonInfiniteRetentionNotAllowed}
	both := scoreClaims(reasons, map[int32]partitionFacts{0: {Committed: 10, CommittedBack: -1, Last: 30, TombstonesNeeded: 1, TombstonesGone: 1}})
	onlyOffsets := scoreClaims(reasons, map[int32]partitionFacts{0: {Committed: 10, CommittedBack: -1, Last: 30, TombstonesNeeded: 1}})
	if want := []claimResult{{reasons[0], claimOffsetsExpire, true}, {reasons[1], claimTombstonesDropped, true}, {reasons[2], "", false}}; !slices.Equal(both, want) {
		t.Errorf("scored %v, want %v", both, want)
	}

	judged := []struct {
		name                 string
		proven, lost, warned bool
		claims               []claimResult
		kind, how            string
	}{
		{"Proven, nothing lost", true, false, false, nil, trueProven, ""},
		{"Proven, lost", true, true, false, nil, falseProven, ""},
		{"Proven, lost as the numbers said", true, true, true, nil, warnedProven, ""},
		{"alarm, lost", false, true, false, onlyOffsets, trueAlarm, alarmLost},
		// Seed 003: offsets expired, earliest replayed; and the tombstone
		// went too.
		{"alarm, every claim held, earliest replayed", false, false, false, both, trueAlarm, alarmClaims},
		{"alarm, the tombstone claim did not hold", false, false, false, onlyOffsets, falseAlarm, ""},
		{"alarm, nothing scored", false, false, false, scoreClaims([]string{proof.ReasonInfiniteRetentionNotAllowed}, nil), falseAlarm, ""},
		{"alarm, no reasons", false, false, false, nil, falseAlarm, ""},
		// Issue 32: Violated by CommittedEpochDiverged alone, the consumer
		// rewound and lost nothing: a true alarm (before: a false one).
		{"alarm, diverged under its epoch, rewound", false, false, false,
			scoreClaims([]string{proof.ReasonCommittedEpochDiverged}, rewound), trueAlarm, alarmClaims},
		{"alarm, diverged under its epoch, not rewound, nothing lost", false, false, false,
			scoreClaims([]string{proof.ReasonCommittedEpochDiverged}, resumed), falseAlarm, ""},
	}
	for _, c := range judged {
		if kind, how := judge(c.proven, c.lost, c.warned, c.claims); kind != c.kind || how != c.how {
			t.Errorf("%s: %q (%q), want %q (%q)", c.name, kind, how, c.kind, c.how)
		}
	}

	tally := tallyClaims([]outcome{{kind: trueAlarm, claims: both}, {kind: falseAlarm, claims: onlyOffsets}, {kind: inconclusive, claims: both}})
	if got := *tally[reasons[0]]; got != (claimTally{held: 2}) {
		t.Errorf("%s tallied %+v, want held 2 (inconclusive trials not counted)", reasons[0], got)
	}
	if got := *tally[reasons[1]]; got != (claimTally{held: 1, notHeld: 1}) {
		t.Errorf("%s tallied %+v, want held 1, not held 1", reasons[1], got)
	}
}

// Needed tombstones are the last record of their key at or after the
// committed offset, and only those.
func TestNeededTombstones(t *testing.T) {
	log := map[int32][]produced{
		0: {{0, "a", true}, {1, "b", false}, {2, "c", true}, {3, "b", true}, {4, "c", false}},
		1: {{0, "x", true}},
	}
	got := neededTombstones(log, map[int32]int64{0: 1, 1: -1})
	if want := []int64{3}; !slices.Equal(got[0], want) {
		t.Errorf("partition 0 needs %v, want %v (a's is behind the commit, c was written again)", got[0], want)
	}
	if want := []int64{0}; !slices.Equal(got[1], want) {
		t.Errorf("partition 1 (no offset) needs %v, want %v", got[1], want)
	}
}

// The floor names the scenarios no sound proof could prove from their
// settings alone, one rule each, and leaves the others: seed 000's outbox
// lagging on a topic whose retention is the window exactly (its record,
// written before the verdict, may go before the consumer is back), a
// compacted topic whose tombstones live the window exactly, seed 003's
// batch group between runs on 4.x, a classic group the brokers may
// convert; and the same with room to spare, which a proof may prove.
func TestUnprovable(t *testing.T) {
	provable := Scenario{Line: "3.9", Group: groupClassic, CleanupPolicy: "delete", Window: 20 * time.Second,
		RetentionMs: 30_000, CommitAge: 5 * time.Second}
	compact := provable
	compact.CleanupPolicy, compact.DeleteRetentionMs = "compact", 40_000
	with := func(s Scenario, change func(*Scenario)) Scenario { change(&s); return s }
	cases := []struct {
		name   string
		s      Scenario
		behind bool // the group behind a tombstone it needs
		want   string
	}{
		{"caught up, retention over the window", provable, false, ""},
		{"retention under the window", with(provable, func(s *Scenario) { s.RetentionMs = 19_999 }), false, floorRetention},
		{"lagging, retention the window plus the commit's age", with(provable, func(s *Scenario) { s.Lag, s.RetentionMs = 3, 25_000 }), false, floorBehind},
		{"lagging, retention a millisecond more", with(provable, func(s *Scenario) { s.Lag, s.RetentionMs = 3, 25_001 }), false, ""},
		{"caught up, retention the window", with(provable, func(s *Scenario) { s.RetentionMs = 20_000 }), false, ""},
		{"a partition added, retention the window", with(provable, func(s *Scenario) { s.AddPartition, s.RetentionMs = true, 20_000 }), false, floorBehind},
		{"diverged, retention the window plus the commit's age", with(provable, func(s *Scenario) { s.Diverged, s.RetentionMs = true, 25_000 }), false, floorBehind},
		{"compacted, delete.retention.ms over the window", compact, false, ""},
		{"compacted, delete.retention.ms under the window", with(compact, func(s *Scenario) { s.DeleteRetentionMs = 19_999 }), false, floorTombstone},
		{"compacted, no tombstone behind, delete.retention.ms the window", with(compact, func(s *Scenario) { s.Lag, s.DeleteRetentionMs = 3, 20_000 }), false, ""},
		{"compacted, a tombstone behind, delete.retention.ms the window", with(compact, func(s *Scenario) { s.Lag, s.DeleteRetentionMs = 3, 20_000 }), true, floorTombBehind},
		{"compacted, a tombstone behind, delete.retention.ms over the window", with(compact, func(s *Scenario) { s.Lag = 3 }), true, ""},
		{"compacted, lagging, retention.ms short (compact does not delete)", with(compact, func(s *Scenario) { s.Lag, s.RetentionMs = 3, 1_000 }), false, ""},
		{"4.4 classic, commit expires per commit before the window ends", with(provable, func(s *Scenario) { s.Line, s.CommitAge = "4.4", 45*time.Second }), false, floorMigration},
		{"4.4 classic, commit within offsets.retention.minutes at the window's end", with(provable, func(s *Scenario) { s.Line, s.CommitAge = "4.4", 40*time.Second }), false, ""},
		{"3.9 classic, the same old commit (no conversion)", with(provable, func(s *Scenario) { s.CommitAge = 45 * time.Second }), false, ""},
		{"4.4 KIP-848 group: per commit, a loss when it expires, not a floor", with(provable, func(s *Scenario) { s.Line, s.Group, s.CommitAge = "4.4", groupConsumer, 45*time.Second }), false, ""},
	}
	for _, c := range cases {
		if got := unprovable(c.s, c.behind); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}

	// Only judged trials count, each by its verdict.
	short := with(provable, func(s *Scenario) { s.RetentionMs = 10_000 })
	fl := floorOf([]outcome{
		{scenario: short, kind: falseAlarm}, {scenario: short, kind: trueAlarm}, {scenario: short, kind: inconclusive},
		{scenario: provable, kind: falseAlarm}, {scenario: provable, kind: trueProven},
	}, func(Scenario) bool { return true })
	if fl.judged != 2 || fl.falseAlarms != 1 || fl.trueAlarms != 1 || fl.proven != 0 || fl.rules[floorRetention] != 1 || len(fl.rules) != 1 {
		t.Errorf("floor %+v, want 2 judged: 1 false alarm (%s), 1 true alarm", fl, floorRetention)
	}
}
