// Package version holds the build's version, set by the linker:
//
//	-ldflags "-X github.com/retentionguard/retention-guard/internal/version.Version=v0.1.0"
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release version; "dev" for local builds.
var Version = "dev"

// String is the version line printed by `retention-guard version`.
func String() string {
	commit := "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				commit = s.Value[:12]
			}
		}
	}
	return fmt.Sprintf("retention-guard %s (commit %s, %s, %s/%s)", Version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
