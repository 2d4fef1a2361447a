package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/retentionguard/retention-guard/test/e2e/stack"
)

// -shards N measures the last step again on N shards (issue 34, "Past one
// manager"), as the chart runs them (charts/retention-guard, values
// shards): each Kafka cluster's policies carry the label of one shard
// (the unit is the connection: a pass serves all of a cluster's
// policies), one manager process per shard reconciles only its label
// (--watch-label-selector) with its own leader election and no webhook,
// and the main manager serves the webhook and reconciles the default
// shard (every policy no listed shard selects: none here). Each
// instance's RSS, CPU and time to prove are reported beside the one
// manager's figures of the same step, in the same run.

// shardLabel is the label a connection and its policies name their shard
// with (the manager's constant, issue 34's contract).
const shardLabel = "retentionguard.io/shard"

// shardName is the name of shard i of a run.
func shardName(i int) string { return fmt.Sprintf("shard-%d", i) }

// shardOf is the shard of policy g among shards: its Kafka cluster's.
func (s shape) shardOf(g, shards int) string { return shardName(s.cluster(g) % shards) }

// shardCounts is how many of the first n policies each shard holds.
func (s shape) shardCounts(n, shards int) map[string]int {
	out := map[string]int{}
	for g := range n {
		out[s.shardOf(g, shards)]++
	}
	return out
}

// shardSelectors are the --watch-label-selector of the main manager (the
// default shard: no gap, it takes whatever no shard selects) and of each
// shard, as the chart renders them.
func shardSelectors(shards int) (main string, each []string) {
	var names []string
	for i := range shards {
		names = append(names, shardName(i))
		each = append(each, shardLabel+"="+shardName(i))
	}
	return shardLabel + " notin (" + strings.Join(names, ",") + ")", each
}

// instanceResult is what one manager process measured in a sharded step.
type instanceResult struct {
	name      string
	webhook   bool // serves the webhook (the main manager)
	policies  int  // the policies its selector takes
	rssPeak   float64
	rssSteady float64
	heap      float64
	allProven time.Duration // 0: not within -proven-timeout (or no policy)
	cpuPerInt float64
	cores     float64
}

// shardResult is a step measured on shards.
type shardResult struct {
	policies  int
	instances []instanceResult
	allProven time.Duration // every policy, whichever shard
	proofs    int
	admP99    float64 // the main manager's, steady
	admFailed int64
	load      string
}

// instance is one running manager process of a sharded step.
type instance struct {
	res         instanceResult
	proc        *stack.Process
	metricsAddr string
	pprofAddr   string
	rss         []float64
	heap        []float64
}

