// Package node is the real-node tier: it brings up one real single-node
// Kubernetes cluster on this machine (package cluster: etcd,
// kube-apiserver, controller-manager, scheduler, containerd, the kubelet,
// kube-proxy, a bridge CNI network), imports locally built images (the
// manager, a real kgo consumer, the pause sandbox), runs a Kafka broker
// process on the machine's address where pods reach it, installs the chart
// with the real Helm CLI, and replays the seeds with real consumer pods:
// what a pod read and skipped is read from its own log.
//
// It changes the machine (iptables, mounts, sysctls, a bridge) and restores
// it, so it runs only when asked: `make test-node` (part of `make test` on
// Linux as root) sets RETENTION_GUARD_NODE_TESTS=1.
package node

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/retentionguard/retention-guard/test/e2e/stack"
	"github.com/retentionguard/retention-guard/test/node/cluster"
	"github.com/retentionguard/retention-guard/test/node/nodeimages"
)

// EnvRun must be 1 for the tier to run (make test-node sets it).
const EnvRun = "RETENTION_GUARD_NODE_TESTS"

var (
	nd     *cluster.Cluster
	kafka  *stack.Kafka
	brk    *broker
	tools  toolset
	imgs   nodeimages.Set
	suite  context.Context // canceled on SIGINT/SIGTERM
	report = &measurements{}
)

func TestMain(m *testing.M) {
	if os.Getenv(EnvRun) != "1" {
		fmt.Fprintf(os.Stderr, "node tier: not run: it brings up a real node on this machine (Linux, root; iptables, mounts and sysctls are changed and restored) — run it with make test-node (%s=1)\n", EnvRun)
		os.Exit(0)
	}
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		fmt.Fprintf(os.Stderr, "node tier: needs Linux and root (this is %s, uid %d)\n", runtime.GOOS, os.Geteuid())
		os.Exit(1)
	}
	os.Exit(run(m))
}

func run(m *testing.M) (code int) {
	ctrllog.SetLogger(logr.Discard())
	start := time.Now()
	var cancel context.CancelFunc
	suite, cancel = context.WithCancel(context.Background())
	defer cancel()

	var once sync.Once
	teardown := func() {
		once.Do(func() {
			brk.stop()
			if err := nd.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "node tier: tearing the node down: %v\n", err)
				code = 1
			}
			if tools.dir != "" {
				_ = os.RemoveAll(tools.dir)
			}
		})
	}
	// Interrupted (Ctrl-C, CI cancelling): every wait of the tier runs
	// under suite, so cancelling it ends the running test (and a bring-up
	// in progress, which then tears down what it started) quickly; the
	// normal teardown follows. A second signal tears down at once.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sigs
		fmt.Fprintf(os.Stderr, "node tier: %v: stopping the tests, then tearing the node down\n", s)
		cancel()
		s = <-sigs
		fmt.Fprintf(os.Stderr, "node tier: %v again: tearing down now\n", s)
		teardown()
		os.Exit(130)
	}()
	defer teardown()

	ctx, cancelSetup := context.WithTimeout(suite, 30*time.Minute)
	defer cancelSetup()
	var err error
	if tools, err = buildTools(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "node tier: %v\n", err)
		return 1
	}
	if imgs, err = nodeimages.Build(ctx, tools.dir, nodeimages.All); err != nil {
		fmt.Fprintf(os.Stderr, "node tier: building images: %v\n", err)
		return 1
	}
	hostIP, err := cluster.HostIP()
	if err != nil {
		fmt.Fprintf(os.Stderr, "node tier: %v\n", err)
		return 1
	}
	if brk, err = startBroker(ctx, tools, hostIP); err != nil {
		fmt.Fprintf(os.Stderr, "node tier: %v\n", err)
		return 1
	}
	if kafka, err = stack.DialKafka(brk.addr); err != nil {
		fmt.Fprintf(os.Stderr, "node tier: %v\n", err)
		return 1
	}
	defer kafka.Close()
	up := time.Now()
	if nd, err = cluster.Start(ctx, cluster.Options{Log: os.Stderr, Images: imgs.Archives()}); err != nil {
		fmt.Fprintf(os.Stderr, "node tier: %v\n", err)
		return 1
	}
	report.add("node bring-up (cached binaries): etcd, API server, containerd, images imported, kubelet, node Ready", time.Since(up))
	fmt.Fprintf(os.Stderr, "node tier: node Ready (run folder %s), Kafka broker at %s\n", nd.RunDir, brk.addr)

	code = m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "node tier: component logs are in %s/logs (removed at teardown); broker log:\n%s\n", nd.RunDir, brk.tail())
	}
	teardown()
	fmt.Fprintf(os.Stderr, "node tier: measured on this machine:\n%s", report)
	fmt.Fprintf(os.Stderr, "node tier: wall time %s\n", time.Since(start).Round(time.Second))
	return code
}

// measurements are the numbers docs/benchmarks.md reports, printed at the
// end of the run.
type measurements struct {
	mu    sync.Mutex
	lines []string
}

func (r *measurements) add(what string, d time.Duration) {
	r.addf("%s: %s", what, d.Round(time.Millisecond))
}

func (r *measurements) addf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

func (r *measurements) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, l := range r.lines {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}
