// Command dist builds the retention-guard binaries for linux and darwin on
// amd64 and arm64 as reproducible .tar.gz archives with a SHA-256
// checksums file (make dist), for pipelines that run `retention-guard
// check`.
//
//	go run ./hack/dist [-out dist] [-platforms linux/amd64,...]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/retentionguard/retention-guard/hack/release"
)

func main() {
	fs := flag.NewFlagSet("dist", flag.ContinueOnError)
	out := fs.String("out", "dist", "directory to write the archives and checksums into")
	platforms := fs.String("platforms", strings.Join(release.DistPlatforms, ","), "os/arch list")
	if err := fs.Parse(os.Args[1:]); err != nil || fs.NArg() > 0 {
		if err == nil {
			fmt.Fprintf(os.Stderr, "dist: unexpected arguments %v\n", fs.Args())
		}
		os.Exit(64)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *out, strings.Split(*platforms, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "dist:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out string, platforms []string) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	src, err := release.ReadSource(root)
	if err != nil {
		return err
	}
	files, err := release.Dist(ctx, src, platforms, out, func(f string, a ...any) {
		fmt.Fprintf(os.Stderr, "dist: "+f+"\n", a...)
	})
	if err != nil {
		return err
	}
	for _, f := range files {
		fmt.Println(f)
	}
	return nil
}
