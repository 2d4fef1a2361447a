// Package nodeimages builds the images the real-node tier runs, without a
// container engine (hack/imagebuild), as OCI archives containerd imports
// (no registry is reachable from a node here).
package nodeimages

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/retentionguard/retention-guard/hack/imagebuild"
	rgrelease "github.com/retentionguard/retention-guard/hack/release"
	"github.com/retentionguard/retention-guard/internal/testenv"
	"github.com/retentionguard/retention-guard/test/node/cluster"
)

// Set are the images, as archives, and their references.
type Set struct {
	Pause, Consumer, Manager string // OCI archives
	ManagerRef, ConsumerRef  string
}

// Archives lists the archives to import (cluster.Options.Images).
func (s Set) Archives() []string {
	var out []string
	for _, a := range []string{s.Pause, s.Consumer, s.Manager} {
		if a != "" {
			out = append(out, a)
		}
	}
	return out
}

// ConsumerRef names test/consumer's image.
const ConsumerRef = "retentionguard.local/consumer:test"

// What to build.
const (
	Pause = 1 << iota
	Consumer
	Manager
	All = Pause | Consumer | Manager
)

// Build builds into dir, for this machine's platform, the images which
// selects:
//   - the manager: the release image (rgrelease.ImageSpec: what make image
//     builds and CI pushes), named as the chart's default image
//     (repository:appVersion), so `helm install` runs with the chart's
//     defaults untouched and the kubelet finds it (pullPolicy IfNotPresent);
//   - test/consumer, the real kgo consumer the seeds replay;
//   - the pause program, containerd's sandbox_image.
func Build(ctx context.Context, dir string, which int) (Set, error) {
	root := testenv.RepoRoot()
	src, err := rgrelease.ReadSource(root)
	if err != nil {
		return Set{}, err
	}
	p, err := imagebuild.ParsePlatform("linux/" + runtime.GOARCH)
	if err != nil {
		return Set{}, err
	}
	set := Set{ManagerRef: rgrelease.Repository + ":" + src.Version, ConsumerRef: ConsumerRef}
	manager := rgrelease.ImageSpec(src, []v1.Platform{p})
	manager.SBOM = nil // not what this tier tests; the release rehearsal does
	program := func(pkg, path string) imagebuild.Spec {
		return imagebuild.Spec{
			Dir:        root,
			Binaries:   []imagebuild.Binary{{GoBinary: imagebuild.GoBinary{Package: pkg}, Path: path}},
			Files:      imagebuild.BaseFiles(),
			Platforms:  []v1.Platform{p},
			User:       fmt.Sprintf("%d:%d", imagebuild.NonRoot, imagebuild.NonRoot),
			Entrypoint: []string{path},
			WorkingDir: "/",
			Created:    src.Time,
		}
	}
	for _, img := range []struct {
		bit  int
		spec imagebuild.Spec
		ref  string
		out  *string
	}{
		{Manager, manager, set.ManagerRef, &set.Manager},
		{Consumer, program("./test/consumer", "/usr/local/bin/consumer"), set.ConsumerRef, &set.Consumer},
		{Pause, program("./test/node/pause", "/pause"), cluster.PauseImage, &set.Pause},
	} {
		if which&img.bit == 0 {
			continue
		}
		*img.out = filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(img.ref)+".tar")
		start := time.Now()
		img.spec.WorkDir = filepath.Join(dir, "imagebuild", filepath.Base(*img.out))
		res, err := imagebuild.Build(ctx, img.spec)
		if err != nil {
			return set, fmt.Errorf("building %s: %w", img.ref, err)
		}
		idx, err := res.PlatformIndex(p)
		if err != nil {
			return set, err
		}
		tag, err := name.NewTag(img.ref, name.StrictValidation)
		if err != nil {
			return set, err
		}
		if err := imagebuild.WriteOCIArchive(*img.out, tag, idx, src.Time); err != nil {
			return set, fmt.Errorf("writing %s: %w", *img.out, err)
		}
		fmt.Fprintf(os.Stderr, "node images: built %s in %s\n", img.ref, time.Since(start).Round(100*time.Millisecond))
	}
	return set, nil
}
