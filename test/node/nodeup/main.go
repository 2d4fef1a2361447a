// Command nodeup brings up the real-node tier's single-node cluster by hand
// (Linux, root), prints how to reach it, and tears it down on SIGINT or
// SIGTERM — for poking at a node the way the tests see it, and for the
// teardown test, which interrupts it:
//
//	go run ./test/node/nodeup [--image TARBALL ...]
//
// It prints "node ready" and the admin kubeconfig's path once the node is
// Ready, and "node torn down" when the machine is clean again.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/retentionguard/retention-guard/test/node/cluster"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	var images list
	flag.Var(&images, "image", "image tarball to import into containerd (repeatable)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "nodeup: unexpected arguments %q\n", flag.Args())
		os.Exit(64)
	}
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	c, err := cluster.Start(ctx, cluster.Options{Log: os.Stderr, Images: images})
	if err != nil {
		fmt.Fprintf(os.Stderr, "nodeup: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("node ready\nexport KUBECONFIG=%s\nkubectl: %s\nlogs: %s/logs\n", c.Kubeconfig, c.Kubectl(), c.RunDir)
	<-ctx.Done()
	if err := c.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "nodeup: tearing down: %v\n", err)
		os.Exit(1)
	}
	fmt.Println("node torn down")
}
