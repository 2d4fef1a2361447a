package release

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Source is what a build is made from: the version (the chart's
// appVersion, the one source of truth), the commit and its time.
type Source struct {
	// Root is the repository's top directory.
	Root string
	// Version is charts/retention-guard/Chart.yaml's appVersion (equal to
	// the chart's version): the binary prints it, the image is tagged with
	// it, the chart carries it, and a release tag is v<Version>.
	Version string
	// Commit is the full commit hash; Dirty says the working tree differs
	// from it.
	Commit string
	Dirty  bool
	// Time is the commit time, or SOURCE_DATE_EPOCH when set: every
	// timestamp of a build (tar entries, image config, SBOM, chart).
	Time time.Time
}

// ChartDir is the chart's directory under root.
func ChartDir(root string) string { return filepath.Join(root, "charts", Name) }

// ReadSource reads the version from the chart and the commit from git.
func ReadSource(root string) (Source, error) {
	v, err := ChartVersion(ChartDir(root))
	if err != nil {
		return Source{}, err
	}
	s := Source{Root: root, Version: v}
	if s.Commit, err = git(root, "rev-parse", "HEAD"); err != nil {
		return Source{}, err
	}
	status, err := git(root, "status", "--porcelain")
	if err != nil {
		return Source{}, err
	}
	s.Dirty = status != ""
	epoch := os.Getenv("SOURCE_DATE_EPOCH")
	if epoch == "" {
		if epoch, err = git(root, "log", "-1", "--format=%ct", "HEAD"); err != nil {
			return Source{}, err
		}
	}
	sec, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return Source{}, fmt.Errorf("SOURCE_DATE_EPOCH or the commit time %q is not a number of seconds: %w", epoch, err)
	}
	s.Time = time.Unix(sec, 0).UTC()
	return s, nil
}

// Revision is the commit, marked -dirty when the working tree differs.
func (s Source) Revision() string {
	if s.Dirty {
		return s.Commit + "-dirty"
	}
	return s.Commit
}

// LDFlags stamp the version and the commit into the binary.
func (s Source) LDFlags() []string {
	return []string{
		"-X " + VersionPackage + ".Version=" + s.Version,
		"-X " + VersionPackage + ".Commit=" + s.Revision(),
	}
}

// chartMeta is the part of Chart.yaml a release reads.
type chartMeta struct {
	Name       string `json:"name"`
	Version    string `json:"version"`
	AppVersion string `json:"appVersion"`
}

// ChartVersion reads Chart.yaml and returns its appVersion, refusing a
// chart whose version differs from its appVersion (they move together: a
// release is one version) or that lacks either.
func ChartVersion(chartDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		return "", err
	}
	var m chartMeta
	if err := yaml.Unmarshal(b, &m); err != nil {
		return "", fmt.Errorf("%s/Chart.yaml: %w", chartDir, err)
	}
	switch {
	case m.AppVersion == "" || m.Version == "":
		return "", fmt.Errorf("%s/Chart.yaml: version and appVersion must both be set", chartDir)
	case m.AppVersion != m.Version:
		return "", fmt.Errorf("%s/Chart.yaml: version %q and appVersion %q differ; a release has one version: set both", chartDir, m.Version, m.AppVersion)
	case strings.HasPrefix(m.AppVersion, "v"):
		return "", fmt.Errorf("%s/Chart.yaml: appVersion %q: write it without the v (the git tag is v%s)", chartDir, m.AppVersion, strings.TrimPrefix(m.AppVersion, "v"))
	}
	return m.AppVersion, nil
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
