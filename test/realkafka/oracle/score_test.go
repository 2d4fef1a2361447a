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
