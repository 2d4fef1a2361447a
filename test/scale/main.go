// Command scale measures the retention-guard manager in a large cluster,
// from outside, as an operator would (`make bench-scale`, see
// docs/benchmarks.md and docs/scaling.md).
//
// It starts the real parts — etcd and kube-apiserver, one kfake process
// per Kafka cluster (test/kafka-broker, counting the requests it answers)
// and the built manager binary as the Helm chart's ServiceAccount with the
// chart's flags (test/e2e/stack) — and builds issue 16's cluster: up to
// 20,000 policies in 500 namespaces on 3 Kafka clusters (one group each,
// 900 topics × 12 partitions), and 20,000 Secrets, 10,000 Deployments and
// 5,000 CronJobs the manager does not own. Then, for each step of policies
// (one per Kafka cluster, then 500, 1,000, 2,000, 5,000 and issue 26's
// 20,000), it clears every policy's status, starts the manager and
// measures:
//
//   - memory: peak RSS (VmHWM) and steady RSS (VmRSS) of the process, and
//     the Go heap from its /metrics;
//   - the time from start until every policy has a proof of this run;
//   - steady CPU per check interval (process_cpu_seconds_total);
//   - Kafka requests per interval, per cluster (counted by the brokers);
//   - API writes per interval (client-go's rest_client_requests_total);
//   - the admission handler's p99 (retentionguard_admission_duration_seconds)
//     for dry-run template changes of running consumers whose policy holds
//     a fresh proof, sent through the API server while the manager proves
//     every policy (startup) and in the steady state.
//
// With -shards N (issue 34) it then measures the last step again on N
// shards, as the chart's values shards run them (shards.go), each
// manager's figures beside the one manager's.
//
// It prints one table, how each figure grows with policies, and (with
// -out) the same as Markdown. -scale runs a smaller copy of the cluster
// (e.g. 0.02 while developing); the figures that matter come from -scale 1
// on an otherwise idle machine (the load average is printed beside them).
//
//	KUBEBUILDER_ASSETS=$(hack/build-control-plane.sh) go run ./test/scale
//	go run ./test/scale -scale 0.05 -steps 3,50,100 -steady 2m
//	go run ./test/scale -clusters 2 -shards 2
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/test/e2e/stack"
)

type kv []string

func (f *kv) String() string     { return strings.Join(*f, ",") }
func (f *kv) Set(v string) error { *f = append(*f, v); return nil }

type options struct {
	shape          shape
	interval       time.Duration
	steady         time.Duration
	settle         time.Duration
	provenTimeout  time.Duration
	admissionRate  float64
	managerFlags   map[string]string
	managerEnv     []string
	out            string
	dir            string
	waitLoad       float64
	maxLoadWaiting time.Duration
	profileDir     string
	// shards: measure the last step again on this many shards (0: not).
	shards int
}

