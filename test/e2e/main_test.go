// Package e2e runs retention-guard end to end, every part a separate
// process (see package stack): the chart applied to a real kube-apiserver,
// the manager binary running as the chart's ServiceAccount, a Kafka broker
// process, a Prometheus server evaluating the chart's alerts, and the
// scenarios of the seeds in shared/seeds replayed against them. Everything
// is asserted the way a user sees it: policy conditions and events, the
// denial text the API server returns, the manager's /metrics, the alerts
// and dashboard queries through Prometheus' HTTP API, and a real
// librdkafka consumer (kcat).
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/retentionguard/retention-guard/test/e2e/stack"
)

var (
	stk   *stack.Stack
	kafka *stack.Kafka
	// started is when the suite started: the dashboard's queries look back
	// to it.
	started time.Time
)

// brokerConfigs: group offsets are checked for expiry every 200ms, and
// expire after a day unless a scenario shortens offset.retention.ms
// (kfake's test knob; the broker still reports the default
// offsets.retention.minutes=10080, which is what the proof reads).
var brokerConfigs = map[string]string{
	"offset.retention.ms":                 "86400000",
	"offsets.retention.check.interval.ms": "200",
	"group.initial.rebalance.delay.ms":    "0",
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if _, err := exec.LookPath("kcat"); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: kcat (librdkafka's command-line consumer) is not installed: run make deps")
		return 1
	}
	if _, err := exec.LookPath("prometheus"); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: prometheus (Debian's prometheus package) is not installed: run make deps")
		return 1
	}
	// envtest logs through controller-runtime; the processes' own logs are
	// in the stack's directory.
	ctrllog.SetLogger(logr.Discard())
	start := time.Now()
	started = start
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var err error
	stk, err = stack.Start(ctx, stack.Options{Log: os.Stderr, BrokerConfigs: brokerConfigs, Prometheus: true, ChartValues: alertValues()})
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: starting the stack: %v\n", err)
		return 1
	}
	defer stk.Stop()
	if kafka, err = stack.DialKafka(stk.BrokerAddr); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	defer kafka.Close()
	fmt.Fprintf(os.Stderr, "e2e: stack up in %s (logs in %s)\n", time.Since(start).Round(100*time.Millisecond), stk.Dir)
	code := m.Run()
	pg.Stop() // the business cursor database, when a test started it
	if code != 0 {
		fmt.Fprintf(os.Stderr, "e2e: manager log (tail):\n%s\nbroker log (tail):\n%s\nprometheus log (tail):\n%s\n",
			stk.Manager.Tail(), stk.Broker.Tail(), stk.Prometheus.Process.Tail())
	}
	fmt.Fprintf(os.Stderr, "e2e: wall time %s\n", time.Since(start).Round(100*time.Millisecond))
	return code
}
