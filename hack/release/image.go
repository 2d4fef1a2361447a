package release

import (
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/retentionguard/retention-guard/hack/imagebuild"
)

// ImagePlatforms are the platforms of the released image.
var ImagePlatforms = []string{"linux/amd64", "linux/arm64"}

// Annotations are the OCI annotations of the image (and the labels of its
// configs): where it comes from, which commit and version, its license
// and when it was made (the commit time).
func (s Source) Annotations() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":         Name,
		"org.opencontainers.image.description":   "Proves Kafka consumer groups cannot silently lose data to retention; refuses rollouts of their consumers while they can.",
		"org.opencontainers.image.source":        SourceURL,
		"org.opencontainers.image.url":           SourceURL,
		"org.opencontainers.image.documentation": SourceURL + "/blob/v" + s.Version + "/docs/install.md",
		"org.opencontainers.image.revision":      s.Revision(),
		"org.opencontainers.image.version":       s.Version,
		"org.opencontainers.image.licenses":      License,
		"org.opencontainers.image.created":       s.Time.UTC().Format(time.RFC3339),
		"org.opencontainers.image.vendor":        "retentionguard",
	}
}

// ImageSpec is the manager's image: the retention-guard binary as
// entrypoint (the chart passes `manager ...` as arguments), the non-root
// user 65532, the CA bundle, no shell, nothing to write outside volumes.
func ImageSpec(s Source, platforms []v1.Platform) imagebuild.Spec {
	return imagebuild.Spec{
		Dir: s.Root,
		Binaries: []imagebuild.Binary{{
			GoBinary: imagebuild.GoBinary{Package: ".", LDFlags: s.LDFlags()},
			Path:     BinaryPath,
		}},
		Files:       imagebuild.BaseFiles(),
		Platforms:   platforms,
		User:        "65532:65532",
		Entrypoint:  []string{BinaryPath},
		Env:         []string{"PATH=/usr/local/bin", "SSL_CERT_FILE=" + imagebuild.CACertificatesPath},
		WorkingDir:  "/",
		Created:     s.Time,
		Annotations: s.Annotations(),
		SBOM: &imagebuild.SBOMInfo{
			Name: Name, Version: s.Version, License: License,
			Source: SourceURL, Revision: s.Revision(), Creator: "Organization: retentionguard",
		},
	}
}

// Platforms parses platform names such as "linux/amd64".
func Platforms(names []string) ([]v1.Platform, error) {
	var out []v1.Platform
	for _, n := range names {
		p, err := imagebuild.ParsePlatform(n)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}
