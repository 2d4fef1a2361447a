package imagebuild

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// GoBinary is a Go main package to compile.
type GoBinary struct {
	// Package is the main package, as `go build` takes it ("." or
	// "./cmd/x" relative to the module directory, or an import path).
	Package string
	// LDFlags are extra linker flags, typically -X name=value stamps.
	// -s -w (no symbol table, no DWARF) are always added.
	LDFlags []string
}

// Built is a compiled binary and what it was built from.
type Built struct {
	Path     string // the binary on disk
	Platform v1.Platform
	Info     *debug.BuildInfo // module list, Go version, build settings
}

// GoBuild compiles b for platform p (GOOS/GOARCH, and the arm64 variant)
// into out, from the module in dir, reproducibly: CGO off, -trimpath, no
// VCS stamping, a fixed architecture level (GOAMD64=v1, GOARM64=v8.0) so a
// builder's environment does not leak into the binary, and the GOFLAGS of
// the environment ignored. Go's build cache serves repeated builds.
func GoBuild(ctx context.Context, dir string, b GoBinary, p v1.Platform, out string) (*Built, error) {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, err
	}
	ldflags := append([]string{"-s", "-w"}, b.LDFlags...)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", strings.Join(ldflags, " "), "-o", out, b.Package)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture,
		"GOAMD64=v1", "GOARM64=v8.0", "GOARM=7", "GOFLAGS=", "GOEXPERIMENT=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %s for %s: %w\n%s", b.Package, p.String(), err, stderr.String())
	}
	info, err := buildinfo.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("reading the module list of %s: %w", out, err)
	}
	return &Built{Path: out, Platform: p, Info: info}, nil
}
