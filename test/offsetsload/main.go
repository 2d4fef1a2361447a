// Command offsetsload measures what reading __consumer_offsets costs the
// manager on a real broker of production shape (`make bench-offsets`, see
// docs/benchmarks.md and docs/scaling.md; issue 32 item 4).
//
// It starts one real Apache Kafka node (internal/kafka/apachekafka, the
// line of -kafka), with Kafka's default 50 partitions for
// __consumer_offsets and its default segment size (100 MiB, so a partition
// of ~10 MB is one active segment the cleaner never compacts: every commit
// is kept, the worst case for a reader). It creates -topics topics of
// -partitions partitions, and has -groups groups commit the log end of
// every partition of their topic, groups in turn, as caught-up consumers'
// auto-commits do (seed 003: 24 partitions, a commit every 5 s): one
// OffsetCommit request per group commit, -workers of them in flight at
// once, until the topic holds -size bytes (or -fill-timeout passed). Then
// it keeps committing at -rate group commits a second and, for each count
// of -follow, starts a fresh process (a manager restart) whose observer
// (kafka.Observer, built as manager_setup.go builds it) observes that many
// policies' groups as the coalescer does, one pass of every target,
// bounded by the coalescer's pass timeout: passes back to back until every
// commit time is exact (the catch-up), then -steady passes -interval
// apart. Each count runs with the read on and, with -compare, off: the
// difference is what the reader adds.
//
//	export $(hack/build-kafka.sh)
//	go run ./test/offsetsload                      # the full shape: 20,000 groups, 500 MB
//	go run ./test/offsetsload -size 50e6 -follow 500 -steady 1   # a quick look
//
// It prints the fill's rate, the topic's size, and one table row per run
// (wall time and passes to catch up, Go heap and RSS after it, peak RSS,
// and per steady pass wall time, CPU, requests and bytes), with the
// machine's load average; -profile-dir keeps each catch-up's CPU profile
// for `go tool pprof -top`.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
)

const offsetsTopic = "__consumer_offsets"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-measure" {
		if err := measureMain(); err != nil {
			fmt.Fprintln(os.Stderr, "offsetsload -measure:", err)
			os.Exit(1)
		}
		return
	}
	var (
		line        = flag.String("kafka", "4.4", "the Apache Kafka line to run (of those hack/build-kafka.sh assembled)")
		groups      = flag.Int("groups", 20000, "groups committing")
		topics      = flag.Int("topics", 20, "topics the groups consume")
		partitions  = flag.Int("partitions", 24, "partitions per topic (each group commit covers all of them)")
		size        = flag.Float64("size", 500e6, "fill __consumer_offsets to this many bytes on disk")
		fillTimeout = flag.Duration("fill-timeout", 8*time.Minute, "stop filling after this long, at whatever size")
		workers     = flag.Int("workers", 32, "OffsetCommit requests in flight while filling")
		rate        = flag.Int("rate", 400, "group commits a second while measuring")
		follow      = flag.String("follow", "5000,20000", "policies (followed groups) per run, comma-separated")
		compare     = flag.Bool("compare", true, "also run each count with the read off")
		steady      = flag.Int("steady", 3, "steady passes after the catch-up")
		interval    = flag.Duration("interval", 10*time.Second, "between steady passes")
		passTimeout = flag.Duration("pass-timeout", 30*time.Second, "one pass's bound: the coalescer's, 3 × --kafka-request-timeout (10 s)")
		maxPasses   = flag.Int("max-passes", 10, "catch-up passes before giving up")
		profileDir  = flag.String("profile-dir", "", "keep each catch-up's CPU profile here")
	)
	flag.Parse()
	counts, err := parseCounts(*follow)
	if err != nil {
		fatal(fmt.Errorf("-follow: %w", err))
	}
	for _, n := range counts {
		if n > *groups {
			fatal(fmt.Errorf("-follow %d: more than the %d groups committing", n, *groups))
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := shape{Groups: *groups, Topics: *topics, Partitions: *partitions, LogEnd: 10}
	err = run(ctx, runConfig{line: *line, shape: s, size: int64(*size), fillTimeout: *fillTimeout, workers: *workers,
		rate: *rate, counts: counts, compare: *compare, steady: *steady, interval: *interval,
		passTimeout: *passTimeout, maxPasses: *maxPasses, profileDir: *profileDir})
	if err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "offsetsload:", err)
	os.Exit(1)
}

