package imagebuild

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
	"time"
)

// SPDXMediaType is the media type (and OCI artifactType) of an SPDX JSON
// document.
const SPDXMediaType = "application/spdx+json"

// SBOMInfo describes the software the SBOM is about.
type SBOMInfo struct {
	// Name and Version of the image's software, e.g. retention-guard 0.1.0.
	Name, Version string
	// License is the SPDX license expression of the project's own code,
	// e.g. Apache-2.0.
	License string
	// Source is the repository URL and Revision the commit it was built
	// from.
	Source, Revision string
	// Creator names who made the document, e.g. "Organization: retentionguard".
	Creator string
}

// SPDX 2.3 JSON (https://spdx.github.io/spdx-spec/v2.3/), the fields used.
type spdxDoc struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	SPDXID                string            `json:"SPDXID"`
	Name                  string            `json:"name"`
	VersionInfo           string            `json:"versionInfo,omitempty"`
	Supplier              string            `json:"supplier,omitempty"`
	DownloadLocation      string            `json:"downloadLocation"`
	FilesAnalyzed         bool              `json:"filesAnalyzed"`
	Checksums             []spdxChecksum    `json:"checksums,omitempty"`
	LicenseConcluded      string            `json:"licenseConcluded"`
	LicenseDeclared       string            `json:"licenseDeclared"`
	CopyrightText         string            `json:"copyrightText"`
	PrimaryPackagePurpose string            `json:"primaryPackagePurpose,omitempty"`
	ExternalRefs          []spdxExternalRef `json:"externalRefs,omitempty"`
	Comment               string            `json:"comment,omitempty"`
}

type spdxChecksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

type spdxExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

const noAssertion = "NOASSERTION"

var spdxIDUnsafe = regexp.MustCompile(`[^a-zA-Z0-9.-]+`)

