// Package release_test rehearses a release end to end on loopback (make
// release-rehearsal): the image index and its SBOM and the packaged chart
// are pushed to an in-process OCI registry by the code the release
// workflow runs (hack/release, hack/imagebuild); then, as a user, the
// chart is pulled from oci://, rendered with Helm, and the image its
// Deployment names is pulled by digest and its binary run.
package release_test

import (
	"archive/tar"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	helmregistry "helm.sh/helm/v4/pkg/registry"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/retentionguard/retention-guard/hack/imagebuild"
	"github.com/retentionguard/retention-guard/hack/release"
	"github.com/retentionguard/retention-guard/internal/testenv"
	"github.com/retentionguard/retention-guard/test/chartrender"
)

func TestReleaseRehearsal(t *testing.T) {
	ctx := context.Background()
	root := testenv.RepoRoot()
	src, err := release.ReadSource(root)
	if err != nil {
		t.Fatal(err)
	}
	platforms, err := release.Platforms(release.ImagePlatforms)
	if err != nil {
		t.Fatal(err)
	}

	// The registry: go-containerregistry's, in process, on loopback,
	// without the OCI 1.1 referrers API, like ghcr.io: the SBOM is found
	// through the referrers tag schema (tag sha256-<subject digest>). (With
	// the API on, this registry's listing reports the config's media type
	// instead of the manifest's artifactType, against the distribution
	// spec.)
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	imageRepo := host + "/retentionguard/retention-guard"
	chartRepo := host + "/retentionguard/charts"

	// --- The release, as the workflow runs it. ---
	t.Logf("building %s %s for %v", release.Name, src.Version, release.ImagePlatforms)
	res, err := imagebuild.Build(ctx, release.ImageSpec(src, platforms))
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(imageRepo+":"+src.Version, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	indexDigest, sbomDigest, err := res.Push(ctx, tag)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pushed %s@%s, SBOM %s", tag, indexDigest, sbomDigest)
	chartData, err := release.PackageChart(release.ChartDir(root), release.ChartOptions{
		Version: src.Version, ImageRepository: imageRepo, ImageDigest: indexDigest.String(), Created: src.Time,
	})
	if err != nil {
		t.Fatal(err)
	}
	chartRef, chartDigest, err := release.PushChart(chartData, chartRepo, release.PushOptions{PlainHTTP: true, Created: src.Time})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pushed oci://%s@%s", chartRef, chartDigest)

	// --- A user: helm pull oci://… --version X, helm template. ---
	pulled := helmPull(t, "oci://"+chartRepo+"/"+release.Name, src.Version)
	ch, err := loader.Load(pulled)
	if err != nil {
		t.Fatal(err)
	}
	appVersion := ch.Metadata.AppVersion
	if ch.Metadata.Version != src.Version || appVersion != src.Version {
		t.Errorf("pulled chart version %s appVersion %s, want %s", ch.Metadata.Version, appVersion, src.Version)
	}
	deploy := renderedDeployment(t, pulled, nil)
	c := deploy.Spec.Template.Spec.Containers[0]
	ref, err := name.NewDigest(c.Image, name.Insecure)
	if err != nil {
		t.Fatalf("the released chart names the image %q, not by digest: %v", c.Image, err)
	}
	if ref.Context().String() != imageRepo || ref.DigestStr() != indexDigest.String() {
		t.Errorf("the chart installs %s, want %s@%s", ref, imageRepo, indexDigest)
	}

	// The image by that digest: a multi-platform index.
	idx, err := remote.Index(ref)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, m := range im.Manifests {
		if m.Platform != nil {
			have = append(have, m.Platform.OS+"/"+m.Platform.Architecture)
		}
	}
	for _, p := range release.ImagePlatforms {
		if !slices.Contains(have, p) {
			t.Errorf("the pulled index has platforms %v, lacks %s", have, p)
		}
	}
	// The image tag names the same index.
	tagged, err := remote.Head(tag)
	if err != nil {
		t.Fatal(err)
	}
	if tagged.Digest != indexDigest {
		t.Errorf("tag %s is %s, the chart pins %s", tag, tagged.Digest, indexDigest)
	}

	// Pull this machine's image by the chart's digest, run its binary.
	if runtime.GOOS != "linux" {
		t.Skipf("the image's binaries run on linux, this is %s", runtime.GOOS)
	}
	img, err := remote.Image(ref, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}))
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	bin := extract(t, img, cf.Config.Entrypoint[0])
	out := run(t, bin, "version")
	m := regexp.MustCompile(`^retention-guard (\S+) \(commit ([0-9a-f]{12})`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("`retention-guard version` printed %q", out)
	}
	if m[1] != appVersion || m[1] != tag.TagStr() || !strings.HasPrefix(src.Commit, m[2]) {
		t.Errorf("binary version %s (commit %s), chart appVersion %s, image tag %s, commit %s: they must agree",
			m[1], m[2], appVersion, tag.TagStr(), src.Commit)
	}
	t.Logf("%s: version %s = appVersion %s = tag %s", ref, m[1], appVersion, tag.TagStr())

	// The chart's Deployment runs this binary unchanged: every argument it
	// passes (with the optional flags on, in both certificate modes) is a
	// flag the binary accepts, with a value it parses.
	for _, vals := range []map[string]any{
		nil,
		{"allowedBootstrapServers": []any{"*.kafka.svc:9093"}, "watchNamespaces": []any{"orders"}, "certManager": map[string]any{"enabled": true}},
	} {
		d := renderedDeployment(t, pulled, vals)
		args := d.Spec.Template.Spec.Containers[0].Args
		if cmd := d.Spec.Template.Spec.Containers[0].Command; len(cmd) != 0 {
			t.Errorf("the chart overrides the entrypoint with %v", cmd)
		}
		run(t, bin, append(slices.Clone(args), "--help")...)
	}
	if cf.Config.User != "65532:65532" || *deploy.Spec.Template.Spec.SecurityContext.RunAsUser != 65532 {
		t.Errorf("image user %q, chart runAsUser %d", cf.Config.User, *deploy.Spec.Template.Spec.SecurityContext.RunAsUser)
	}

	// The SBOM: a referrer of the index, SPDX JSON, listed under the
	// referrers tag as `oras discover` and `crane manifest` read it.
	fallback, err := remote.Head(ref.Context().Tag(strings.Replace(indexDigest.String(), ":", "-", 1)))
	if err != nil {
		t.Fatalf("no referrers tag for %s: %v", indexDigest, err)
	}
	if fallback.MediaType != "application/vnd.oci.image.index.v1+json" {
		t.Errorf("referrers tag is a %s, want an OCI index", fallback.MediaType)
	}
	refs, err := remote.Referrers(ref.Context().Digest(indexDigest.String()))
	if err != nil {
		t.Fatal(err)
	}
	rm, err := refs.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(rm.Manifests) != 1 || rm.Manifests[0].ArtifactType != imagebuild.SPDXMediaType || rm.Manifests[0].Digest != sbomDigest {
		t.Fatalf("referrers of %s: %+v, want the SPDX SBOM %s", indexDigest, rm.Manifests, sbomDigest)
	}
	sbom, err := remote.Image(ref.Context().Digest(sbomDigest.String()))
	if err != nil {
		t.Fatal(err)
	}
	layers, err := sbom.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("SBOM layers %d: %v", len(layers), err)
	}
	rc, err := layers[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var doc struct {
		SPDXVersion string `json:"spdxVersion"`
		Packages    []struct{ Name, VersionInfo string }
	}
	if err := json.NewDecoder(rc).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range doc.Packages {
		names = append(names, p.Name)
	}
	if doc.SPDXVersion != "SPDX-2.3" || !slices.Contains(names, "sigs.k8s.io/controller-runtime") || !slices.Contains(names, "github.com/twmb/franz-go") {
		t.Errorf("pulled SBOM %s lists %d packages, lacks controller-runtime or franz-go", doc.SPDXVersion, len(names))
	}
}

