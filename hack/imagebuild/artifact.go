package imagebuild

import (
	"encoding/json"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// emptyConfig is the OCI 1.1 empty descriptor's content: artifacts carry
// their artifactType in the manifest and "{}" as config.
var emptyConfig = []byte("{}")

// artifact is an OCI 1.1 artifact manifest (an image manifest with
// artifactType, the empty config and one blob) whose subject is another
// manifest: what `oras attach` and `cosign attach sbom` push, and what
// the referrers API lists.
type artifact struct {
	manifest []byte
	blob     v1.Layer
}

var _ partial.CompressedImageCore = (*artifact)(nil)

func (a *artifact) RawConfigFile() ([]byte, error)      { return emptyConfig, nil }
func (a *artifact) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }
func (a *artifact) RawManifest() ([]byte, error)        { return a.manifest, nil }

func (a *artifact) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	if d, err := a.blob.Digest(); err == nil && d == h {
		return a.blob, nil
	}
	cfg := static.NewLayer(emptyConfig, types.OCIEmptyJSON)
	if d, err := cfg.Digest(); err == nil && d == h {
		return cfg, nil
	}
	return nil, fmt.Errorf("artifact has no blob %s", h)
}

// referrer builds an artifact of type mediaType holding data (named
// filename), attached to subject (an index or an image).
func referrer(subject partial.Describable, mediaType, filename string, data []byte, annotations map[string]string) (v1.Image, error) {
	sd, err := partial.Descriptor(subject)
	if err != nil {
		return nil, err
	}
	blob := static.NewLayer(data, types.MediaType(mediaType))
	bd, err := partial.Descriptor(blob)
	if err != nil {
		return nil, err
	}
	bd.Annotations = map[string]string{"org.opencontainers.image.title": filename}
	cd, err := partial.Descriptor(static.NewLayer(emptyConfig, types.OCIEmptyJSON))
	if err != nil {
		return nil, err
	}
	cd.Data = emptyConfig
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  mediaType,
		Config:        *cd,
		Layers:        []v1.Descriptor{*bd},
		Annotations:   annotations,
		Subject:       &v1.Descriptor{MediaType: sd.MediaType, Size: sd.Size, Digest: sd.Digest},
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return partial.CompressedToImage(&artifact{manifest: raw, blob: blob})
}