// measureShards measures n policies (created with their shard labels) on
// shards managers beside the main one, as measureStep does one manager.
func measureShards(ctx context.Context, o options, stk *stack.Stack, c client.WithWatch, n int) (shardResult, error) {
	r := shardResult{policies: n}
	waitForLoad(ctx, o)
	loadStart := loadAverage()
	logf("step %d policies on %d shards: clearing their statuses", n, o.shards)
	if err := clearStatuses(ctx, c); err != nil {
		return r, err
	}
	counts := o.shape.shardCounts(n, o.shards)
	mainSel, sels := shardSelectors(o.shards)

	stepCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	tracker := newProofTracker(start, n, o.shape.Deployments)
	tracker.groupOf = func(g int) string { return o.shape.shardOf(g, o.shards) }
	tracker.groupWant = counts

	// The main manager: the webhook, and the default shard.
	mainArgs := stk.ManagerArgs
	stk.ManagerArgs = stack.OverrideArgs(mainArgs, map[string]string{"--watch-label-selector": mainSel})
	defer func() { stk.ManagerArgs = mainArgs }()
	insts := []*instance{{res: instanceResult{name: "main (webhook, default shard)", webhook: true},
		metricsAddr: stk.MetricsAddr, pprofAddr: o.managerFlags["--pprof-bind-address"]}}
	if err := stk.StartManager(ctx); err != nil {
		return r, err
	}
	insts[0].proc = stk.Manager
	defer func() {
		for _, in := range insts[1:] {
			_ = in.proc.Stop(30 * time.Second)
		}
	}()
	for i, sel := range sels {
		ports := make([]int, 3)
		for j := range ports {
			p, err := stack.FreePort()
			if err != nil {
				return r, err
			}
			ports[j] = p
		}
		name := shardName(i)
		in := &instance{res: instanceResult{name: name, policies: counts[name]},
			metricsAddr: "127.0.0.1:" + strconv.Itoa(ports[0])}
		set := map[string]string{
			"--enable-webhook":            "false",
			"--watch-label-selector":      sel,
			"--leader-election-id":        stack.ReleaseName + "-" + name + "-leader",
			"--metrics-bind-address":      in.metricsAddr,
			"--health-probe-bind-address": "127.0.0.1:" + strconv.Itoa(ports[1]),
		}
		if in.pprofAddr = ""; o.profileDir != "" {
			in.pprofAddr = "127.0.0.1:" + strconv.Itoa(ports[2])
			set["--pprof-bind-address"] = in.pprofAddr
		}
		proc, err := stk.StartManagerInstance(ctx, "manager-"+name, stack.OverrideArgs(mainArgs, set), set["--health-probe-bind-address"])
		if err != nil {
			return r, err
		}
		in.proc = proc
		insts = append(insts, in)
	}
	load, allProven, err := tracker.untilProven(ctx, stepCtx, c, o)
	if err != nil {
		return r, err
	}
	r.allProven = allProven
	r.proofs, _ = tracker.counts()
	for _, in := range insts[1:] {
		if at, ok := tracker.groupDone(in.res.name); ok {
			in.res.allProven = at.Sub(start)
		}
	}
	logf("step %d policies on %d shards: %d proofs after %s; settling for %s", n, o.shards, r.proofs,
		time.Since(start).Round(100*time.Millisecond), o.settle)
	sleep(ctx, o.settle)

	// The steady state, every instance alike.
	before := make([]scrape, len(insts))
	for i, in := range insts {
		m, err := getMetrics(ctx, in.metricsAddr)
		if err != nil {
			return r, fmt.Errorf("%s: %w", in.res.name, err)
		}
		before[i] = m
	}
	t0 := time.Now()
	loadCtx, stopLoad := context.WithCancel(stepCtx)
	steadyLoad := &admissionLoad{}
	go steadyLoad.run(loadCtx, c, o.shape, tracker.pick, o.admissionRate)
	profiled := make(chan struct{}, len(insts))
	for _, in := range insts {
		if o.profileDir == "" {
			profiled <- struct{}{}
			continue
		}
		go func() {
			defer func() { profiled <- struct{}{} }()
			secs := strconv.Itoa(int(o.steady.Seconds()) - 5)
			saveProfile(ctx, in.pprofAddr, "profile?seconds="+secs, filepath.Join(o.profileDir, fmt.Sprintf("cpu-%d-%s.pprof", n, fileName(in.res.name))))
		}()
	}
	tick := time.NewTicker(2 * time.Second)
	for i := 0; time.Since(t0) < o.steady; i++ {
		select {
		case <-ctx.Done():
			tick.Stop()
			stopLoad()
			return r, ctx.Err()
		case <-tick.C:
		}
		for _, in := range insts {
			if v, _, err := procMemory(in.proc.PID()); err == nil {
				in.rss = append(in.rss, v)
			}
			if i%15 == 14 {
				if m, err := getMetrics(ctx, in.metricsAddr); err == nil {
					in.heap = append(in.heap, m.sum("go_memstats_heap_alloc_bytes", nil))
				}
			}
		}
	}
	tick.Stop()
	stopLoad()
	elapsed := time.Since(t0)
	for range insts {
		<-profiled
	}
	intervals := elapsed.Seconds() / o.interval.Seconds()
	admission := map[string]string{"kind": "Deployment", "decision": "allowed"}
	for i, in := range insts {
		if o.profileDir != "" {
			saveProfile(ctx, in.pprofAddr, "heap", filepath.Join(o.profileDir, fmt.Sprintf("heap-%d-%s.pprof", n, fileName(in.res.name))))
		}
		m, err := getMetrics(ctx, in.metricsAddr)
		if err != nil {
			return r, fmt.Errorf("%s: %w", in.res.name, err)
		}
		_, hwm, err := procMemory(in.proc.PID())
		if err != nil {
			return r, fmt.Errorf("%s: %w", in.res.name, err)
		}
		in.heap = append(in.heap, m.sum("go_memstats_heap_alloc_bytes", nil))
		in.res.rssPeak, in.res.rssSteady, in.res.heap = hwm, median(in.rss), median(in.heap)
		cpu := m.sum("process_cpu_seconds_total", nil) - before[i].sum("process_cpu_seconds_total", nil)
		in.res.cpuPerInt, in.res.cores = cpu/intervals, cpu/elapsed.Seconds()
		if in.res.webhook {
			in.res.policies = n - sum(counts)
			h := m.histogramOf("retentionguard_admission_duration_seconds", admission).
				minus(before[i].histogramOf("retentionguard_admission_duration_seconds", admission))
			r.admP99, _ = h.quantile(0.99)
		}
		r.instances = append(r.instances, in.res)
	}
	r.admFailed = load.failed.Load() + steadyLoad.failed.Load()
	r.load = loadStart + " → " + loadAverage()
	for _, in := range insts[1:] {
		if err := in.proc.Stop(30 * time.Second); err != nil {
			return r, err
		}
	}
	return r, stk.Manager.Stop(30 * time.Second)
}

