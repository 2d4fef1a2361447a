package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/retentionguard/retention-guard/internal/kafka"
)

// The measuring process: a fresh observer, as after a manager restart,
// given the targets of n policies and reading __consumer_offsets (or not,
// for the comparison), passes back to back until the reader caught up,
// then steady passes at the check interval while the load keeps
// committing. It prints one JSON result on stdout.

// measureConfig is what the orchestrator asks of one measuring process.
type measureConfig struct {
	Brokers      []string
	Shape        shape
	Follow       int           // targets (policies)
	Read         bool          // read __consumer_offsets
	PassTimeout  time.Duration // the coalescer's: 3 × --kafka-request-timeout
	MaxPasses    int           // catch-up passes before giving up
	Interval     time.Duration // between steady passes
	SteadyPasses int
	CPUProfile   string // the catch-up's CPU profile; empty: none
	HeapProfile  string // the heap after the catch-up; empty: none
}

// passCost is what one pass cost.
type passCost struct {
	Wall         time.Duration
	CPU          time.Duration // user + system of this process
	Requests     apiCounts
	BytesRead    int64 // from the brokers
	BytesWritten int64
	Exact        int    // observations with every commit time exact
	Why          string // why one was not (the first)
}

// measureResult is the measuring process's answer.
type measureResult struct {
	Follow        int
	Read          bool
	CatchUp       time.Duration // from the first pass's start to the end of the first pass with every time exact
	CatchUpPasses int
	CaughtUp      bool
	Passes        []passCost // the catch-up passes, then the steady ones
	HeapInuse     uint64     // after the catch-up and a GC, the observer alive
	HeapBase      uint64     // before the first pass, after a GC
	RSS           uint64     // VmRSS after the catch-up
	PeakRSS       uint64     // VmHWM, the process's peak
	SteadyRSS     uint64     // VmRSS after the steady passes (the runtime returns freed pages over minutes)
	SteadyHeap    uint64     // HeapInuse after the steady passes and a GC
	SteadyFrom    int        // index in Passes of the first steady pass
}

// counters are the observer's hooks: requests per API (the manager's
// metric's hook, kafka.WithRequestHook) and bytes on the wire (kgo hooks).
type counters struct {
	mu       sync.Mutex
	requests apiCounts
	read     atomic.Int64
	written  atomic.Int64
}

func (c *counters) request(api string, _ time.Duration, _ error) {
	c.mu.Lock()
	c.requests[api]++
	c.mu.Unlock()
}

func (c *counters) snapshot() apiCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := make(apiCounts, len(c.requests))
	for k, v := range c.requests {
		s[k] = v
	}
	return s
}

func (c *counters) OnBrokerRead(_ kgo.BrokerMetadata, _ int16, n int, _, _ time.Duration, _ error) {
	c.read.Add(int64(n))
}

func (c *counters) OnBrokerWrite(_ kgo.BrokerMetadata, _ int16, n int, _, _ time.Duration, _ error) {
	c.written.Add(int64(n))
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procStatus reads a kB field of /proc/self/status (VmRSS, VmHWM) in bytes.
func procStatus(field string) uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func heapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

func runMeasure(ctx context.Context, cfg measureConfig) (measureResult, error) {
	res := measureResult{Follow: cfg.Follow, Read: cfg.Read}
	c := &counters{requests: apiCounts{}}
	// As manager_setup.go builds it: the request hook, the request
	// timeouts of --kafka-request-timeout (10 s).
	o := kafka.NewObserver(
		kafka.WithRequestHook(c.request),
		kafka.WithTimeouts(0, cfg.PassTimeout/3, cfg.PassTimeout/3),
		kafka.WithClientOpts(kgo.WithHooks(c)),
	)
	defer o.Close()
	conn := kafka.Connection{BootstrapServers: cfg.Brokers}
	targets := cfg.Shape.targets(cfg.Follow, cfg.Read)
	res.HeapBase = heapInuse()

	pass := func() passCost {
		before, rd, wr, cpu, start := c.snapshot(), c.read.Load(), c.written.Load(), cpuTime(), time.Now()
		pctx, cancel := context.WithTimeout(ctx, cfg.PassTimeout)
		co := o.ObserveCluster(pctx, conn, kafka.ClusterRequest{Targets: targets})
		cancel()
		pc := passCost{Wall: time.Since(start), CPU: cpuTime() - cpu, Requests: c.snapshot().minus(before),
			BytesRead: c.read.Load() - rd, BytesWritten: c.written.Load() - wr}
		pc.Exact, pc.Why = caughtUp(co.Observations)
		return pc
	}

	if cfg.CPUProfile != "" {
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			return res, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return res, err
		}
	}
	start := time.Now()
	for range cfg.MaxPasses {
		pc := pass()
		res.Passes = append(res.Passes, pc)
		res.CatchUpPasses++
		// Without the read, the first pass is the whole catch-up: there
		// is nothing exact to wait for.
		if !cfg.Read || pc.Exact == cfg.Follow {
			res.CaughtUp = cfg.Read
			break
		}
		if ctx.Err() != nil {
			break
		}
	}
	res.CatchUp = time.Since(start)
	if cfg.CPUProfile != "" {
		pprof.StopCPUProfile()
	}
	res.HeapInuse = heapInuse()
	res.RSS = procStatus("VmRSS")
	if cfg.HeapProfile != "" {
		f, err := os.Create(cfg.HeapProfile)
		if err != nil {
			return res, err
		}
		err = pprof.Lookup("heap").WriteTo(f, 0)
		f.Close()
		if err != nil {
			return res, err
		}
	}

	res.SteadyFrom = len(res.Passes)
	for range cfg.SteadyPasses {
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(cfg.Interval):
		}
		res.Passes = append(res.Passes, pass())
	}
	res.PeakRSS = procStatus("VmHWM")
	res.SteadyHeap = heapInuse()
	res.SteadyRSS = procStatus("VmRSS")
	runtime.KeepAlive(o)
	return res, nil
}

// measureMain is the measuring process: its config as JSON on stdin, its
// result as JSON on stdout.
func measureMain() error {
	var cfg measureConfig
	if err := json.NewDecoder(os.Stdin).Decode(&cfg); err != nil {
		return fmt.Errorf("reading the measure config: %w", err)
	}
	res, err := runMeasure(context.Background(), cfg)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}
