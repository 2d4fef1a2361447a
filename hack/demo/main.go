// Command demo is `make demo`: it runs retention-guard on embedded
// defaults (a local kube-apiserver and etcd, a Kafka broker process, the
// manager binary installed from the Helm chart, exactly the stack of the
// end-to-end suite, package test/e2e/stack), applies the sample policy of
// config/samples adapted to the local broker, and replays seed 003's
// incident (a settlement batch consumer down 8 days 12 hours, whose group
// offsets expired) to its end in compressed time, with the consumer's
// business cursor table in a real PostgreSQL, printing what a user sees:
// `kubectl get crp`, the denial, the recovery from the cursor, a cursor
// behind the log start refused, an auto-committing twin refused.
//
// hack/demo.sh builds the control plane first (about 10 minutes on the
// first run) and runs this. Ctrl-C stops everything it started.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	keep := flag.Bool("keep", false, "keep the stack running at the end until Ctrl-C (explore it with the printed KUBECONFIG)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	err := run(ctx, os.Stdout, *keep)
	if ctx.Err() != nil && !*keep {
		fmt.Fprintln(os.Stderr, "\ninterrupted: everything the demo started is stopped.")
		os.Exit(130)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "\ndemo failed: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("\ndemo done in %s; everything it started is stopped.\n", time.Since(start).Round(time.Second))
}

// step prints a heading.
func step(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "\n\033[1m== "+format+"\033[0m\n", args...)
}
