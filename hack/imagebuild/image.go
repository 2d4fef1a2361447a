package imagebuild

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Binary is a Go program compiled into the image at Path.
type Binary struct {
	GoBinary
	// Path is where the binary lands in the image (mode 0755, owned by
	// root), e.g. /usr/local/bin/retention-guard.
	Path string
}

// Spec says what to build.
type Spec struct {
	// Dir is the Go module directory `go build` runs in.
	Dir string
	// Binaries are compiled for every platform into the second layer.
	Binaries []Binary
	// Files go into the first layer, shared by every platform (BaseFiles,
	// typically).
	Files []File
	// Platforms of the index, in order, e.g. linux/amd64 and linux/arm64.
	Platforms []v1.Platform
	// User, Entrypoint, Cmd, Env and WorkingDir are the image's runtime
	// configuration, e.g. User "65532:65532", Entrypoint the binary's Path.
	User       string
	Entrypoint []string
	Cmd        []string
	Env        []string
	WorkingDir string
	// Created is every timestamp of the build (tar entries, the config,
	// its history, the SBOM): the commit time, for reproducibility.
	Created time.Time
	// Annotations go on the index and each image manifest, and as labels
	// on each image config (org.opencontainers.image.*).
	Annotations map[string]string
	// SBOM, when set, builds an SPDX document from the binaries' module
	// lists, attached to the index as an OCI referrer.
	SBOM *SBOMInfo
	// WorkDir receives the compiled binaries (in per-platform folders); a
	// temporary directory, removed after the build, when empty.
	WorkDir string
	// Log, when set, is told what is being built.
	Log func(format string, args ...any)
}

// PlatformImage is one platform's image in the index.
type PlatformImage struct {
	Platform v1.Platform
	Image    v1.Image
	Binaries []*Built
}

// Result is a built image index.
type Result struct {
	Index  v1.ImageIndex
	Images []PlatformImage
	// SBOM is the SPDX document's artifact manifest, whose subject is the
	// index; nil without Spec.SBOM. SBOMDocument is the document itself.
	SBOM         v1.Image
	SBOMDocument []byte
}

// Image returns the image of platform p (OS and architecture).
func (r *Result) Image(p v1.Platform) (v1.Image, error) {
	for _, pi := range r.Images {
		if pi.Platform.OS == p.OS && pi.Platform.Architecture == p.Architecture {
			return pi.Image, nil
		}
	}
	var have []string
	for _, pi := range r.Images {
		have = append(have, pi.Platform.String())
	}
	return nil, fmt.Errorf("no %s image in the index (it has %s)", p.String(), strings.Join(have, ", "))
}

// ParsePlatform reads "os/arch[/variant]"; arm64 gets variant v8, as
// container runtimes and buildx write it.
func ParsePlatform(s string) (v1.Platform, error) {
	p, err := v1.ParsePlatform(s)
	if err != nil {
		return v1.Platform{}, err
	}
	if p.OS == "" || p.Architecture == "" {
		return v1.Platform{}, fmt.Errorf("platform %q: want os/arch, e.g. linux/amd64", s)
	}
	if p.Architecture == "arm64" && p.Variant == "" {
		p.Variant = "v8"
	}
	return *p, nil
}

// Build compiles the binaries for every platform and assembles the index.
// Nothing is written but the binaries (under Spec.WorkDir).
func Build(ctx context.Context, s Spec) (*Result, error) {
	if len(s.Platforms) == 0 || len(s.Binaries) == 0 {
		return nil, errors.New("imagebuild: a spec needs at least one platform and one binary")
	}
	if s.Created.IsZero() {
		return nil, errors.New("imagebuild: Spec.Created is unset: pass the commit time (SOURCE_DATE_EPOCH), never the clock")
	}
	logf := s.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	work := s.WorkDir
	if work == "" {
		tmp, err := os.MkdirTemp("", "imagebuild-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		work = tmp
	}
	created := v1.Time{Time: s.Created.UTC().Truncate(time.Second)}

	baseTar, err := deterministicTar(s.Files, created.Time)
	if err != nil {
		return nil, fmt.Errorf("base layer: %w", err)
	}
	base, err := layer(baseTar)
	if err != nil {
		return nil, err
	}

	res := &Result{}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range s.Platforms {
		pi := PlatformImage{Platform: p}
		var files []File
		var built []string
		for _, b := range s.Binaries {
			out := filepath.Join(work, p.OS+"_"+p.Architecture, filepath.Base(b.Path))
			logf("go build %s for %s", b.Package, p.String())
			bin, err := GoBuild(ctx, s.Dir, b.GoBinary, p, out)
			if err != nil {
				return nil, err
			}
			data, err := os.ReadFile(bin.Path)
			if err != nil {
				return nil, err
			}
			files = append(files, File{Path: b.Path, Mode: 0o755, Data: data})
			pi.Binaries = append(pi.Binaries, bin)
			built = append(built, b.Path)
		}
		binTar, err := deterministicTar(files, created.Time)
		if err != nil {
			return nil, fmt.Errorf("binary layer for %s: %w", p.String(), err)
		}
		bins, err := layer(binTar)
		if err != nil {
			return nil, err
		}
		img, err := platformImage(s, p, created, base, bins, built)
		if err != nil {
			return nil, fmt.Errorf("%s image: %w", p.String(), err)
		}
		pi.Image = img
		res.Images = append(res.Images, pi)
		pc := p
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &pc}})
	}
	if len(s.Annotations) > 0 {
		idx = mutate.Annotations(idx, s.Annotations).(v1.ImageIndex)
	}
	res.Index = idx

	if s.SBOM != nil {
		doc, err := spdxDocument(*s.SBOM, res, created.Time)
		if err != nil {
			return nil, fmt.Errorf("SBOM: %w", err)
		}
		art, err := referrer(idx, SPDXMediaType, "sbom.spdx.json", doc, map[string]string{
			"org.opencontainers.image.created": created.Format(time.RFC3339),
			"org.opencontainers.image.title":   "SPDX SBOM of " + s.SBOM.Name + " " + s.SBOM.Version,
		})
		if err != nil {
			return nil, fmt.Errorf("SBOM referrer: %w", err)
		}
		res.SBOM, res.SBOMDocument = art, doc
	}
	return res, nil
}

func platformImage(s Spec, p v1.Platform, created v1.Time, base, bins v1.Layer, built []string) (v1.Image, error) {
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer, History: v1.History{
			Created: created, CreatedBy: "imagebuild: CA certificates, /etc/passwd, /etc/group, /home/nonroot, /tmp", Comment: "files shared by every platform",
		}},
		mutate.Addendum{Layer: bins, MediaType: types.OCILayer, History: v1.History{
			Created: created, CreatedBy: "imagebuild: go build -trimpath (CGO_ENABLED=0) " + strings.Join(built, " "), Comment: p.String(),
		}},
	)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = created
	cf.OS, cf.Architecture, cf.Variant, cf.OSVersion = p.OS, p.Architecture, p.Variant, p.OSVersion
	cf.Config = v1.Config{
		User:       s.User,
		Entrypoint: s.Entrypoint,
		Cmd:        s.Cmd,
		Env:        s.Env,
		WorkingDir: s.WorkingDir,
		Labels:     s.Annotations,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	if len(s.Annotations) > 0 {
		img = mutate.Annotations(img, s.Annotations).(v1.Image)
	}
	return img, nil
}

// layer gzips an uncompressed tar stream once and keeps both forms.
func layer(uncompressed []byte) (v1.Layer, error) {
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(uncompressed)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestCompression), tarball.WithCompressedCaching)
}
