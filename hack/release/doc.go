// Package release holds what a retention-guard release is made of, once:
// its version and source (from the chart and git), the image spec, the
// chart packaged with its image pinned by digest and pushed as an OCI
// artifact, and the binary archives with their checksums.
//
// `make image` (hack/image), `make dist` (hack/dist), `make chart`
// (hack/chart), the release workflow and the release rehearsal
// (test/release) all go through it, so the rehearsal exercises the code a
// release runs.
package release

// Where retention-guard is published and what it is licensed under.
const (
	// Repository is the image repository the chart defaults to.
	Repository = "ghcr.io/retentionguard/retention-guard"
	// ChartRepository is where the chart is pushed as an OCI artifact
	// (`helm install retention-guard oci://ghcr.io/retentionguard/charts/retention-guard`).
	ChartRepository = "ghcr.io/retentionguard/charts"
	// SourceURL is the project's repository.
	SourceURL = "https://github.com/retentionguard/retention-guard"
	// License is the SPDX expression declared in the image's annotations
	// and SBOM.
	License = "Apache-2.0"
	// Name is the binary's, the image's and the chart's name.
	Name = "retention-guard"
	// BinaryPath is where the binary lives in the image.
	BinaryPath = "/usr/local/bin/retention-guard"
	// VersionPackage is the package whose Version and Commit the linker stamps.
	VersionPackage = "github.com/retentionguard/retention-guard/internal/version"
)
