package main

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// The load's pure pieces. Seed 003's group commits all 24 partitions of
// its topic on every auto-commit: one commit of the load is one such
// request, and the groups take turns, so the log holds every group's
// commits many times over, as an uncompacted __consumer_offsets does.
func TestCommitOfCoversEveryPartitionGroupsInTurn(t *testing.T) {
	s := shape{Groups: 3, Topics: 2, Partitions: 24, LogEnd: 10}
	seen := map[string]int{}
	for i := range 6 {
		g, offs := s.commitOf(i)
		seen[g]++
		n := 0
		offs.Each(func(o kadm.Offset) {
			n++
			if o.At != s.LogEnd {
				t.Errorf("commit %d of %s: offset %d, want the log end %d", i, g, o.At, s.LogEnd)
			}
		})
		if n != 24 {
			t.Errorf("commit %d of %s covers %d partitions, want 24", i, g, n)
		}
		if _, ok := offs[s.topicOf(i%3)]; !ok || len(offs) != 1 {
			t.Errorf("commit %d of %s is on %v, want only %s", i, g, offs, s.topicOf(i%3))
		}
	}
	for g := range 3 {
		if seen[groupName(g)] != 2 {
			t.Errorf("%s committed %d times in two rounds, want 2 (%v)", groupName(g), seen[groupName(g)], seen)
		}
	}
}

func TestTargetsAreThePoliciesGroups(t *testing.T) {
	s := shape{Groups: 10, Topics: 4, Partitions: 24}
	for _, read := range []bool{true, false} {
		ts := s.targets(5, read)
		if len(ts) != 5 {
			t.Fatalf("%d targets, want 5", len(ts))
		}
		for g, tg := range ts {
			if tg.Group != groupName(g) || len(tg.Topics) != 1 || tg.Topics[0] != s.topicOf(g) || tg.ReadOffsetsTopic != read {
				t.Errorf("target %d = %+v, want group %s on %s, read %v", g, tg, groupName(g), s.topicOf(g), read)
			}
		}
	}
}

// A pass counts as caught up only for observations whose every partition
// has an exact commit time: a reason, a missing time or no partition at
// all is not exact (what the proof would then bound instead).
func TestCaughtUpCountsOnlyExactObservations(t *testing.T) {
	at := time.Unix(1700000000, 0)
	exact := proof.Observation{Group: proof.GroupObservation{ID: "a"},
		Topics: []proof.TopicObservation{{Name: "t", Partitions: []proof.PartitionObservation{{Partition: 0, LastCommit: at}}}}}
	notRead := exact
	notRead.Group.ID = "b"
	notRead.OffsetsTopic = proof.OffsetsTopicRead{Requested: true, Reason: proof.OffsetsTopicNotRead, Problem: "deadline"}
	undated := proof.Observation{Group: proof.GroupObservation{ID: "c"},
		Topics: []proof.TopicObservation{{Name: "t", Partitions: []proof.PartitionObservation{{Partition: 0, LastCommit: at}, {Partition: 1}}}}}
	empty := proof.Observation{Group: proof.GroupObservation{ID: "d"}}

	if n, why := caughtUp([]proof.Observation{exact, exact}); n != 2 || why != "" {
		t.Errorf("two exact: %d, %q; want 2 and no reason", n, why)
	}
	n, why := caughtUp([]proof.Observation{exact, notRead, undated, empty})
	if n != 1 {
		t.Errorf("one exact of four: counted %d", n)
	}
	if why != proof.OffsetsTopicNotRead+": deadline" {
		t.Errorf("reason %q, want the first observation's reason", why)
	}
	if n, why := caughtUp([]proof.Observation{undated}); n != 0 || why == "" {
		t.Errorf("a partition without a time: %d, %q; want 0 and a reason", n, why)
	}
}

func TestParseCounts(t *testing.T) {
	got, err := parseCounts("5000, 20000")
	if err != nil || len(got) != 2 || got[0] != 5000 || got[1] != 20000 {
		t.Errorf("parseCounts = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "5000,x", "-3"} {
		if _, err := parseCounts(bad); err == nil {
			t.Errorf("parseCounts(%q) accepted", bad)
		}
	}
}

// The steady figure is the mean of the passes after the catch-up only.
func TestSteadyIsTheMeanAfterTheCatchUp(t *testing.T) {
	r := measureResult{SteadyFrom: 1, Passes: []passCost{
		{Wall: time.Minute, CPU: time.Minute, BytesRead: 1e9, Requests: apiCounts{"Fetch": 100}},
		{Wall: 2 * time.Second, CPU: time.Second, BytesRead: 10, BytesWritten: 4, Requests: apiCounts{"Fetch": 2, "Metadata": 1}},
		{Wall: 4 * time.Second, CPU: 3 * time.Second, BytesRead: 30, BytesWritten: 6, Requests: apiCounts{"Fetch": 4, "Metadata": 1}},
	}}
	s, n := r.steady()
	if n != 2 || s.Wall != 3*time.Second || s.CPU != 2*time.Second || s.BytesRead != 20 || s.BytesWritten != 5 {
		t.Errorf("steady = %+v over %d passes", s, n)
	}
	if s.Requests["Fetch"] != 3 || s.Requests["Metadata"] != 1 || s.Requests.total() != 4 {
		t.Errorf("steady requests = %v", s.Requests)
	}
	if got := (apiCounts{"Metadata": 3, "Fetch": 5}).minus(apiCounts{"Metadata": 3, "Fetch": 2}).String(); got != "Fetch 3" {
		t.Errorf("minus = %q, want %q", got, "Fetch 3")
	}
}
