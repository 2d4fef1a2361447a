package imagebuild

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"
)

// File is a regular file of the image.
type File struct {
	// Path is absolute in the image, e.g. /etc/ssl/certs/ca-certificates.crt.
	Path string
	// Mode is the permission bits, e.g. 0o644, or 0o755 for a program;
	// fs.ModeSticky may be added on a directory.
	Mode fs.FileMode
	// Data is the content; Dir marks a directory (Data unused).
	Data []byte
	Dir  bool
	// UID and GID own the entry; zero (root) unless set.
	UID, GID int
}

// deterministicTar writes files as a tar stream: entries sorted by path,
// each parent directory present (0755), every entry owned by root (uid and
// gid 0: the non-root user may read, never write, the image's files) unless
// the File says otherwise, with modification time t, no user or group names, and no extended attributes.
func deterministicTar(files []File, t time.Time) ([]byte, error) {
	entries := map[string]File{}
	for _, f := range files {
		p := path.Clean("/" + f.Path)
		if p == "/" {
			continue
		}
		if prev, dup := entries[p]; dup && !(prev.Dir && f.Dir) {
			return nil, fmt.Errorf("%s is given twice", p)
		}
		f.Path = p
		entries[p] = f
		for d := path.Dir(p); d != "/"; d = path.Dir(d) {
			if e, ok := entries[d]; ok && !e.Dir {
				return nil, fmt.Errorf("%s is a file and the parent of %s", d, p)
			}
			if _, ok := entries[d]; !ok {
				entries[d] = File{Path: d, Mode: 0o755, Dir: true}
			}
		}
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	t = t.UTC().Truncate(time.Second)
	for _, n := range names {
		f := entries[n]
		h := &tar.Header{
			Name:    strings.TrimPrefix(n, "/"),
			Mode:    int64(f.Mode.Perm()),
			ModTime: t,
			Uid:     f.UID,
			Gid:     f.GID,
			Format:  tar.FormatPAX,
		}
		if f.Mode&fs.ModeSticky != 0 {
			h.Mode |= 0o1000
		}
		if f.Dir {
			h.Typeflag = tar.TypeDir
			h.Name += "/"
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("tar header of %s: %w", n, err)
		}
		if !f.Dir {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
