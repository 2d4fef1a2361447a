package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDist builds this machine's archive twice: the same checksums, a
// checksums file `sha256sum -c` accepts, an archive holding the binary
// (0755, the commit time) and the README, and a binary that prints the
// version.
func TestDist(t *testing.T) {
	src, err := ReadSource(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	out1, out2 := t.TempDir(), t.TempDir()
	files, err := Dist(context.Background(), src, []string{platform}, out1, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Dist(context.Background(), src, []string{platform}, out2, t.Logf); err != nil {
		t.Fatal(err)
	}
	sums1, _ := os.ReadFile(filepath.Join(out1, ChecksumsName(src.Version)))
	sums2, _ := os.ReadFile(filepath.Join(out2, ChecksumsName(src.Version)))
	if len(sums1) == 0 || !bytes.Equal(sums1, sums2) {
		t.Errorf("two dist builds give different checksums:\n%s\n%s", sums1, sums2)
	}
	if len(files) != 2 || filepath.Base(files[0]) != ArchiveName(src.Version, runtime.GOOS, runtime.GOARCH) {
		t.Fatalf("files %v", files)
	}
	arc, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(arc)
	if want := hex.EncodeToString(sum[:]) + "  " + filepath.Base(files[0]) + "\n"; string(sums1) != want {
		t.Errorf("checksums file %q, want %q", sums1, want)
	}
	if sha, err := exec.LookPath("sha256sum"); err == nil {
		cmd := exec.Command(sha, "-c", ChecksumsName(src.Version))
		cmd.Dir = out1
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("sha256sum -c: %v\n%s", err, out)
		}
	}

	zr, err := gzip.NewReader(bytes.NewReader(arc))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	names := map[string]bool{}
	bin := filepath.Join(t.TempDir(), Name)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names[h.Name] = true
		if !h.ModTime.Equal(src.Time) || h.Uid != 0 {
			t.Errorf("%s: mtime %s uid %d, want the commit time %s and root", h.Name, h.ModTime, h.Uid, src.Time)
		}
		if h.Name == Name {
			if h.Mode != 0o755 {
				t.Errorf("binary mode %o", h.Mode)
			}
			b, _ := io.ReadAll(tr)
			if err := os.WriteFile(bin, b, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !names[Name] || !names["README.md"] || len(names) != 2 {
		t.Errorf("archive holds %v, want %s and README.md", names, Name)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "retention-guard "+src.Version+" (commit ") {
		t.Errorf("version: %v: %s", err, out)
	}
}