func main() {
	var (
		o         options
		scale     = flag.Float64("scale", 1, "multiply every count by this (a smaller copy of the cluster, e.g. 0.02 while developing)")
		steps     = flag.String("steps", "", "policy counts to measure, comma-separated (default: 3 (one per Kafka cluster),500,1000,2000,5000,20000, scaled)")
		flagsKV   kv
		envKV     kv
		clusters  = flag.Int("clusters", fullShape.Clusters, "Kafka clusters")
		brokers   = flag.Int("brokers", fullShape.Brokers, "brokers per Kafka cluster")
		namespace = flag.Int("namespaces", 0, "namespaces (default: 500, scaled)")
	)
	flag.DurationVar(&o.interval, "interval", time.Minute, "every policy's spec.checkInterval")
	flag.DurationVar(&o.steady, "steady", 3*time.Minute, "how long the steady state is measured, after every policy is proven and -settle")
	flag.DurationVar(&o.settle, "settle", 0, "wait after every policy is proven before the steady state is measured (default: one interval)")
	flag.DurationVar(&o.provenTimeout, "proven-timeout", 5*time.Minute, "give up waiting for every policy's proof after this long (the step is still measured)")
	flag.Float64Var(&o.admissionRate, "admission-rate", 20, "dry-run rollouts per second sent through the API server while measuring (0: none)")
	flag.Var(&flagsKV, "manager-flag", "--flag=value for the manager, over the chart's and the stack's (repeatable), e.g. --manager-flag=--kube-api-qps=100")
	flag.Var(&envKV, "manager-env", "KEY=VALUE in the manager's environment (repeatable)")
	flag.StringVar(&o.out, "out", "", "also write the results as Markdown to this file")
	flag.StringVar(&o.dir, "dir", "", "keep the stack's files (logs, kubeconfigs) in this directory instead of a temporary one")
	flag.StringVar(&o.profileDir, "profile-dir", "", "write the manager's CPU profile of each steady state and its heap profile at the end, and heap-first-N.{pprof,txt} at the first proofs' RSS peak, into this directory (--pprof-bind-address)")
	flag.IntVar(&o.shards, "shards", 0, "also measure the last step on this many shards (2 or more; issue 34): each Kafka cluster's policies labelled retentionguard.io/shard=shard-<cluster mod shards>, one manager per shard (--watch-label-selector, its own --leader-election-id, --enable-webhook=false) beside the main one serving the webhook")
	flag.Float64Var(&o.waitLoad, "wait-load", 0, "before each step, wait until the 1-minute load average is at most this (0: do not wait)")
	flag.DurationVar(&o.maxLoadWaiting, "max-load-wait", 30*time.Minute, "give up waiting for -wait-load after this long (the step runs anyway, the load is printed)")
	flag.Parse()
	// The harness's clients log nothing worth reading (the manager's log is
	// in -dir); without a logger controller-runtime prints a stack trace.
	ctrllog.SetLogger(logr.Discard())

	o.shape = fullShape
	o.shape.Clusters, o.shape.Brokers = max(1, *clusters), max(1, *brokers)
	o.shape = o.shape.scaled(*scale)
	if *namespace > 0 {
		o.shape.Namespaces = *namespace
	}
	if *steps != "" {
		st, err := parseSteps(*steps)
		if err != nil {
			usage(err)
		}
		o.shape.Steps = st
	}
	if o.settle == 0 {
		o.settle = o.interval
	}
	o.managerFlags = map[string]string{
		// As the chart runs it: leader election on.
		"--leader-elect":              "true",
		"--leader-election-namespace": stack.ReleaseNamespace,
	}
	for _, f := range flagsKV {
		k, v, ok := strings.Cut(f, "=")
		if !ok || !strings.HasPrefix(k, "--") {
			usage(fmt.Errorf("-manager-flag %q: use --flag=value", f))
		}
		o.managerFlags[k] = v
	}
	if o.profileDir != "" {
		port, err := stack.FreePort()
		if err != nil {
			usage(err)
		}
		o.managerFlags["--pprof-bind-address"] = "127.0.0.1:" + strconv.Itoa(port)
		if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
			usage(err)
		}
	}
	for _, e := range envKV {
		if !strings.Contains(e, "=") {
			usage(fmt.Errorf("-manager-env %q: use KEY=VALUE", e))
		}
	}
	o.managerEnv = envKV
	if o.shards == 1 || o.shards < 0 {
		usage(fmt.Errorf("-shards %d: use 2 or more (0: one manager only)", o.shards))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func usage(err error) {
	fmt.Fprintln(os.Stderr, "scale:", err)
	os.Exit(64)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func run(ctx context.Context, o options) error {
	s := o.shape
	if o.dir != "" {
		if entries, err := os.ReadDir(o.dir); err == nil && len(entries) > 0 {
			return fmt.Errorf("-dir %s is not empty: give a new directory (the Kafka clusters' data would be reused)", o.dir)
		}
	}
	logf("cluster: %s; steps %v; checkInterval %s; load %s", s, s.Steps, o.interval, loadAverage())
	stk, err := stack.Start(ctx, stack.Options{
		Dir:               o.dir,
		Log:               logWriter{},
		KafkaClusters:     s.Clusters,
		BrokersPerCluster: s.Brokers,
		BrokerStats:       true,
		// kfake rewrites its groups.log whenever it has grown past
		// state.log.compact.bytes (10 MiB by default) since the last
		// rewrite, and a rewrite keeps every group's latest commit: once
		// the groups' commits alone pass 10 MiB (about 6,000 groups of 24
		// partitions on one cluster, the 20,000-policy step), every
		// commit rewrote the whole file and populating the clusters did
		// not finish in 8 minutes (12 s with this). The bench's Kafka is a model; its file's compaction is
		// no part of what is measured.
		BrokerConfigs: map[string]string{"state.log.compact.bytes": strconv.Itoa(1 << 30)},
		ManagerFlags:  o.managerFlags,
		DeferManager:  true,
	})
	if err != nil {
		return err
	}
	defer stk.Stop()
	stk.ManagerEnv = o.managerEnv
	if !slices.ContainsFunc(o.managerEnv, func(e string) bool { return strings.HasPrefix(e, "GOMEMLIMIT=") }) {
		// In a pod the manager sets GOMEMLIMIT to 90% of its container's
		// memory limit (setMemoryLimit); here it runs outside a cgroup,
		// so the bench gives it the same from the chart's limit.
		limit, err := chartMemoryLimit(stk)
		if err != nil {
			return err
		}
		if limit > 0 {
			stk.ManagerEnv = append(stk.ManagerEnv, "GOMEMLIMIT="+strconv.FormatInt(limit*9/10, 10))
			logf("the chart's memory limit is %d MiB: the manager runs with GOMEMLIMIT=%d MiB, as in its pod", limit>>20, limit*9/10>>20)
		}
	}
	logf("manager: %s %s", stk.Binary, strings.Join(stk.ManagerArgs, " "))

	// The bench's own client has no client-side rate limit.
	cfg := rest.CopyConfig(stk.Env.Config)
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: stk.Env.Scheme})
	if err != nil {
		return err
	}

	logf("populating the Kafka clusters")
	errs := make(chan error, s.Clusters)
	for i, kc := range stk.Clusters {
		go func() { errs <- s.populateKafka(ctx, i, kc.Addrs, logf) }()
	}
	for range s.Clusters {
		if e := <-errs; e != nil {
			err = errors.Join(err, e)
		}
	}
	if err != nil {
		return err
	}

	// Workloads are created with the manager running: the chart's webhook
	// configuration is in place and fails closed without it.
	if err := stk.StartManager(ctx); err != nil {
		return err
	}
	logf("creating %d namespaces, %d Secrets, %d Deployments, %d CronJobs", s.Namespaces, s.Secrets, s.Deployments, s.CronJobs)
	if err := createAll(ctx, c, "namespaces", s.Namespaces, func(i int) client.Object {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.namespace(i), Labels: map[string]string{"team": s.namespace(i)}}}
	}, logf); err != nil {
		return err
	}
	if err := createAll(ctx, c, "Secrets", s.Secrets, func(i int) client.Object { return s.secret(i) }, logf); err != nil {
		return err
	}
	if err := createAll(ctx, c, "Deployments", s.Deployments, func(i int) client.Object { return s.deployment(i, s.maxPolicies()) }, logf); err != nil {
		return err
	}
	if err := createAll(ctx, c, "CronJobs", s.CronJobs, func(i int) client.Object { return s.cronJob(i) }, logf); err != nil {
		return err
	}
	if err := stk.Manager.Stop(30 * time.Second); err != nil {
		return err
	}

	var results []stepResult
	created := 0
	for _, n := range s.Steps {
		bootstrap := func(g int) []string { return stk.Clusters[s.cluster(g)].Addrs }
		if err := createAll(ctx, c, "policies", n-created, func(i int) client.Object {
			g := created + i
			p := s.policy(g, bootstrap(g), o.interval)
			if o.shards > 1 {
				// One manager reconciles every policy whatever its label.
				p.Labels = map[string]string{shardLabel: s.shardOf(g, o.shards)}
			}
			return p
		}, logf); err != nil {
			return err
		}
		created = n
		r, err := measureStep(ctx, o, stk, c, n)
		if err != nil {
			return err
		}
		results = append(results, r)
		logf("%s", r.detail())
	}
	report := renderReport(o, results)
	if o.shards > 1 && len(results) > 0 {
		last := results[len(results)-1]
		sr, err := measureShards(ctx, o, stk, c, last.policies)
		if err != nil {
			return err
		}
		report += renderShards(o, last, sr)
	}
	fmt.Print(report)
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(report), 0o644); err != nil {
			return err
		}
	}
	return nil
}

