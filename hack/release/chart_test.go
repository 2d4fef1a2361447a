package release

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestPinImageKeepsComments(t *testing.T) {
	root := repoRoot(t)
	values, err := os.ReadFile(filepath.Join(ChartDir(root), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := PinImage(values, "127.0.0.1:5000/rg/retention-guard", testDigest)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`  digest: "` + testDigest + `"`, `  repository: "127.0.0.1:5000/rg/retention-guard"`, "# -- Image digest"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("pinned values.yaml lacks %q", want)
		}
	}
	if n := bytes.Count(values, []byte("\n")); n != bytes.Count(out, []byte("\n")) {
		t.Errorf("pinning changed the number of lines")
	}
	// Without a repository, only the digest changes.
	out, err = PinImage(values, "", testDigest)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "  repository: "+Repository+"\n") {
		t.Error("repository changed though none was given")
	}
}

func TestPinImageRefusesUnknownLayout(t *testing.T) {
	_, err := PinImage([]byte("image:\n    digest: \"\"\n    repository: x\n"), "", testDigest)
	if err == nil || !strings.Contains(err.Error(), "image.repository or image.digest") {
		t.Errorf("4-space indented values accepted or unclear error: %v", err)
	}
}

func TestChartVersionIsTheReleaseVersion(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("apiVersion: v2\nname: retention-guard\nversion: 0.2.0\nappVersion: \"0.1.0\"\n")
	if _, err := ChartVersion(dir); err == nil || !strings.Contains(err.Error(), "differ") {
		t.Errorf("version 0.2.0 with appVersion 0.1.0 accepted: %v", err)
	}
	write("apiVersion: v2\nname: retention-guard\nversion: v0.2.0\nappVersion: v0.2.0\n")
	if _, err := ChartVersion(dir); err == nil || !strings.Contains(err.Error(), "without the v") {
		t.Errorf("appVersion v0.2.0 accepted: %v", err)
	}
	// The repository's own chart passes.
	if _, err := ChartVersion(ChartDir(repoRoot(t))); err != nil {
		t.Error(err)
	}
}

// TestPackageChartIsReproducible: Helm's archive of the chart with the
// image pinned, the same bytes twice, and loadable with the digest in its
// values.
func TestPackageChartIsReproducible(t *testing.T) {
	root := repoRoot(t)
	v, err := ChartVersion(ChartDir(root))
	if err != nil {
		t.Fatal(err)
	}
	o := ChartOptions{Version: v, ImageDigest: testDigest, Created: time.Unix(1700000000, 0)}
	a, err := PackageChart(ChartDir(root), o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := PackageChart(ChartDir(root), o)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("two packagings of the same chart differ")
	}
	ch, err := loader.LoadArchive(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	img, _ := ch.Values["image"].(map[string]any)
	if img["digest"] != testDigest || img["repository"] != Repository {
		t.Errorf("packaged image values %v", img)
	}
	if ch.Metadata.AppVersion != v {
		t.Errorf("packaged appVersion %s, want %s", ch.Metadata.AppVersion, v)
	}
	o.Version = "9.9.9"
	if _, err := PackageChart(ChartDir(root), o); err == nil || !strings.Contains(err.Error(), "Chart.yaml") {
		t.Errorf("packaging as 9.9.9 a chart of version %s: %v", v, err)
	}
}
