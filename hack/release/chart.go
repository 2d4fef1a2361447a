package release

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/registry"
	"sigs.k8s.io/yaml"
)

// ChartOptions pin what the packaged chart installs.
type ChartOptions struct {
	// Version the chart must carry (version and appVersion).
	Version string
	// ImageRepository replaces values.yaml's image.repository when set
	// and different (a rehearsal's local registry).
	ImageRepository string
	// ImageDigest is written to image.digest: the released chart pulls
	// exactly the image index it was released with.
	ImageDigest string
	// Created is every file's modification time in the archive (the
	// commit time), so the same commit packages to the same bytes.
	Created time.Time
}

// PackageChart packages the chart at chartDir as `helm package` does
// (Helm's own loader and archiver) with the image pinned, and returns the
// .tgz. It refuses a chart whose version is not o.Version.
func PackageChart(chartDir string, o ChartOptions) ([]byte, error) {
	v, err := ChartVersion(chartDir)
	if err != nil {
		return nil, err
	}
	if v != o.Version {
		return nil, fmt.Errorf("the chart is version %s, the release %s: set version and appVersion in %s/Chart.yaml", v, o.Version, chartDir)
	}
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("loading the chart: %w", err)
	}
	for _, f := range ch.Raw {
		if f.Name != chartutil.ValuesfileName {
			continue
		}
		if f.Data, err = PinImage(f.Data, o.ImageRepository, o.ImageDigest); err != nil {
			return nil, err
		}
	}
	if err := yaml.Unmarshal(rawValues(ch.Raw), &ch.Values); err != nil {
		return nil, err
	}
	ch.ModTime, ch.SchemaModTime = o.Created, o.Created
	for _, files := range [][]*common.File{ch.Raw, ch.Templates, ch.Files} {
		for _, f := range files {
			f.ModTime = o.Created
		}
	}
	dir, err := os.MkdirTemp("", "chart-package-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path, err := chartutil.Save(ch, dir)
	if err != nil {
		return nil, fmt.Errorf("packaging the chart: %w", err)
	}
	return os.ReadFile(path)
}

func rawValues(raw []*common.File) []byte {
	for _, f := range raw {
		if f.Name == chartutil.ValuesfileName {
			return f.Data
		}
	}
	return nil
}

var (
	topLevelKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*:`)
	imageKey    = regexp.MustCompile(`^  (repository|digest):.*$`)
)

// PinImage rewrites image.repository (when repository is set) and
// image.digest in a values.yaml, keeping its comments, and checks that
// nothing else changed.
func PinImage(values []byte, repository, digest string) ([]byte, error) {
	lines := strings.Split(string(values), "\n")
	inImage, set := false, map[string]bool{}
	for i, l := range lines {
		if topLevelKey.MatchString(l) {
			inImage = strings.HasPrefix(l, "image:")
			continue
		}
		m := imageKey.FindStringSubmatch(l)
		if !inImage || m == nil {
			continue
		}
		switch {
		case m[1] == "digest":
			lines[i] = "  digest: " + strconv.Quote(digest)
		case m[1] == "repository" && repository != "":
			lines[i] = "  repository: " + strconv.Quote(repository)
		}
		set[m[1]] = true
	}
	if !set["digest"] || !set["repository"] {
		return nil, fmt.Errorf("values.yaml has no image.repository or image.digest line to pin (two-space indented under image:)")
	}
	out := []byte(strings.Join(lines, "\n"))

	var before, after map[string]any
	if err := yaml.Unmarshal(values, &before); err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(out, &after); err != nil {
		return nil, fmt.Errorf("values.yaml after pinning the image: %w", err)
	}
	img, _ := before["image"].(map[string]any)
	if img == nil {
		return nil, fmt.Errorf("values.yaml has no image map")
	}
	img["digest"] = digest
	if repository != "" {
		img["repository"] = repository
	}
	if !reflect.DeepEqual(before, after) {
		return nil, fmt.Errorf("pinning the image changed more than image.repository and image.digest in values.yaml")
	}
	return out, nil
}

// PushOptions say how to reach the chart registry.
type PushOptions struct {
	// PlainHTTP talks HTTP, not HTTPS (a loopback registry).
	PlainHTTP bool
	// Created is the OCI manifest's org.opencontainers.image.created.
	Created time.Time
}

// PushChart pushes a packaged chart to repo (e.g.
// ghcr.io/retentionguard/charts) as `helm push` does, with Helm's
// registry client (credentials from `helm registry login` or Docker's
// config), and returns its reference and manifest digest.
func PushChart(data []byte, repo string, o PushOptions) (ref, digest string, err error) {
	ch, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		return "", "", fmt.Errorf("reading the packaged chart: %w", err)
	}
	opts := []registry.ClientOption{registry.ClientOptWriter(os.Stderr)}
	if o.PlainHTTP {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	c, err := registry.NewClient(opts...)
	if err != nil {
		return "", "", err
	}
	ref = strings.TrimPrefix(strings.TrimSuffix(repo, "/"), "oci://") + "/" + ch.Name() + ":" + ch.Metadata.Version
	var popts []registry.PushOption
	if !o.Created.IsZero() {
		popts = append(popts, registry.PushOptCreationTime(o.Created.UTC().Format(time.RFC3339)))
	}
	res, err := c.Push(data, ref, popts...)
	if err != nil {
		return "", "", fmt.Errorf("pushing the chart to %s: %w", ref, err)
	}
	return ref, res.Manifest.Digest, nil
}

// ChartFileName is the packaged chart's file name, as `helm package` names it.
func ChartFileName(version string) string { return filepath.Base(Name + "-" + version + ".tgz") }
