// Package e2e runs seeds 003 and 000 end to end on real Apache Kafka
// brokers: the stack of test/e2e (a real kube-apiserver and etcd from
// KUBEBUILDER_ASSETS, the chart applied, the manager binary from
// RETENTION_GUARD_BIN as the chart's ServiceAccount with its webhook) with
// its Kafka cluster an Apache Kafka KRaft node from
// internal/kafka/apachekafka instead of kfake. What the kfake suite
// (test/e2e) shows with kfake's test knobs, here the broker does on its
// own clocks: it expires an Empty group's offsets after
// offsets.retention.minutes (1 minute, Kafka's floor), answers Fetch with
// its own batching, and librdkafka (kcat) resets on it. Every admission
// that starts consumers (a scale from zero, a create with replicas) is
// judged by a live check against the broker.
//
// `make test-kafka` sets what it needs; without the brokers it fails and
// says how to assemble them.
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

	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/test/e2e/stack"
)

var (
	stk *stack.Stack
	// newest is the line the stack's broker runs; oldest the line seed
	// 003 runs on (the 3.x line of its incident, Kafka 3.5.1).
	newest, oldest apachekafka.Dist
	broker         *apachekafka.Broker
	kafka          *stack.Kafka
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if _, err := exec.LookPath("kcat"); err != nil {
		fmt.Fprintln(os.Stderr, "realkafka/e2e: kcat (librdkafka's command-line consumer) is not installed: run make deps")
		return 1
	}
	dists, err := apachekafka.LoadDists()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	oldest, newest = dists[0], dists[len(dists)-1]
	ctrllog.SetLogger(logr.Discard())
	start := time.Now()
	dir, err := os.MkdirTemp("", "retention-guard-realkafka-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// The stack's broker keeps Kafka's default offsets.retention.minutes
	// (7 days): seed 000's group is judged on a 72h window.
	broker, err = apachekafka.StartCluster(newest, dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "realkafka/e2e: starting Apache Kafka %s: %v\n", newest.Version, err)
		return 1
	}
	defer broker.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	stk, err = stack.Start(ctx, stack.Options{Log: os.Stderr, KafkaAddrs: broker.Addrs()})
	if err != nil {
		fmt.Fprintf(os.Stderr, "realkafka/e2e: starting the stack: %v\n", err)
		return 1
	}
	defer stk.Stop()
	if kafka, err = stack.DialKafka(stk.BrokerAddr); err != nil {
		fmt.Fprintf(os.Stderr, "realkafka/e2e: %v\n", err)
		return 1
	}
	defer kafka.Close()
	fmt.Fprintf(os.Stderr, "realkafka/e2e: stack up on Apache Kafka %s in %s (logs in %s)\n",
		newest.Version, time.Since(start).Round(100*time.Millisecond), stk.Dir)
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "realkafka/e2e: manager log (tail):\n%s\nApache Kafka %s log (tail):\n%s\n",
			stk.Manager.Tail(), newest.Version, broker.LogTail(60))
	}
	fmt.Fprintf(os.Stderr, "realkafka/e2e: wall time %s\n", time.Since(start).Round(100*time.Millisecond))
	return code
}
