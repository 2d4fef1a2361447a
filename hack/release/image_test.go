package release

import (
	"archive/tar"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/retentionguard/retention-guard/hack/imagebuild"
)

var (
	buildOnce  sync.Once
	built      *imagebuild.Result
	builtSrc   Source
	builtErr   error
	builtPlats []v1.Platform
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// image builds the released image spec (both platforms) once for the
// tests of this package.
func image(t *testing.T) (*imagebuild.Result, Source) {
	t.Helper()
	buildOnce.Do(func() {
		builtSrc, builtErr = ReadSource(repoRoot(t))
		if builtErr != nil {
			return
		}
		if builtPlats, builtErr = Platforms(ImagePlatforms); builtErr != nil {
			return
		}
		built, builtErr = imagebuild.Build(context.Background(), ImageSpec(builtSrc, builtPlats))
	})
	if builtErr != nil {
		t.Fatal(builtErr)
	}
	return built, builtSrc
}

// copyTree copies the files git knows of (tracked and untracked, not
// ignored) from root to dst.
func copyTree(t *testing.T, root, dst string) {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-co", "--exclude-standard", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		fi, err := os.Lstat(filepath.Join(root, f))
		if err != nil {
			if os.IsNotExist(err) {
				continue // deleted in the working tree
			}
			t.Fatal(err)
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestImageIsReproducible: two builds of the same commit, the second from
// a copy of the tree at another path, give the same index, image and SBOM
// digests (the "two builds give one digest").
func TestImageIsReproducible(t *testing.T) {
	a, src := image(t)
	other := filepath.Join(t.TempDir(), "elsewhere", "retention-guard")
	copyTree(t, src.Root, other)
	srcB := src
	srcB.Root = other
	spec := ImageSpec(srcB, builtPlats)
	spec.WorkDir = t.TempDir()
	b, err := imagebuild.Build(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	da, _ := a.Index.Digest()
	db, _ := b.Index.Digest()
	if da != db {
		t.Errorf("index digests differ between two builds of the same source: %s and %s", da, db)
	}
	for i := range a.Images {
		ia, _ := a.Images[i].Image.Digest()
		ib, _ := b.Images[i].Image.Digest()
		if ia != ib {
			t.Errorf("%s image digests differ: %s and %s", a.Images[i].Platform.String(), ia, ib)
		}
	}
	sa, _ := a.SBOM.Digest()
	sb, _ := b.SBOM.Digest()
	if sa != sb {
		t.Errorf("SBOM digests differ: %s and %s", sa, sb)
	}
	t.Logf("index %s, SBOM %s, from %s and %s", da, sa, src.Root, other)
}

type entry struct {
	hdr  *tar.Header
	data []byte
}

// files flattens an image's layers.
func files(t *testing.T, img v1.Image) map[string]entry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]entry{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			out["/"+strings.TrimSuffix(h.Name, "/")] = entry{h, b}
		}
		rc.Close()
	}
	return out
}

// TestImageRunsTheChartsWay: what the chart's Deployment and a restricted
// pod rely on — non-root user, entrypoint the binary (the chart passes
// only arguments), no shell, CA roots for Kafka over TLS to public CAs,
// fixed timestamps and owners, and the OCI annotations.
func TestImageRunsTheChartsWay(t *testing.T) {
	res, src := image(t)
	for _, pi := range res.Images {
		t.Run(pi.Platform.String(), func(t *testing.T) {
			cf, err := pi.Image.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.Config.User != "65532:65532" {
				t.Errorf("user %q, want 65532:65532 (the chart runs as runAsUser 65532, runAsNonRoot)", cf.Config.User)
			}
			if len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != BinaryPath || len(cf.Config.Cmd) != 0 {
				t.Errorf("entrypoint %v cmd %v, want [%s] and no cmd: the chart passes `manager ...` as args", cf.Config.Entrypoint, cf.Config.Cmd, BinaryPath)
			}
			if cf.OS != pi.Platform.OS || cf.Architecture != pi.Platform.Architecture || !cf.Created.Time.Equal(src.Time) {
				t.Errorf("config os/arch %s/%s created %s, want %s created %s", cf.OS, cf.Architecture, cf.Created, pi.Platform.String(), src.Time)
			}
			m, err := pi.Image.Manifest()
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"source", "revision", "version", "licenses", "created"} {
				key := "org.opencontainers.image." + k
				if m.Annotations[key] == "" || cf.Config.Labels[key] != m.Annotations[key] {
					t.Errorf("annotation %s = %q, label %q", key, m.Annotations[key], cf.Config.Labels[key])
				}
			}
			if m.Annotations["org.opencontainers.image.version"] != src.Version || !strings.HasPrefix(m.Annotations["org.opencontainers.image.revision"], src.Commit) {
				t.Errorf("annotations %v do not name version %s and commit %s", m.Annotations, src.Version, src.Commit)
			}

			fs := files(t, pi.Image)
			for p, e := range fs {
				base := filepath.Base(p)
				if base == "sh" || base == "bash" || base == "ash" || base == "busybox" {
					t.Errorf("the image has a shell: %s", p)
				}
				if !e.hdr.ModTime.Equal(src.Time) {
					t.Errorf("%s modified %s, want the commit time %s", p, e.hdr.ModTime, src.Time)
				}
				if e.hdr.Uid != 0 && p != "/home/nonroot" {
					t.Errorf("%s owned by uid %d: the non-root user must not own (write) image files", p, e.hdr.Uid)
				}
			}
			bin, ok := fs[BinaryPath]
			if !ok || bin.hdr.Mode != 0o755 {
				t.Fatalf("%s missing or not 0755 (%v)", BinaryPath, ok)
			}
			if tmp, ok := fs["/tmp"]; !ok || tmp.hdr.Typeflag != tar.TypeDir {
				t.Error("no /tmp directory")
			}
			if !strings.Contains(string(fs["/etc/passwd"].data), "nonroot:x:65532:65532:") {
				t.Errorf("/etc/passwd does not name uid 65532:\n%s", fs["/etc/passwd"].data)
			}
			checkCABundle(t, fs[imagebuild.CACertificatesPath].data)
		})
	}
}

