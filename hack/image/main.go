// Command image builds the retention-guard image index (make image)
// without a container engine, reproducibly, and writes it as an OCI
// layout, an OCI archive (for `ctr images import`) or a docker-archive
// (for `docker load`), or pushes it with its SBOM referrer.
//
//	go run ./hack/image                                  # bin/image (OCI layout)
//	go run ./hack/image -archive bin/retention-guard-image.tar   # + this platform as an OCI archive
//	go run ./hack/image -push ghcr.io/retentionguard/retention-guard:0.1.0
//
// Every timestamp is the commit time (or SOURCE_DATE_EPOCH); the version
// is the chart's appVersion.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/retentionguard/retention-guard/hack/imagebuild"
	"github.com/retentionguard/retention-guard/hack/release"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(64)
		}
		os.Exit(1)
	}
}

type usageError struct{ error }

func run() error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	out := fs.String("out", "bin/image", "OCI layout directory to write (replaced); empty: none")
	platforms := fs.String("platforms", strings.Join(release.ImagePlatforms, ","), "platforms of the index")
	tag := fs.String("tag", "", "image reference naming the layout entry and the archive (default "+release.Repository+":<appVersion>)")
	archive := fs.String("archive", "", "also write an OCI archive (tar) of the image here, for ctr -n k8s.io images import")
	archivePlatform := fs.String("archive-platform", "linux/"+runtime.GOARCH, "platform of -archive, or \"all\" for the whole index (then the chart's image.digest works on the node too)")
	dockerArchive := fs.String("docker-archive", "", "also write the -archive-platform image as a docker-archive tarball here (docker load)")
	push := fs.String("push", "", "push the index and its SBOM referrer to this reference (repository:tag)")
	allowDirty := fs.Bool("allow-dirty", false, "allow -push from a working tree that differs from its commit")
	digestFile := fs.String("digest-file", "", "write the index and SBOM digests here (lines: index=sha256:..., sbom=sha256:...)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %v", fs.Args())}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	root, err := os.Getwd()
	if err != nil {
		return err
	}
	src, err := release.ReadSource(root)
	if err != nil {
		return err
	}
	if *push != "" && src.Dirty && !*allowDirty {
		return usageError{fmt.Errorf("the working tree differs from commit %s: a pushed image must be built from a commit (or pass -allow-dirty)", src.Commit)}
	}
	ps, err := release.Platforms(strings.Split(*platforms, ","))
	if err != nil {
		return usageError{err}
	}
	ref := *tag
	if ref == "" {
		ref = release.Repository + ":" + src.Version
	}
	tagRef, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return usageError{fmt.Errorf("-tag %q: %w", ref, err)}
	}

	start := time.Now()
	spec := release.ImageSpec(src, ps)
	spec.Log = func(f string, a ...any) { fmt.Fprintf(os.Stderr, "image: "+f+"\n", a...) }
	res, err := imagebuild.Build(ctx, spec)
	if err != nil {
		return err
	}
	idx, err := res.Index.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s (commit %s, created %s)\n", release.Name, src.Version, src.Revision(), src.Time.Format(time.RFC3339))
	fmt.Printf("index  %s\n", idx)
	for _, pi := range res.Images {
		d, _ := pi.Image.Digest()
		size, err := compressedSize(pi)
		if err != nil {
			return err
		}
		fmt.Printf("  %-14s %s  %.1f MiB compressed\n", pi.Platform.String(), d, float64(size)/(1<<20))
	}
	var sbom string
	if res.SBOM != nil {
		d, _ := res.SBOM.Digest()
		sbom = d.String()
		fmt.Printf("sbom   %s (%s, subject %s)\n", d, imagebuild.SPDXMediaType, idx)
	}

	if *out != "" {
		if err := res.WriteLayout(*out, tagRef.String()); err != nil {
			return err
		}
		fmt.Printf("wrote OCI layout %s (%s)\n", *out, tagRef)
	}
	if *archive != "" || *dockerArchive != "" {
		ii := res.Index
		var img v1.Image
		if *archivePlatform != "all" {
			p, err := imagebuild.ParsePlatform(*archivePlatform)
			if err != nil {
				return usageError{err}
			}
			if ii, err = res.PlatformIndex(p); err != nil {
				return err
			}
			if img, err = res.Image(p); err != nil {
				return err
			}
		} else if *dockerArchive != "" {
			return usageError{errors.New("-docker-archive holds one platform: set -archive-platform")}
		}
		if *archive != "" {
			if err := imagebuild.WriteOCIArchive(*archive, tagRef, ii, src.Time); err != nil {
				return err
			}
			fmt.Printf("wrote %s (%s, %s) for: ctr -n k8s.io images import %s\n", *archive, tagRef, *archivePlatform, *archive)
		}
		if *dockerArchive != "" {
			if err := imagebuild.WriteDockerArchive(*dockerArchive, tagRef, img); err != nil {
				return err
			}
			fmt.Printf("wrote %s (%s, %s) for: docker load -i %s\n", *dockerArchive, tagRef, *archivePlatform, *dockerArchive)
		}
	}
	if *push != "" {
		pref, err := name.NewTag(*push, name.StrictValidation)
		if err != nil {
			return usageError{fmt.Errorf("-push %q: %w", *push, err)}
		}
		pidx, psbom, err := res.Push(ctx, pref, remote.WithAuthFromKeychain(authn.DefaultKeychain))
		if err != nil {
			return err
		}
		fmt.Printf("pushed %s@%s (SBOM %s)\n", pref, pidx, psbom)
	}
	if *digestFile != "" {
		if err := os.WriteFile(*digestFile, []byte(fmt.Sprintf("index=%s\nsbom=%s\n", idx, sbom)), 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "image: built in %s\n", time.Since(start).Round(100*time.Millisecond))
	return nil
}

func compressedSize(pi imagebuild.PlatformImage) (int64, error) {
	layers, err := pi.Image.Layers()
	if err != nil {
		return 0, err
	}
	var n int64
	for _, l := range layers {
		s, err := l.Size()
		if err != nil {
			return 0, err
		}
		n += s
	}
	return n, nil
}