type runConfig struct {
	line                  string
	shape                 shape
	size                  int64
	fillTimeout           time.Duration
	workers, rate         int
	counts                []int
	compare               bool
	steady                int
	interval, passTimeout time.Duration
	maxPasses             int
	profileDir            string
}

func logf(format string, args ...any) {
	fmt.Printf("%s  %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func run(ctx context.Context, rc runConfig) error {
	dists, err := apachekafka.LoadDists()
	if err != nil {
		return err
	}
	var dist *apachekafka.Dist
	for i := range dists {
		if dists[i].Line() == rc.line {
			dist = &dists[i]
		}
	}
	if dist == nil {
		return fmt.Errorf("no assembled Apache Kafka %s in %s", rc.line, apachekafka.DistsEnv)
	}
	dir, err := os.MkdirTemp("", "offsetsload-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if rc.profileDir != "" {
		if err := os.MkdirAll(rc.profileDir, 0o755); err != nil {
			return err
		}
	}
	logf("load average %s; starting Apache Kafka %s", loadAvg(), dist.Version)
	// The harness's one-node broker, with Kafka's default 50 partitions
	// for __consumer_offsets (the harness makes it 1 for fast tests) and
	// the line's own group coordinator (AsDeployed: on 3.9 the classic
	// one, where the harness otherwise turns the KIP-848 preview on).
	b, err := apachekafka.StartCluster(*dist, dir, apachekafka.AsDeployed(),
		apachekafka.WithBrokerConfig("offsets.topic.num.partitions", "50"))
	if err != nil {
		return err
	}
	defer b.Close()
	cl, err := kgo.NewClient(append(b.ClientOpts(), kgo.SeedBrokers(b.Addrs()...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if err := prepareTopics(ctx, cl, adm, rc.shape); err != nil {
		return err
	}

	// Fill.
	fillStart := time.Now()
	fctx, cancelFill := context.WithTimeout(ctx, rc.fillTimeout)
	var commits, failed atomic.Int64
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	commit := func(ctx context.Context) {
		g, offs := rc.shape.commitOf(int(next.Add(1) - 1))
		if err := adm.CommitAllOffsets(ctx, g, offs); err != nil {
			if ctx.Err() == nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
			}
			return
		}
		commits.Add(1)
	}
	for range rc.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for fctx.Err() == nil {
				commit(fctx)
			}
		}()
	}
	var reached int64
	for fctx.Err() == nil {
		select {
		case <-fctx.Done():
		case <-time.After(5 * time.Second):
		}
		if reached, err = offsetsTopicSize(ctx, adm); err != nil {
			logf("size of %s: %v", offsetsTopic, err)
			continue
		}
		logf("filling: %d group commits (%.0f/s), %s %.0f MB, %d failed", commits.Load(),
			float64(commits.Load())/time.Since(fillStart).Seconds(), offsetsTopic, float64(reached)/1e6, failed.Load())
		if reached >= rc.size {
			break
		}
	}
	cancelFill()
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	fillTook := time.Since(fillStart)
	if reached, err = offsetsTopicSize(ctx, adm); err != nil {
		return err
	}
	if e, _ := firstErr.Load().(string); e != "" {
		logf("first failed commit: %s", e)
	}
	fillLine := fmt.Sprintf("fill: %d group commits of %d partitions (%d offset commit records) in %s, %.0f a second; %s: %.0f MB over 50 partitions; %d commits failed",
		commits.Load(), rc.shape.Partitions, commits.Load()*int64(rc.shape.Partitions), fillTook.Round(time.Second),
		float64(commits.Load())/fillTook.Seconds(), offsetsTopic, float64(reached)/1e6, failed.Load())
	logf("%s", fillLine)
	if reached < rc.size {
		logf("NOTE: %s reached %.0f MB of the %.0f MB asked within -fill-timeout %s", offsetsTopic, float64(reached)/1e6, float64(rc.size)/1e6, rc.fillTimeout)
	}

	// Steady commits while measuring.
	sctx, cancelSteady := context.WithCancel(ctx)
	steadyStart, steadyFrom := time.Now(), commits.Load()
	var swg sync.WaitGroup
	steadyCommits(sctx, &swg, rc.rate, commit)

	var results []measureResult
	for _, n := range rc.counts {
		for _, read := range []bool{true, false} {
			if !read && !rc.compare {
				continue
			}
			cfg := measureConfig{Brokers: b.Addrs(), Shape: rc.shape, Follow: n, Read: read, PassTimeout: rc.passTimeout,
				MaxPasses: rc.maxPasses, Interval: rc.interval, SteadyPasses: rc.steady}
			if rc.profileDir != "" && read {
				cfg.CPUProfile = filepath.Join(rc.profileDir, fmt.Sprintf("catchup-%d.pprof", n))
				cfg.HeapProfile = filepath.Join(rc.profileDir, fmt.Sprintf("heap-%d.pprof", n))
			}
			logf("measuring %d policies, read %v (load average %s)", n, read, loadAvg())
			res, err := measureProcess(ctx, cfg)
			if err != nil {
				cancelSteady()
				swg.Wait()
				return fmt.Errorf("measuring %d policies, read %v: %w", n, read, err)
			}
			logf("%s", res.row())
			results = append(results, res)
		}
	}
	cancelSteady()
	swg.Wait()
	steadyRate := float64(commits.Load()-steadyFrom) / time.Since(steadyStart).Seconds()
	final, _ := offsetsTopicSize(ctx, adm)

	fmt.Println()
	fmt.Printf("Apache Kafka %s, one node; %d groups × %d partitions on %d topics\n", dist.Version, rc.shape.Groups, rc.shape.Partitions, rc.shape.Topics)
	fmt.Println(fillLine)
	fmt.Printf("while measuring: %.0f group commits a second (%.0f offset commit records a second); %s at the end: %.0f MB; load average at the end %s\n",
		steadyRate, steadyRate*float64(rc.shape.Partitions), offsetsTopic, float64(final)/1e6, loadAvg())
	fmt.Println()
	fmt.Println(tableHeader)
	for _, r := range results {
		fmt.Println(r.row())
	}
	if rc.profileDir != "" {
		fmt.Printf("\nCPU profiles of the catch-ups: go tool pprof -top %s\n", filepath.Join(rc.profileDir, "catchup-N.pprof"))
		fmt.Printf("heaps after them: go tool pprof -top -sample_index=inuse_space %s\n", filepath.Join(rc.profileDir, "heap-N.pprof"))
	}
	for _, r := range results {
		if r.Read && !r.CaughtUp {
			return fmt.Errorf("%d policies: the reader did not catch up in %d passes", r.Follow, r.CatchUpPasses)
		}
	}
	return nil
}

// prepareTopics creates the topics and writes LogEnd records to each
// partition: every commit is of the log end, a caught-up group.
func prepareTopics(ctx context.Context, cl *kgo.Client, adm *kadm.Client, s shape) error {
	names := make([]string, s.Topics)
	for t := range names {
		names[t] = topicName(t)
	}
	resp, err := adm.CreateTopics(ctx, int32(s.Partitions), 1, nil, names...)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("creating topics: %w", err)
	}
	var recs []*kgo.Record
	for _, t := range names {
		for p := range s.Partitions {
			for i := range s.LogEnd {
				recs = append(recs, &kgo.Record{Topic: t, Partition: int32(p), Value: []byte("event-" + strconv.FormatInt(i, 10))})
			}
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("producing: %w", err)
	}
	return nil
}

// steadyCommits commits rate group commits a second until ctx ends,
// spread over each second in ticks of 100 ms.
func steadyCommits(ctx context.Context, wg *sync.WaitGroup, rate int, commit func(context.Context)) {
	if rate <= 0 {
		return
	}
	jobs := make(chan struct{}, rate)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case <-jobs:
					commit(ctx)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		owed := 0.0
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			for owed += float64(rate) / 10; owed >= 1; owed-- {
				select {
				case jobs <- struct{}{}:
				default: // behind: the achieved rate is reported
				}
			}
		}
	}()
}

func offsetsTopicSize(ctx context.Context, adm *kadm.Client) (int64, error) {
	all, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, dirs := range all {
		dirs.EachPartition(func(p kadm.DescribedLogDirPartition) {
			if p.Topic == offsetsTopic {
				n += p.Size
			}
		})
	}
	return n, nil
}

// measureProcess runs one measurement in a process of its own (this
// binary, -measure): a restart's fresh heap, and its RSS alone.
func measureProcess(ctx context.Context, cfg measureConfig) (measureResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return measureResult{}, err
	}
	in, err := json.Marshal(cfg)
	if err != nil {
		return measureResult{}, err
	}
	cmd := exec.CommandContext(ctx, exe, "-measure")
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		return measureResult{}, fmt.Errorf("%w: %s", err, strings.TrimSpace(errb.String()))
	}
	var res measureResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return res, errors.Join(fmt.Errorf("the measuring process's answer"), err)
	}
	return res, nil
}