// checkCABundle: Mozilla's roots, including those the managed Kafka
// services chain to (MSK: Amazon; Confluent Cloud: Let's Encrypt/ISRG and
// DigiCert; Aiven: its own CA per project, so nothing to check).
func checkCABundle(t *testing.T, pemData []byte) {
	t.Helper()
	var n int
	subjects := map[string]bool{}
	for rest := pemData; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatalf("CA bundle: %v", err)
		}
		subjects[c.Subject.CommonName] = true
		n++
	}
	if n < 100 {
		t.Errorf("CA bundle holds %d roots, want Mozilla's (over 100)", n)
	}
	for _, cn := range []string{"Amazon Root CA 1", "ISRG Root X1", "DigiCert Global Root G2"} {
		if !subjects[cn] {
			t.Errorf("CA bundle lacks %q", cn)
		}
	}
}

// TestImageBinaryVersion runs the host platform's binary from the image's
// layers: it prints the chart's appVersion and the commit.
func TestImageBinaryVersion(t *testing.T) {
	res, src := image(t)
	img, err := res.Image(v1.Platform{OS: "linux", Architecture: runtime.GOARCH})
	if err != nil {
		t.Skipf("no image for this machine's platform: %v", err)
	}
	if runtime.GOOS != "linux" {
		t.Skip("the image's binaries run on linux")
	}
	out := runExtracted(t, img, "version")
	want := "retention-guard " + src.Version + " (commit " + src.Commit[:12]
	if !strings.HasPrefix(out, want) {
		t.Errorf("version prints %q, want it to start with %q", out, want)
	}
}

