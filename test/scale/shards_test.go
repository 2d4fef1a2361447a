package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// TestShardsSplitByConnection: issue 34's two-shard step, 20,000 policies
// on two Kafka clusters, puts each cluster's policies, and only them, on
// one shard (a pass serves all of a connection's policies): 2 × 10,000.
func TestShardsSplitByConnection(t *testing.T) {
	s := fullShape
	s.Clusters = 2
	if got := s.shardCounts(20000, 2); got["shard-0"] != 10000 || got["shard-1"] != 10000 || len(got) != 2 {
		t.Errorf("20,000 policies on 2 clusters over 2 shards: %v, want 10,000 each", got)
	}
	byCluster := map[int]string{}
	for g := range 1000 {
		sh := s.shardOf(g, 2)
		if prev, ok := byCluster[s.cluster(g)]; ok && prev != sh {
			t.Fatalf("cluster %d's policies on shards %s and %s", s.cluster(g), prev, sh)
		}
		byCluster[s.cluster(g)] = sh
	}
	// Three clusters over two shards: still one shard per cluster.
	s.Clusters = 3
	if got := s.shardCounts(3000, 2); got["shard-0"] != 2000 || got["shard-1"] != 1000 {
		t.Errorf("3,000 policies on 3 clusters over 2 shards: %v, want clusters 0 and 2 on shard-0", got)
	}
}

// TestShardSelectorsLeaveNoGap: the managers' selectors, parsed as the
// manager parses --watch-label-selector, take every policy exactly once:
// seed 003's settlement policy is proven whether it names a shard, names
// one the run lacks, or names none.
func TestShardSelectorsLeaveNoGap(t *testing.T) {
	main, each := shardSelectors(2)
	if want := []string{shardLabel + "=shard-0", shardLabel + "=shard-1"}; !slices.Equal(each, want) {
		t.Errorf("shard selectors %v, want %v", each, want)
	}
	sels := map[string]labels.Selector{}
	for name, s := range map[string]string{"main": main, "shard-0": each[0], "shard-1": each[1]} {
		sel, err := labels.Parse(s)
		if err != nil {
			t.Fatalf("%s's selector %q: %v", name, s, err)
		}
		sels[name] = sel
	}
	for set, want := range map[string]string{"": "main", "shard-0": "shard-0", "shard-1": "shard-1", "shard-2": "main"} {
		ls := labels.Set{}
		if set != "" {
			ls[shardLabel] = set
		}
		var got []string
		for name, sel := range sels {
			if sel.Matches(ls) {
				got = append(got, name)
			}
		}
		if len(got) != 1 || got[0] != want {
			t.Errorf("a policy labelled %v is reconciled by %v, want %s only", ls, got, want)
		}
	}
}

// TestTrackerTimesEachShard: each shard's time to prove is when its own
// last policy first had a proof of this run, not the run's last.
func TestTrackerTimesEachShard(t *testing.T) {
	s := fullShape
	s.Clusters = 2
	start := time.Now()
	tr := newProofTracker(start, 4, 0)
	tr.groupOf = func(g int) string { return s.shardOf(g, 2) }
	tr.groupWant = s.shardCounts(4, 2)
	prove := func(g int, checked time.Time) {
		tr.note(&rgv1.ConsumerRetentionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: policyName(g), Namespace: s.namespace(g)},
			Status:     rgv1.ConsumerRetentionPolicyStatus{Proof: &rgv1.ProofStatus{Verdict: rgv1.VerdictProven, CheckedAt: metav1.NewTime(checked)}},
		})
	}
	prove(0, start.Add(-time.Hour)) // a proof of an earlier run: not counted
	if _, ok := tr.groupDone("shard-0"); ok {
		t.Fatal("shard-0 done on a proof older than the run")
	}
	prove(0, start.Add(time.Second))
	prove(2, start.Add(time.Second))
	at0, ok := tr.groupDone("shard-0")
	if !ok {
		t.Fatal("shard-0 not done after policies 0 and 2")
	}
	if _, ok := tr.groupDone("shard-1"); ok {
		t.Fatal("shard-1 done without a proof")
	}
	prove(1, start.Add(time.Second))
	prove(3, start.Add(time.Second))
	at1, ok := tr.groupDone("shard-1")
	if !ok || at1.Before(at0) {
		t.Errorf("shard-1 done %v (at %v), shard-0 at %v", ok, at1, at0)
	}
	select {
	case <-tr.all:
	default:
		t.Error("every policy proven but the run not done")
	}
}

// TestRenderShards: each instance's row carries its own figures and its
// ratio to the one manager's of the same step (issue 34's aim: ≤ 0.55×).
func TestRenderShards(t *testing.T) {
	const mi = 1 << 20
	o := options{shards: 2, provenTimeout: 5 * time.Minute}
	one := stepResult{policies: 20000, rssPeak: 600 * mi, rssSteady: 400 * mi, heapSteady: 200 * mi,
		allProven: 200 * time.Second, cpuPerInt: 60, cores: 1}
	r := shardResult{policies: 20000, allProven: 100 * time.Second, instances: []instanceResult{
		{name: "main (webhook, default shard)", webhook: true, rssPeak: 120 * mi, rssSteady: 100 * mi, heap: 40 * mi, cpuPerInt: 6, cores: 0.1},
		{name: "shard-0", policies: 10000, rssPeak: 300 * mi, rssSteady: 220 * mi, heap: 100 * mi, allProven: 90 * time.Second, cpuPerInt: 33, cores: 0.55},
		{name: "shard-1", policies: 10000, rssPeak: 330 * mi, rssSteady: 200 * mi, heap: 110 * mi, cpuPerInt: 30, cores: 0.5},
	}}
	out := renderShards(o, one, r)
	rows := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if cells := strings.Split(l, " | "); len(cells) > 1 {
			rows[strings.TrimPrefix(cells[0], "| ")] = l
		}
	}
	for name, wants := range map[string][]string{
		"one manager":                   {"| 20000 |", "600 MiB", "3m20s", "60.00 s"},
		"main (webhook, default shard)": {"| 0 |", "120 MiB (0.20×)", "| - |", "6.00 s (0.10×)"},
		"shard-0":                       {"| 10000 |", "300 MiB (0.50×)", "220 MiB (0.55×)", "100 MiB (0.50×)", "1m30s (0.45×)", "33.00 s (0.55×)"},
		"shard-1":                       {"330 MiB (0.55×)", "> 5m0s (0)", "30.00 s (0.50×)"},
	} {
		row, ok := rows[name]
		if !ok {
			t.Errorf("no row for %s in\n%s", name, out)
			continue
		}
		for _, w := range wants {
			if !strings.Contains(row, w) {
				t.Errorf("%s's row lacks %q: %s", name, w, row)
			}
		}
	}
	if want := fmt.Sprintf("All 20000 policies proven on 2 shards: %s (0.50×) (one manager: %s)", "1m40s", "3m20s"); !strings.Contains(out, want) {
		t.Errorf("summary lacks %q:\n%s", want, out)
	}
}
