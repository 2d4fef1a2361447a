package imagebuild

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// RefNameAnnotation names an index entry of an OCI layout (a tag).
const RefNameAnnotation = "org.opencontainers.image.ref.name"

// WriteLayout writes the index (its entry in index.json named tag) and
// its SBOM referrer as an OCI image layout in dir, replacing what dir
// held. Tools read it with `crane`, `oras --oci-layout`, `skopeo
// copy oci:DIR:TAG`, and containerd after `tar -C DIR -cf x.tar .`.
func (r *Result) WriteLayout(dir, tag string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(r.Index, layout.WithAnnotations(map[string]string{RefNameAnnotation: tag})); err != nil {
		return fmt.Errorf("writing the index to %s: %w", dir, err)
	}
	if r.SBOM != nil {
		if err := p.AppendImage(r.SBOM); err != nil {
			return fmt.Errorf("writing the SBOM to %s: %w", dir, err)
		}
	}
	// ggcr writes some blobs 0600 and index.json 0755: make the layout
	// readable by anyone, like any build output.
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return os.Chmod(path, 0o644)
	})
}

// ContainerdNameAnnotation is the image name containerd gives an entry
// of an imported OCI archive.
const ContainerdNameAnnotation = "io.containerd.image.name"

// WriteOCIArchive writes ii as an OCI archive (a tar of an OCI image
// layout, its index.json entry named ref for both containerd and OCI
// tools) to path: `ctr -n k8s.io images import PATH` stores it as ref with
// its digests unchanged, so a chart may name it by tag or by digest. For a
// node that pulls from no registry; pass Result.Index for every platform,
// or PlatformIndex for one. Entries are sorted with a fixed time: the
// archive is reproducible too.
func WriteOCIArchive(path string, ref name.Tag, ii v1.ImageIndex, created time.Time) error {
	tmp, err := os.MkdirTemp("", "oci-archive-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return err
	}
	anns := map[string]string{RefNameAnnotation: ref.String(), ContainerdNameAnnotation: ref.String()}
	if err := p.AppendIndex(ii, layout.WithAnnotations(anns)); err != nil {
		return err
	}
	var files []File
	err = filepath.WalkDir(tmp, func(f string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(tmp, f)
		files = append(files, File{Path: filepath.ToSlash(rel), Mode: 0o644, Data: b})
		return nil
	})
	if err != nil {
		return err
	}
	tb, err := deterministicTar(files, created)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, tb, 0o644)
}

// PlatformIndex is an index holding only the image of platform p, with
// its manifest unchanged (the same digest as in the full index).
func (r *Result) PlatformIndex(p v1.Platform) (v1.ImageIndex, error) {
	img, err := r.Image(p)
	if err != nil {
		return nil, err
	}
	for _, pi := range r.Images {
		if pi.Image == img {
			p = pi.Platform
		}
	}
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}}), nil
}

// WriteDockerArchive writes img as a docker-archive tarball (manifest.json
// with RepoTags [ref]) to path, for `docker load`. containerd imports it
// too, but rewrites the manifest (another digest): prefer WriteOCIArchive.
func WriteDockerArchive(path string, ref name.Tag, img v1.Image) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := tarball.Write(ref, img, f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// Push uploads the index under tag and its SBOM referrer. Registries
// without the OCI 1.1 referrers API (ghcr.io among them) get the
// referrers tag schema (tag sha256-<index digest>) instead. It returns the
// index digest and the SBOM's manifest digest (zero without an SBOM).
func (r *Result) Push(ctx context.Context, tag name.Tag, opts ...remote.Option) (index, sbom v1.Hash, err error) {
	opts = append([]remote.Option{remote.WithContext(ctx), remote.WithReferrersTagFallback(true)}, opts...)
	if index, err = r.Index.Digest(); err != nil {
		return index, sbom, err
	}
	if err := remote.WriteIndex(tag, r.Index, opts...); err != nil {
		return index, sbom, fmt.Errorf("pushing the index to %s: %w", tag, err)
	}
	if r.SBOM == nil {
		return index, sbom, nil
	}
	if sbom, err = r.SBOM.Digest(); err != nil {
		return index, sbom, err
	}
	if err := remote.Write(tag.Context().Digest(sbom.String()), r.SBOM, opts...); err != nil {
		return index, sbom, fmt.Errorf("pushing the SBOM referrer to %s: %w", tag.Context(), err)
	}
	return index, sbom, nil
}
