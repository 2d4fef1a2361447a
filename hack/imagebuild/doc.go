// Package imagebuild builds OCI images of Go programs without a container
// engine, reproducibly: the same source, flags and timestamp give the same
// digests on any machine.
//
// An image is a multi-platform index whose images hold two layers: files
// shared by every platform (a CA certificate bundle, /etc/passwd and
// /etc/group naming the non-root user, /tmp) and the statically linked Go
// binaries of that platform. Every tar entry has a fixed owner, mode and
// timestamp and entries are sorted; binaries are built with -trimpath,
// without VCS stamping and with CGO off. An SPDX SBOM built from the
// binaries' module lists can be attached to the index as an OCI referrer.
//
// The result is written as an OCI image layout (WriteLayout), pushed to a
// registry with its SBOM referrer (Push), written as an OCI archive that
// `ctr -n k8s.io images import` takes with its digests unchanged
// (WriteOCIArchive, all platforms or one: PlatformIndex), or as a
// docker-archive for `docker load` (WriteDockerArchive).
//
// It is used by `make image` (hack/image), `make dist` (hack/dist), the
// release rehearsal (test/release) and the real-node tier's own images.
package imagebuild
