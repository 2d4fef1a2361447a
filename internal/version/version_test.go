package version

import (
	"runtime"
	"testing"
)

func TestString(t *testing.T) {
	defer func(v, c string) { Version, Commit = v, c }(Version, Commit)
	for _, tc := range []struct{ version, commit, want string }{
		{"0.1.0", "0123456789abcdef0123456789abcdef01234567", "retention-guard 0.1.0 (commit 0123456789ab, "},
		{"0.1.0", "0123456789abcdef0123456789abcdef01234567-dirty", "retention-guard 0.1.0 (commit 0123456789ab-dirty, "},
	} {
		Version, Commit = tc.version, tc.commit
		want := tc.want + runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH + ")"
		if got := String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}