// runExtracted writes BinaryPath from img to disk and runs it with args.
func runExtracted(t *testing.T, img v1.Image, args ...string) string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	bin := filepath.Join(t.TempDir(), Name)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s not in the image: %v", BinaryPath, err)
		}
		if "/"+h.Name == BinaryPath {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(bin, b, 0o755); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", BinaryPath, args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestSBOM: the SPDX document lists what a vulnerability scanner needs —
// every module linked, with versions and Package URLs, the Go standard
// library, one binary per platform with its SHA-256 — and is attached to
// the index as an OCI referrer of type application/spdx+json.
func TestSBOM(t *testing.T) {
	res, src := image(t)
	m, err := res.SBOM.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	idx, _ := res.Index.Digest()
	if m.ArtifactType != imagebuild.SPDXMediaType || m.Subject == nil || m.Subject.Digest != idx ||
		len(m.Layers) != 1 || string(m.Layers[0].MediaType) != imagebuild.SPDXMediaType {
		t.Fatalf("SBOM manifest %+v: want artifactType %s, subject the index %s, one SPDX layer", m, imagebuild.SPDXMediaType, idx)
	}
	var doc struct {
		SPDXVersion string `json:"spdxVersion"`
		Packages    []struct {
			SPDXID, Name, VersionInfo string
			Checksums                 []struct{ Algorithm, ChecksumValue string }
			ExternalRefs              []struct{ ReferenceType, ReferenceLocator string }
		} `json:"packages"`
		Relationships []struct {
			Element string `json:"spdxElementId"`
			Type    string `json:"relationshipType"`
			Related string `json:"relatedSpdxElement"`
		} `json:"relationships"`
	}
	if err := json.Unmarshal(res.SBOMDocument, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SPDXVersion != "SPDX-2.3" {
		t.Errorf("spdxVersion %q", doc.SPDXVersion)
	}
	byName := map[string]string{}
	purls := map[string]bool{}
	for _, p := range doc.Packages {
		byName[p.Name] = p.VersionInfo
		for _, r := range p.ExternalRefs {
			if r.ReferenceType == "purl" {
				purls[r.ReferenceLocator] = true
			}
		}
	}
	// Versions as the binary records them, checked against what go.mod requires.
	gomod, err := os.ReadFile(filepath.Join(src.Root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, mod := range []string{"github.com/spf13/cobra", "sigs.k8s.io/controller-runtime", "github.com/twmb/franz-go"} {
		v := byName[mod]
		if v == "" || !strings.Contains(string(gomod), mod+" "+v) {
			t.Errorf("SBOM lists %s at %q, go.mod does not require that version", mod, v)
		}
		if !purls["pkg:golang/"+mod+"@"+v] {
			t.Errorf("no purl pkg:golang/%s@%s", mod, v)
		}
	}
	if byName["stdlib"] != runtime.Version() {
		t.Errorf("stdlib %q, want %s", byName["stdlib"], runtime.Version())
	}
	contains := 0
	for _, r := range doc.Relationships {
		if r.Element == "SPDXRef-Image" && r.Type == "CONTAINS" {
			contains++
		}
	}
	if contains != len(res.Images) {
		t.Errorf("image CONTAINS %d binaries, want one per platform (%d)", contains, len(res.Images))
	}
}

// TestOCIArchive: the tarball a node without a registry imports (`ctr -n
// k8s.io images import`) names the image for containerd and OCI tools and
// keeps the platform image's manifest digest.
func TestOCIArchive(t *testing.T) {
	res, src := image(t)
	p := res.Images[0].Platform
	ii, err := res.PlatformIndex(p)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.NewTag(Repository + ":" + src.Version)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "image.tar")
	if err := imagebuild.WriteOCIArchive(path, ref, ii, src.Time); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, _ := io.ReadAll(tr)
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(h.Name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, h.Name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Annotations[imagebuild.ContainerdNameAnnotation] != ref.String() ||
		im.Manifests[0].Annotations[imagebuild.RefNameAnnotation] != ref.String() {
		t.Fatalf("index.json %+v: want one entry named %s", im.Manifests, ref)
	}
	inner, err := top.ImageIndex(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	got, err := inner.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := res.Images[0].Image.Digest()
	if len(got.Manifests) != 1 || got.Manifests[0].Digest != want || got.Manifests[0].Platform.Architecture != p.Architecture {
		t.Errorf("archived index %+v, want the %s image %s", got.Manifests, p.String(), want)
	}
	img, err := inner.Image(want)
	if err != nil {
		t.Fatal(err)
	}
	// Every blob present and matching its digest, diff ID and size.
	if err := validate.Image(img); err != nil {
		t.Errorf("archived image: %v", err)
	}
}