type logWriter struct{}

func (logWriter) Write(p []byte) (int, error) {
	logf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

var _ io.Writer = logWriter{}

// stepResult is what one step measured.
type stepResult struct {
	policies     int
	load         string // load averages at the start and end of the step
	rssPeak      float64
	rssSteady    float64
	heapSteady   float64
	allProven    time.Duration // 0: not within -proven-timeout
	proofs       int
	verdicts     map[rgv1.Verdict]int
	intervals    float64
	cpuPerInt    float64 // CPU seconds per interval
	cores        float64
	kafkaPerInt  []float64 // per cluster
	kafkaByAPI   []map[string]float64
	kafkaPerPass []float64 // per cluster: requests per Metadata request (one per pass)
	writesPerInt float64
	writesByVerb map[string]float64
	// writesByResource are all writes the API server served in the
	// steady state (the manager's and the bench's non-dry-run ones: none
	// but the manager's), by verb and resource.
	writesByResource map[string]float64
	readsPerInt      float64
	admStartP99      float64
	admStartBound    float64
	admStartN        float64
	admSteadyP99     float64
	admSteadyBnd     float64
	admSteadyN       float64
	admFailed        int64
}

// measureStep clears every policy's status, starts the manager, waits for
// every proof, settles, and measures the steady state.
func measureStep(ctx context.Context, o options, stk *stack.Stack, c client.WithWatch, n int) (stepResult, error) {
	r := stepResult{policies: n}
	waitForLoad(ctx, o)
	loadStart := loadAverage()
	logf("step %d policies: clearing their statuses", n)
	if err := clearStatuses(ctx, c); err != nil {
		return r, err
	}

	stepCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	tracker := newProofTracker(start, n, o.shape.Deployments)
	if err := stk.StartManager(ctx); err != nil {
		return r, err
	}
	pid := stk.Manager.PID()
	// The first proofs are the RSS peak: follow it with heap profiles.
	firstCtx, cancelFirst := context.WithCancel(stepCtx)
	firstDone := make(chan struct{})
	if o.profileDir != "" {
		go func() {
			defer close(firstDone)
			followPeak(firstCtx, pid, o.managerFlags["--pprof-bind-address"], filepath.Join(o.profileDir, fmt.Sprintf("heap-first-%d", n)))
		}()
	} else {
		close(firstDone)
	}
	load, allProven, err := tracker.untilProven(ctx, stepCtx, c, o)
	cancelFirst()
	<-firstDone
	if err != nil {
		return r, err
	}
	r.allProven = allProven
	r.proofs, r.verdicts = tracker.counts()
	afterStart, err := getMetrics(ctx, stk.MetricsAddr)
	if err != nil {
		return r, err
	}
	admission := map[string]string{"kind": "Deployment", "decision": "allowed"}
	h := afterStart.histogramOf("retentionguard_admission_duration_seconds", admission)
	r.admStartP99, r.admStartBound = h.quantile(0.99)
	r.admStartN = h.total()
	logf("step %d policies: %d proofs (%v) after %s; settling for %s", n, r.proofs, r.verdicts,
		time.Since(start).Round(100*time.Millisecond), o.settle)
	sleep(ctx, o.settle)

	// The steady state.
	m0, k0, a0, err := counters(ctx, stk)
	if err != nil {
		return r, err
	}
	t0 := time.Now()
	loadCtx, stopLoad := context.WithCancel(stepCtx)
	steadyLoad := &admissionLoad{}
	go steadyLoad.run(loadCtx, c, o.shape, tracker.pick, o.admissionRate)
	var rss, heap []float64
	profiled := make(chan struct{})
	if o.profileDir != "" {
		go func() {
			defer close(profiled)
			secs := strconv.Itoa(int(o.steady.Seconds()) - 5)
			saveProfile(ctx, o.managerFlags["--pprof-bind-address"], "profile?seconds="+secs,
				filepath.Join(o.profileDir, fmt.Sprintf("cpu-%d.pprof", n)))
		}()
	} else {
		close(profiled)
	}
	tick := time.NewTicker(2 * time.Second)
	scrapeEvery := 15 // one /metrics scrape every 30s, as Prometheus would
	for i := 0; time.Since(t0) < o.steady; i++ {
		select {
		case <-ctx.Done():
			tick.Stop()
			stopLoad()
			return r, ctx.Err()
		case <-tick.C:
		}
		if v, _, err := procMemory(pid); err == nil {
			rss = append(rss, v)
		}
		if i%scrapeEvery == scrapeEvery-1 {
			if m, err := getMetrics(ctx, stk.MetricsAddr); err == nil {
				heap = append(heap, m.sum("go_memstats_heap_alloc_bytes", nil))
			}
		}
	}
	tick.Stop()
	stopLoad()
	elapsed := time.Since(t0)
	<-profiled
	if o.profileDir != "" {
		saveProfile(ctx, o.managerFlags["--pprof-bind-address"], "heap", filepath.Join(o.profileDir, fmt.Sprintf("heap-%d.pprof", n)))
	}
	m1, k1, a1, err := counters(ctx, stk)
	if err != nil {
		return r, err
	}
	_, hwm, err := procMemory(pid)
	if err != nil {
		return r, err
	}
	heap = append(heap, m1.sum("go_memstats_heap_alloc_bytes", nil))
	r.rssPeak, r.rssSteady, r.heapSteady = hwm, median(rss), median(heap)

	r.intervals = elapsed.Seconds() / o.interval.Seconds()
	cpu := m1.sum("process_cpu_seconds_total", nil) - m0.sum("process_cpu_seconds_total", nil)
	r.cpuPerInt, r.cores = cpu/r.intervals, cpu/elapsed.Seconds()
	for i := range k1 {
		total := 0.0
		by := map[string]float64{}
		for api, v := range k1[i] {
			d := float64(v - k0[i][api])
			if d > 0 {
				by[api] = d / r.intervals
				total += d
			}
		}
		r.kafkaPerInt = append(r.kafkaPerInt, total/r.intervals)
		r.kafkaByAPI = append(r.kafkaByAPI, by)
		// One Metadata request per observation pass: requests per pass do
		// not depend on how the window cut the passes.
		perPass := 0.0
		if m := by["Metadata"] * r.intervals; m > 0 {
			perPass = total / m
		}
		r.kafkaPerPass = append(r.kafkaPerPass, perPass)
	}
	before, after := m0.byLabel("rest_client_requests_total", "method"), m1.byLabel("rest_client_requests_total", "method")
	r.writesByVerb = map[string]float64{}
	for verb, v := range after {
		d := (v - before[verb]) / r.intervals
		switch verb {
		case "POST", "PUT", "PATCH", "DELETE":
			r.writesPerInt += d
			if d > 0 {
				r.writesByVerb[verb] = d
			}
		default:
			r.readsPerInt += d
		}
	}
	// The same writes as the API server counts them, by resource (dry
	// runs, the bench's own, excluded).
	r.writesByResource = map[string]float64{}
	for _, x := range a1["apiserver_request_total"] {
		switch x.labels["verb"] {
		case "POST", "PUT", "PATCH", "DELETE", "CREATE", "UPDATE", "APPLY":
		default:
			continue
		}
		if x.labels["dry_run"] != "" {
			continue
		}
		key := x.labels["verb"] + " " + x.labels["resource"]
		if sub := x.labels["subresource"]; sub != "" {
			key += "/" + sub
		}
		match := map[string]string{}
		for k, v := range x.labels {
			match[k] = v
		}
		d := x.value - a0.sum("apiserver_request_total", match)
		if d > 0 {
			r.writesByResource[key] += d / r.intervals
		}
	}
	hs := m1.histogramOf("retentionguard_admission_duration_seconds", admission).
		minus(m0.histogramOf("retentionguard_admission_duration_seconds", admission))
	r.admSteadyP99, r.admSteadyBnd = hs.quantile(0.99)
	r.admSteadyN = hs.total()
	r.admFailed = load.failed.Load() + steadyLoad.failed.Load()
	for _, l := range []*admissionLoad{load, steadyLoad} {
		if e, ok := l.firstErr.Load().(string); ok {
			logf("a dry-run rollout failed: %q", e)
		}
	}
	r.load = loadStart + " → " + loadAverage()
	if err := stk.Manager.Stop(30 * time.Second); err != nil {
		return r, err
	}
	return r, nil
}

// waitForLoad waits, with -wait-load, until the load average falls.
func waitForLoad(ctx context.Context, o options) {
	if o.waitLoad <= 0 {
		return
	}
	deadline := time.Now().Add(o.maxLoadWaiting)
	for loadAverage1() > o.waitLoad && time.Now().Before(deadline) {
		logf("waiting for the load average (%s) to fall to %.1f", loadAverage(), o.waitLoad)
		sleep(ctx, 30*time.Second)
	}
}

// clearStatuses clears every policy's status, so that each proof the step
// waits for is its manager's.
func clearStatuses(ctx context.Context, c client.Client) error {
	var list rgv1.ConsumerRetentionPolicyList
	if err := c.List(ctx, &list); err != nil {
		return err
	}
	if err := forAll(ctx, len(list.Items), func(ctx context.Context, i int) error {
		p := &list.Items[i]
		if p.Status.Proof == nil && len(p.Status.Conditions) == 0 {
			return nil
		}
		return c.Status().Patch(ctx, p, client.RawPatch(types.MergePatchType, []byte(`{"status":null}`)))
	}); err != nil {
		return fmt.Errorf("clearing statuses: %w", err)
	}
	return nil
}

// followPeak keeps the manager's heap profile (file.pprof) and its
// runtime.MemStats (file.txt, pprof's debug=1 text) taken when its RSS
// was highest, until ctx ends: each time RSS passes the last profile's by
// 32 MiB, both are taken again. A profile's in-use figures are as of the
// last garbage collection; MemStats says what is heap, stacks and the rest.
func followPeak(ctx context.Context, pid int, addr, file string) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last := 0.0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rss, _, err := procMemory(pid)
		if err != nil || rss < last+32<<20 {
			continue
		}
		last = rss
		logf("RSS %.0f MiB: heap profile %s", rss/(1<<20), filepath.Base(file))
		saveProfile(ctx, addr, "heap", file+".pprof")
		saveProfile(ctx, addr, "heap?debug=1", file+".txt")
	}
}

