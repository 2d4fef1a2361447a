package imagebuild

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestTarSortedWithParents(t *testing.T) {
	b, err := deterministicTar([]File{
		{Path: "/usr/local/bin/x", Mode: 0o755, Data: []byte("x")},
		{Path: "/etc/a", Mode: 0o644, Data: []byte("a")},
		{Path: "/tmp", Mode: 0o777 | os.ModeSticky, Dir: true},
	}, epoch)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(b))
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if !h.ModTime.Equal(epoch) || h.Uid != 0 || h.Gid != 0 || h.Uname != "" {
			t.Errorf("%s: mtime %s uid %d gid %d uname %q", h.Name, h.ModTime, h.Uid, h.Gid, h.Uname)
		}
		if h.Name == "tmp/" && h.Mode != 0o1777 {
			t.Errorf("/tmp mode %o, want 1777", h.Mode)
		}
	}
	want := "etc/ etc/a tmp/ usr/ usr/local/ usr/local/bin/ usr/local/bin/x"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("entries %q, want %q", got, want)
	}
	again, _ := deterministicTar([]File{
		{Path: "/tmp", Mode: 0o777 | os.ModeSticky, Dir: true},
		{Path: "/etc/a", Mode: 0o644, Data: []byte("a")},
		{Path: "/usr/local/bin/x", Mode: 0o755, Data: []byte("x")},
	}, epoch)
	if !bytes.Equal(b, again) {
		t.Error("the same files in another order give another tar")
	}
}

func TestTarRefusesConflicts(t *testing.T) {
	if _, err := deterministicTar([]File{{Path: "/a", Data: []byte("1")}, {Path: "/a", Data: []byte("2")}}, epoch); err == nil {
		t.Error("a path given twice accepted")
	}
	if _, err := deterministicTar([]File{{Path: "/a", Data: []byte("1")}, {Path: "/a/b", Data: []byte("2")}}, epoch); err == nil {
		t.Error("a file as a parent directory accepted")
	}
}

// TestBuildSmallImage builds the smallest image the package makes (a
// static binary and the base files: the real-node tier's pause image is
// one), twice, and runs this platform's binary from its layers.
func TestBuildSmallImage(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var ps []v1.Platform
	for _, s := range []string{"linux/amd64", "linux/arm64"} {
		p, err := ParsePlatform(s)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	spec := Spec{
		Dir:        dir,
		Binaries:   []Binary{{GoBinary: GoBinary{Package: "./hack/imagebuild/testdata/hello"}, Path: "/hello"}},
		Files:      BaseFiles(),
		Platforms:  ps,
		User:       "65532:65532",
		Entrypoint: []string{"/hello"},
		Created:    epoch,
	}
	a, err := Build(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	da, _ := a.Index.Digest()
	db, _ := b.Index.Digest()
	if da != db {
		t.Errorf("two builds: %s and %s", da, db)
	}
	// Written as an OCI layout and read back, as tools read it: every
	// manifest, config and layer matches its digest, size and diff ID.
	dir = t.TempDir()
	if err := a.WriteLayout(dir, "example.com/hello:1"); err != nil {
		t.Fatal(err)
	}
	lp, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	back, err := top.ImageIndex(da)
	if err != nil {
		t.Fatalf("the layout lacks the index %s: %v", da, err)
	}
	if err := validate.Index(back); err != nil {
		t.Fatalf("index does not validate: %v", err)
	}
	if ps[1].Variant != "v8" {
		t.Errorf("arm64 variant %q, want v8", ps[1].Variant)
	}
	if runtime.GOOS != "linux" {
		return
	}
	img, err := a.Image(v1.Platform{OS: "linux", Architecture: runtime.GOARCH})
	if err != nil {
		t.Fatal(err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("no /hello in the image: %v", err)
		}
		if h.Name != "hello" {
			continue
		}
		data, _ := io.ReadAll(tr)
		bin := filepath.Join(t.TempDir(), "hello")
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "x").CombinedOutput()
		if err != nil || string(out) != "hello [x]\n" {
			t.Errorf("hello x: %v %q", err, out)
		}
		return
	}
}
