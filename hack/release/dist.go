package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/retentionguard/retention-guard/hack/imagebuild"
)

// DistPlatforms are the platforms binaries are released for (pipelines
// that run `retention-guard check`).
var DistPlatforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"}

// ArchiveName is the file name of a platform's binary archive.
func ArchiveName(version, goos, goarch string) string {
	return fmt.Sprintf("%s_%s_%s_%s.tar.gz", Name, version, goos, goarch)
}

// ChecksumsName is the file name of the SHA-256 checksums of a release's
// files, in `sha256sum -c` format.
func ChecksumsName(version string) string { return fmt.Sprintf("%s_%s_checksums.txt", Name, version) }

// Dist builds the binary for each platform and writes, into out, one
// .tar.gz per platform (the binary and the README, entries with the
// commit time, root-owned, sorted) and the checksums file. Archives are
// reproducible: the same commit gives the same checksums. It returns the
// files written, checksums file last.
func Dist(ctx context.Context, s Source, platforms []string, out string, logf func(string, ...any)) ([]string, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "dist-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	readme, err := os.ReadFile(filepath.Join(s.Root, "README.md"))
	if err != nil {
		return nil, err
	}
	sums := map[string]string{}
	var written []string
	for _, name := range platforms {
		p, err := imagebuild.ParsePlatform(name)
		if err != nil {
			return nil, err
		}
		logf("go build for %s", name)
		bin, err := imagebuild.GoBuild(ctx, s.Root, imagebuild.GoBinary{Package: ".", LDFlags: s.LDFlags()}, p,
			filepath.Join(work, p.OS+"_"+p.Architecture, Name))
		if err != nil {
			return nil, err
		}
		data, err := os.ReadFile(bin.Path)
		if err != nil {
			return nil, err
		}
		arc, err := Archive(s, []imagebuild.File{
			{Path: Name, Mode: 0o755, Data: data},
			{Path: "README.md", Mode: 0o644, Data: readme},
		})
		if err != nil {
			return nil, err
		}
		fn := ArchiveName(s.Version, p.OS, p.Architecture)
		if err := os.WriteFile(filepath.Join(out, fn), arc, 0o644); err != nil {
			return nil, err
		}
		sum := sha256.Sum256(arc)
		sums[fn] = hex.EncodeToString(sum[:])
		written = append(written, filepath.Join(out, fn))
	}
	names := make([]string, 0, len(sums))
	for n := range sums {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s  %s\n", sums[n], n)
	}
	cs := filepath.Join(out, ChecksumsName(s.Version))
	if err := os.WriteFile(cs, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	return append(written, cs), nil
}

// Archive is a reproducible .tar.gz of files: sorted, root-owned, every
// timestamp the source's time, no gzip name or time.
func Archive(s Source, files []imagebuild.File) ([]byte, error) {
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, f := range files {
		h := &tar.Header{
			Typeflag: tar.TypeReg, Name: f.Path, Mode: int64(f.Mode.Perm()), Size: int64(len(f.Data)),
			ModTime: s.Time.UTC(), Format: tar.FormatPAX,
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