// saveProfile fetches one pprof profile from the manager into file; a
// failure is logged, not fatal.
func saveProfile(ctx context.Context, addr, what, file string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/pprof/"+what, nil)
	if err == nil {
		var resp *http.Response
		if resp, err = http.DefaultClient.Do(req); err == nil {
			defer resp.Body.Close()
			var b []byte
			if b, err = io.ReadAll(resp.Body); err == nil {
				err = os.WriteFile(file, b, 0o644)
			}
		}
	}
	if err != nil {
		logf("profile %s: %v", what, err)
	}
}

// apiserverMetrics scrapes the kube-apiserver's /metrics with the admin
// credentials.
// counters reads what the steady state is the difference of: the
// manager's /metrics, the Kafka clusters' request counts and the API
// server's /metrics.
func counters(ctx context.Context, stk *stack.Stack) (manager scrape, kafka []map[string]int64, apiserver scrape, err error) {
	if manager, err = getMetrics(ctx, stk.MetricsAddr); err != nil {
		return nil, nil, nil, err
	}
	if kafka, err = kafkaRequests(ctx, stk); err != nil {
		return nil, nil, nil, err
	}
	if apiserver, err = apiserverMetrics(ctx, stk); err != nil {
		return nil, nil, nil, err
	}
	return manager, kafka, apiserver, nil
}

