// Package version holds the build's version and commit, set by the linker:
//
//	-ldflags "-X github.com/retentionguard/retention-guard/internal/version.Version=0.1.0
//	          -X github.com/retentionguard/retention-guard/internal/version.Commit=<sha>"
//
// The version is the chart's appVersion (charts/retention-guard/Chart.yaml),
// the one source of truth: `make build`, `make image`, `make dist` and the
// release stamp it, so the binary, the image tag and the chart agree.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release version; "dev" for builds that were not stamped
// (go build, go test).
var Version = "dev"

// Commit is the commit the binary was built from ("-dirty" when the
// working tree differed); empty when not stamped, and then read from the
// Go toolchain's VCS stamp if present.
var Commit = ""

// String is the version line printed by `retention-guard version`:
//
//	retention-guard 0.1.0 (commit 0123456789ab, go1.26.8, linux/amd64)
func String() string {
	return fmt.Sprintf("retention-guard %s (commit %s, %s, %s/%s)", Version, shortCommit(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func shortCommit() string {
	c := Commit
	if c == "" {
		if info, ok := debug.ReadBuildInfo(); ok {
			for _, s := range info.Settings {
				if s.Key == "vcs.revision" {
					c = s.Value
				}
			}
		}
	}
	if c == "" {
		return "unknown"
	}
	dirty := ""
	if n := len(c) - len("-dirty"); n > 0 && c[n:] == "-dirty" {
		c, dirty = c[:n], "-dirty"
	}
	if len(c) > 12 {
		c = c[:12]
	}
	return c + dirty
}
