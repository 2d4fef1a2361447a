// Command chart packages the Helm chart with its image pinned by digest
// and pushes it as an OCI artifact (the release's `helm package` + `helm
// push`), or prints the release version.
//
//	go run ./hack/chart version                 # the chart's appVersion
//	go run ./hack/chart package -digest sha256:... [-out bin/chart]
//	go run ./hack/chart push -digest sha256:... [-repo ghcr.io/retentionguard/charts]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/retentionguard/retention-guard/hack/release"
)

const usage = `usage: chart version | chart package -digest D [-out DIR] | chart push -digest D [-repo R] [-digest-file F]`

func main() {
	code, err := run(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
	}
	os.Exit(code)
}

func run(args []string) (int, error) {
	if len(args) == 0 {
		return 64, fmt.Errorf("%s", usage)
	}
	root, err := os.Getwd()
	if err != nil {
		return 1, err
	}
	if args[0] == "version" {
		v, err := release.ChartVersion(release.ChartDir(root))
		if err != nil {
			return 1, err
		}
		fmt.Println(v)
		return 0, nil
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	digest := fs.String("digest", "", "digest of the image index the chart installs (required)")
	repository := fs.String("image-repository", "", "image repository, when not "+release.Repository)
	out := fs.String("out", "bin/chart", "package: directory for the .tgz")
	repo := fs.String("repo", release.ChartRepository, "push: OCI repository of charts")
	plainHTTP := fs.Bool("plain-http", false, "push: use HTTP (a loopback registry)")
	digestFile := fs.String("digest-file", "", "push: write the chart's manifest digest here (chart=sha256:...)")
	if err := fs.Parse(args[1:]); err != nil {
		return 64, err
	}
	if *digest == "" || fs.NArg() > 0 || (args[0] != "package" && args[0] != "push") {
		return 64, fmt.Errorf("%s", usage)
	}
	src, err := release.ReadSource(root)
	if err != nil {
		return 1, err
	}
	data, err := release.PackageChart(release.ChartDir(root), release.ChartOptions{
		Version: src.Version, ImageRepository: *repository, ImageDigest: *digest, Created: src.Time,
	})
	if err != nil {
		return 1, err
	}
	if args[0] == "package" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return 1, err
		}
		p := filepath.Join(*out, release.ChartFileName(src.Version))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return 1, err
		}
		fmt.Println(p)
		return 0, nil
	}
	ref, d, err := release.PushChart(data, *repo, release.PushOptions{PlainHTTP: *plainHTTP, Created: src.Time})
	if err != nil {
		return 1, err
	}
	fmt.Printf("pushed oci://%s@%s\n", ref, d)
	if *digestFile != "" {
		if err := os.WriteFile(*digestFile, []byte("chart="+d+"\n"), 0o644); err != nil {
			return 1, err
		}
	}
	return 0, nil
}
