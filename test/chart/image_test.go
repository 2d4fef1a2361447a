package chart_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// appVersion reads the chart's appVersion (and checks version equals it:
// one version per release, see docs/release.md).
func appVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct{ Version, AppVersion string }
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.Version != m.AppVersion || m.AppVersion == "" {
		t.Fatalf("Chart.yaml version %q and appVersion %q must be equal: the release, its image tag and the binary share one version", m.Version, m.AppVersion)
	}
	return m.AppVersion
}

// TestImage: the published image by default, tagged with the chart's
// appVersion; a tag of one's own (the real-node tier's locally imported
// image); a digest that wins over the tag (the released chart pins one).
func TestImage(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name string
		vals map[string]any
		want string
	}{
		{"default", nil, "ghcr.io/retentionguard/retention-guard:" + appVersion(t)},
		{"local image", set("image.repository", "localhost/retention-guard", "image.tag", "dev", "image.pullPolicy", "Never"), "localhost/retention-guard:dev"},
		{"digest wins", set("image.tag", "v9.9.9", "image.digest", digest), "ghcr.io/retentionguard/retention-guard@" + digest},
		{"registry with a port", set("image.repository", "127.0.0.1:5000/rg/retention-guard", "image.digest", digest), "127.0.0.1:5000/rg/retention-guard@" + digest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c := managerDeployment(t, render(t, tc.vals))
			if c.Image != tc.want {
				t.Errorf("image %q, want %q", c.Image, tc.want)
			}
			if len(c.Command) != 0 {
				t.Errorf("command %v: the image's entrypoint is the binary, the chart passes arguments only", c.Command)
			}
		})
	}
	_, c := managerDeployment(t, render(t, set("image.pullPolicy", "Never")))
	if c.ImagePullPolicy != "Never" {
		t.Errorf("pullPolicy %s", c.ImagePullPolicy)
	}
}

func TestImageSchemaRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		vals map[string]any
		want string
	}{
		{"digest without algorithm", set("image.digest", "0123456789abcdef"), "digest"},
		{"short digest", set("image.digest", "sha256:0123"), "digest"},
		{"tag in the repository", set("image.repository", "ghcr.io/retentionguard/retention-guard:0.1.0"), "repository"},
		{"tag with a slash", set("image.tag", "feature/x"), "tag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderErr(t, tc.vals)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("values %v: error %v, want one naming %s", tc.vals, err, tc.want)
			}
		})
	}
}