func sum(m map[string]int) int {
	t := 0
	for _, v := range m {
		t += v
	}
	return t
}

// fileName turns an instance's name into a file name part.
func fileName(name string) string {
	name, _, _ = strings.Cut(name, " ")
	return name
}

// renderShards is the sharded step's table: the one manager's figures of
// the same step first, then each instance's, with its ratio to the one
// manager's (issue 34's aim: each shard at most 0.55×, all proven no
// slower).
func renderShards(o options, one stepResult, r shardResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n### %d policies on %d shards (one Kafka cluster's policies per shard label; the main manager serves the webhook)\n\n",
		r.policies, o.shards)
	b.WriteString("| manager | policies | RSS peak | RSS steady | Go heap | all proven | CPU per interval | cores |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	proven := func(d time.Duration, policies, proofs int) string {
		switch {
		case policies == 0:
			return "-"
		case d > 0:
			return d.Round(100 * time.Millisecond).String()
		default:
			return fmt.Sprintf("> %s (%d)", o.provenTimeout, proofs)
		}
	}
	ratio := func(v, ref float64) string {
		if ref <= 0 {
			return ""
		}
		return fmt.Sprintf(" (%.2f×)", v/ref)
	}
	fmt.Fprintf(&b, "| one manager | %d | %s | %s | %s | %s | %.2f s | %.3f |\n", one.policies, mib(one.rssPeak), mib(one.rssSteady),
		mib(one.heapSteady), proven(one.allProven, one.policies, one.proofs), one.cpuPerInt, one.cores)
	for _, in := range r.instances {
		p := proven(in.allProven, in.policies, 0)
		if in.allProven > 0 && one.allProven > 0 {
			p += ratio(in.allProven.Seconds(), one.allProven.Seconds())
		}
		fmt.Fprintf(&b, "| %s | %d | %s%s | %s%s | %s%s | %s | %.2f s%s | %.3f |\n", in.name, in.policies,
			mib(in.rssPeak), ratio(in.rssPeak, one.rssPeak), mib(in.rssSteady), ratio(in.rssSteady, one.rssSteady),
			mib(in.heap), ratio(in.heap, one.heapSteady), p, in.cpuPerInt, ratio(in.cpuPerInt, one.cpuPerInt), in.cores)
	}
	all := proven(r.allProven, r.policies, r.proofs)
	if r.allProven > 0 && one.allProven > 0 {
		all += ratio(r.allProven.Seconds(), one.allProven.Seconds())
	}
	fmt.Fprintf(&b, "\nAll %d policies proven on %d shards: %s (one manager: %s). Main manager's admission p99 steady %s, %d dry-run rollouts failed; load %s.\n",
		r.policies, o.shards, all, proven(one.allProven, one.policies, one.proofs), ms(r.admP99), r.admFailed, r.load)
	return b.String()
}