func apiserverMetrics(ctx context.Context, stk *stack.Stack) (scrape, error) {
	hc, err := rest.HTTPClientFor(stk.Env.Config)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(stk.Env.Config.Host, "/")+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("kube-apiserver /metrics: %s", resp.Status)
	}
	return parseMetrics(resp.Body)
}

// kafkaRequests reads every cluster's request counts.
func kafkaRequests(ctx context.Context, stk *stack.Stack) ([]map[string]int64, error) {
	var out []map[string]int64
	for _, kc := range stk.Clusters {
		m, err := kc.Requests(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func (r stepResult) detail() string {
	var b strings.Builder
	fmt.Fprintf(&b, "step %d policies: RSS peak %s, steady %s, heap %s; ", r.policies, mib(r.rssPeak), mib(r.rssSteady), mib(r.heapSteady))
	if r.allProven > 0 {
		fmt.Fprintf(&b, "all proven after %s; ", r.allProven.Round(100*time.Millisecond))
	} else {
		fmt.Fprintf(&b, "only %d proofs within the timeout; ", r.proofs)
	}
	fmt.Fprintf(&b, "verdicts %v; CPU %.2f s per interval (%.3f cores); API writes %.1f per interval %v (API server: %v), reads %.1f; ",
		r.verdicts, r.cpuPerInt, r.cores, r.writesPerInt, roundMap(r.writesByVerb), roundMap(r.writesByResource), r.readsPerInt)
	for i, k := range r.kafkaPerInt {
		fmt.Fprintf(&b, "Kafka cluster %d: %.1f requests per interval (%.1f per pass) %v; ", i, k, r.kafkaPerPass[i], roundMap(r.kafkaByAPI[i]))
	}
	fmt.Fprintf(&b, "admission p99 %s at startup (%.0f requests), %s steady (%.0f requests), %d failed; load %s",
		ms(r.admStartP99), r.admStartN, ms(r.admSteadyP99), r.admSteadyN, r.admFailed, r.load)
	return b.String()
}

func roundMap(m map[string]float64) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = strconv.FormatFloat(v, 'f', 1, 64)
	}
	return out
}

// chartMemoryLimit is the manager container's resources.limits.memory in
// the Deployment the chart rendered, in bytes (0: none).
func chartMemoryLimit(stk *stack.Stack) (int64, error) {
	for _, obj := range stk.Chart {
		if obj.GetKind() != "Deployment" {
			continue
		}
		cs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		if len(cs) == 0 {
			break
		}
		c, _ := cs[0].(map[string]any)
		v, ok, _ := unstructured.NestedString(c, "resources", "limits", "memory")
		if !ok {
			return 0, nil
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return 0, fmt.Errorf("the chart's memory limit %q: %w", v, err)
		}
		return q.Value(), nil
	}
	return 0, errors.New("the chart rendered no Deployment with a container")
}