// spdxDocument describes the image index: its binaries (one per platform,
// with their SHA-256), the main module, the Go standard library and every
// module linked into a binary (from the binary's own build info, as `go
// version -m` prints it), each with a Package URL scanners match
// vulnerabilities by.
func spdxDocument(info SBOMInfo, r *Result, created time.Time) ([]byte, error) {
	digest, err := r.Index.Digest()
	if err != nil {
		return nil, err
	}
	license := info.License
	if license == "" {
		license = noAssertion
	}
	download := noAssertion
	if info.Source != "" {
		download = "git+" + info.Source
		if info.Revision != "" {
			download += "@" + info.Revision
		}
	}
	doc := spdxDoc{
		SPDXVersion:       "SPDX-2.3",
		DataLicense:       "CC0-1.0",
		SPDXID:            "SPDXRef-DOCUMENT",
		Name:              info.Name + "-" + info.Version,
		DocumentNamespace: fmt.Sprintf("%s/spdx/%s-%s-%s", strings.TrimSuffix(info.Source, "/"), info.Name, info.Version, digest.Hex),
		CreationInfo: spdxCreationInfo{
			Created:  created.UTC().Format(time.RFC3339),
			Creators: []string{"Tool: imagebuild (retention-guard hack/imagebuild)"},
		},
	}
	if info.Creator != "" {
		doc.CreationInfo.Creators = append(doc.CreationInfo.Creators, info.Creator)
	}
	image := spdxPackage{
		SPDXID: "SPDXRef-Image", Name: info.Name, VersionInfo: info.Version,
		DownloadLocation: noAssertion, LicenseConcluded: noAssertion, LicenseDeclared: license, CopyrightText: noAssertion,
		PrimaryPackagePurpose: "CONTAINER",
		Checksums:             []spdxChecksum{{Algorithm: "SHA256", ChecksumValue: digest.Hex}},
		ExternalRefs: []spdxExternalRef{{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl",
			ReferenceLocator: fmt.Sprintf("pkg:oci/%s@sha256%%3A%s", info.Name, digest.Hex)}},
		Comment: "the multi-platform OCI image index",
	}
	doc.Packages = append(doc.Packages, image)
	doc.Relationships = append(doc.Relationships, spdxRelationship{"SPDXRef-DOCUMENT", "DESCRIBES", "SPDXRef-Image"})

	// Modules are packages shared by the binaries that link them.
	modules := map[string]spdxPackage{}
	moduleID := func(path, version string) string {
		key := path + "@" + version
		if p, ok := modules[key]; ok {
			return p.SPDXID
		}
		p := spdxPackage{
			SPDXID: "SPDXRef-Go-" + strings.Trim(spdxIDUnsafe.ReplaceAllString(key, "-"), "-"),
			Name:   path, VersionInfo: version, DownloadLocation: noAssertion,
			LicenseConcluded: noAssertion, LicenseDeclared: noAssertion, CopyrightText: noAssertion,
			PrimaryPackagePurpose: "LIBRARY",
			ExternalRefs: []spdxExternalRef{{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl",
				ReferenceLocator: "pkg:golang/" + path + "@" + version}},
		}
		modules[key] = p
		return p.SPDXID
	}
	var rels []spdxRelationship
	for _, pi := range r.Images {
		for _, b := range pi.Binaries {
			sum, err := fileSHA256(b.Path)
			if err != nil {
				return nil, err
			}
			id := "SPDXRef-Binary-" + spdxIDUnsafe.ReplaceAllString(b.Info.Path+"-"+pi.Platform.OS+"-"+pi.Platform.Architecture, "-")
			doc.Packages = append(doc.Packages, spdxPackage{
				SPDXID: id, Name: b.Info.Path, VersionInfo: info.Version, DownloadLocation: download,
				LicenseConcluded: noAssertion, LicenseDeclared: license, CopyrightText: noAssertion,
				PrimaryPackagePurpose: "APPLICATION",
				Checksums:             []spdxChecksum{{Algorithm: "SHA256", ChecksumValue: sum}},
				Comment:               fmt.Sprintf("%s binary for %s, built with %s", b.Info.Path, pi.Platform.String(), b.Info.GoVersion),
			})
			rels = append(rels, spdxRelationship{"SPDXRef-Image", "CONTAINS", id})
			main := b.Info.Main
			mainVersion := info.Version
			if main.Version != "" && main.Version != "(devel)" {
				mainVersion = main.Version
			}
			mid := moduleID(main.Path, mainVersion)
			modules[main.Path+"@"+mainVersion] = withLicense(modules[main.Path+"@"+mainVersion], license, download)
			rels = append(rels, spdxRelationship{id, "GENERATED_FROM", mid})
			rels = append(rels, spdxRelationship{id, "DEPENDS_ON", stdlibID(modules, b.Info)})
			for _, d := range b.Info.Deps {
				m := effective(d)
				rels = append(rels, spdxRelationship{id, "DEPENDS_ON", moduleID(m.Path, m.Version)})
			}
		}
	}
	keys := make([]string, 0, len(modules))
	for k := range modules {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		doc.Packages = append(doc.Packages, modules[k])
	}
	sort.SliceStable(rels, func(i, j int) bool {
		if rels[i].Element != rels[j].Element {
			return rels[i].Element < rels[j].Element
		}
		if rels[i].Type != rels[j].Type {
			return rels[i].Type < rels[j].Type
		}
		return rels[i].Related < rels[j].Related
	})
	doc.Relationships = append(doc.Relationships, rels...)
	return json.MarshalIndent(doc, "", "  ")
}

func withLicense(p spdxPackage, license, download string) spdxPackage {
	p.LicenseDeclared, p.DownloadLocation, p.PrimaryPackagePurpose = license, download, "SOURCE"
	return p
}

// stdlibID adds the Go standard library the binary was built with, as
// vulnerability scanners expect it (pkg:golang/stdlib@1.26.8).
func stdlibID(modules map[string]spdxPackage, info *debug.BuildInfo) string {
	v := strings.TrimPrefix(info.GoVersion, "go")
	key := "stdlib@" + v
	if p, ok := modules[key]; ok {
		return p.SPDXID
	}
	p := spdxPackage{
		SPDXID: "SPDXRef-Go-stdlib-" + spdxIDUnsafe.ReplaceAllString(v, "-"), Name: "stdlib", VersionInfo: info.GoVersion,
		DownloadLocation: "https://go.dev/dl/", LicenseConcluded: noAssertion, LicenseDeclared: "BSD-3-Clause", CopyrightText: noAssertion,
		PrimaryPackagePurpose: "LIBRARY",
		ExternalRefs: []spdxExternalRef{{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl",
			ReferenceLocator: "pkg:golang/stdlib@" + v}},
	}
	modules[key] = p
	return p.SPDXID
}

// effective is the module really linked: its replacement when replaced.
func effective(m *debug.Module) *debug.Module {
	if m.Replace != nil {
		return m.Replace
	}
	return m
}

func fileSHA256(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}
