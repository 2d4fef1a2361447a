package imagebuild

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"io/fs"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// NonRoot is the user and group images run as: distroless' "nonroot",
// which Kubernetes' restricted pod security profile and most charts expect.
const NonRoot = 65532

// CACertificatesPath is where Go (and OpenSSL on Debian) looks for the
// system's trusted roots on Linux.
const CACertificatesPath = "/etc/ssl/certs/ca-certificates.crt"

// CACertificates is Mozilla's root store as a PEM bundle, from the pinned
// Go module golang.org/x/crypto/x509roots/fallback: the bundle, and so the
// image digest, depends on go.mod, never on the build machine's
// /etc/ssl. Roots that carry a constraint a PEM file cannot express (NSS's
// distrust-after dates) are left out, as trusting them without it would
// trust what Mozilla distrusts. It returns the bundle and the number of
// roots it holds.
func CACertificates() ([]byte, int) {
	var buf bytes.Buffer
	n := 0
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate})
		n++
	}
	return buf.Bytes(), n
}

// BaseFiles are the files every image gets: the CA bundle, /etc/passwd and
// /etc/group naming the non-root user (programs and tools that look a user
// up by ID find it), its home directory, and /tmp (sticky, world-writable,
// for a volume to be mounted on when the root filesystem is read-only).
// No shell and no other program is included.
func BaseFiles() []File {
	ca, _ := CACertificates()
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", NonRoot, NonRoot)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", NonRoot)
	return []File{
		{Path: CACertificatesPath, Mode: 0o644, Data: ca},
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte(passwd)},
		{Path: "/etc/group", Mode: 0o644, Data: []byte(group)},
		{Path: "/home/nonroot", Mode: 0o700, Dir: true, UID: NonRoot, GID: NonRoot},
		{Path: "/tmp", Mode: 0o777 | fs.ModeSticky, Dir: true},
	}
}