// helmPull does what `helm pull REF --version V --plain-http` does for an
// oci:// chart, with Helm's registry client, and returns the .tgz.
func helmPull(t *testing.T, ref, version string) string {
	t.Helper()
	home := t.TempDir()
	for _, k := range []string{"HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"} {
		t.Setenv(k, filepath.Join(home, k))
	}
	rc, err := helmregistry.NewClient(helmregistry.ClientOptPlainHTTP(), helmregistry.ClientOptWriter(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	tags, err := rc.Tags(strings.TrimPrefix(ref, "oci://"))
	if err != nil || !slices.Contains(tags, version) {
		t.Fatalf("chart versions at %s: %v (%v), want %s", ref, tags, err, version)
	}
	res, err := rc.Pull(strings.TrimPrefix(ref, "oci://") + ":" + version)
	if err != nil {
		t.Fatalf("helm pull %s --version %s: %v", ref, version, err)
	}
	p := filepath.Join(t.TempDir(), release.ChartFileName(version))
	if err := os.WriteFile(p, res.Chart.Data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// renderedDeployment renders the chart archive as `helm template` does and
// returns the manager's Deployment.
func renderedDeployment(t *testing.T, chart string, vals map[string]any) *appsv1.Deployment {
	t.Helper()
	objs, err := chartrender.Render(chart, vals)
	if err != nil {
		t.Fatal(err)
	}
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	for _, o := range objs {
		if o.GroupVersionKind() != gvk {
			continue
		}
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		d := &appsv1.Deployment{}
		if err := yaml.UnmarshalStrict(b, d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	t.Fatal("the chart renders no Deployment")
	return nil
}

// extract writes the file at path in img's filesystem to disk.
func extract(t *testing.T, img v1.Image, path string) string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s is not in the image: %v", path, err)
		}
		if "/"+strings.TrimPrefix(h.Name, "/") != path {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), filepath.Base(path))
		if err := os.WriteFile(out, b, 0o755); err != nil {
			t.Fatal(err)
		}
		return out
	}
}

func run(t *testing.T, bin string, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
