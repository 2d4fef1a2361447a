package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// The pure pieces: the load's shape (which group commits what), the
// targets the observer is given, and what counts as caught up. No I/O.

// shape is the __consumer_offsets the load writes: groups committing, as a
// caught-up consumer's auto-commit does, the same log end offset on every
// partition of its topic, again and again.
type shape struct {
	Groups     int   // groups committing
	Topics     int   // topics the groups consume (group g reads topic g % Topics)
	Partitions int   // partitions per topic: each commit covers all of them
	LogEnd     int64 // records per partition, the offset every commit carries
}

func groupName(g int) string { return fmt.Sprintf("offsets-load-group-%05d", g) }
func topicName(t int) string { return fmt.Sprintf("offsets-load-topic-%02d", t) }

// topicOf is the topic group g consumes.
func (s shape) topicOf(g int) string { return topicName(g % s.Topics) }

// commitOf is the i-th commit of the load: groups in turn, so after k
// rounds every group has committed k times (the log holds k records of
// each of its partitions, none compacted away in an active segment).
func (s shape) commitOf(i int) (group string, offsets kadm.Offsets) {
	g := i % s.Groups
	t := s.topicOf(g)
	for p := range s.Partitions {
		offsets.Add(kadm.Offset{Topic: t, Partition: int32(p), At: s.LogEnd, LeaderEpoch: -1})
	}
	return groupName(g), offsets
}

// targets are the first n groups as the manager's policies ask for them:
// one group, its topic, exact commit times from __consumer_offsets when
// read is set (the policy default, spec.kafka.readOffsetsTopic).
func (s shape) targets(n int, read bool) []kafka.Target {
	ts := make([]kafka.Target, n)
	for g := range n {
		ts[g] = kafka.Target{Group: groupName(g), Topics: []string{s.topicOf(g)}, ReadOffsetsTopic: read,
			RecoveryWindow: 72 * time.Hour}
	}
	return ts
}

// caughtUp counts the observations whose every partition carries an exact
// commit time read from __consumer_offsets, and says the first reason one
// does not (empty when all do). A pass that did not read the topic to its
// end sets no exact time (offsetstopic.go), so this is the reader's
// catch-up as the proof sees it.
func caughtUp(obs []proof.Observation) (exact int, why string) {
	for _, o := range obs {
		ok := o.OffsetsTopic.Reason == "" && len(o.Topics) > 0
		for _, t := range o.Topics {
			if len(t.Partitions) == 0 {
				ok = false
			}
			for _, p := range t.Partitions {
				if p.LastCommit.IsZero() {
					ok = false
				}
			}
		}
		switch {
		case ok:
			exact++
		case why == "" && o.OffsetsTopic.Reason != "":
			why = o.OffsetsTopic.Reason + ": " + o.OffsetsTopic.Problem
		case why == "" && len(o.Failures) > 0:
			why = fmt.Sprintf("group %s: %d failures, the first: %+v", o.Group.ID, len(o.Failures), o.Failures[0])
		case why == "":
			why = "group " + o.Group.ID + ": a partition without an exact commit time"
		}
	}
	return exact, why
}

// parseCounts reads a comma-separated list of positive counts ("5000,20000").
func parseCounts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive count", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no counts")
	}
	return out, nil
}

// apiCounts are Kafka requests per API, as the observer's request hook
// saw them.
type apiCounts map[string]int64

// minus is what c counted since before.
func (c apiCounts) minus(before apiCounts) apiCounts {
	d := apiCounts{}
	for k, v := range c {
		if v -= before[k]; v != 0 {
			d[k] = v
		}
	}
	return d
}

func (c apiCounts) total() int64 {
	var n int64
	for _, v := range c {
		n += v
	}
	return n
}

// String is "Fetch 3, ListOffsets 2", by API name.
func (c apiCounts) String() string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, c[k])
	}
	return strings.Join(parts, ", ")
}
