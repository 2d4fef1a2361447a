package certs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	defaultSyncInterval = time.Minute
	// firstSyncInterval is the poll period until the first certificate
	// appears: readiness waits on it.
	firstSyncInterval = time.Second
)

// secretSyncer copies the serving certificate from the rotator's Secret to
// the webhook server's certificate directory, so a replica is ready within
// seconds of the Secret being filled (a Secret volume would wait for the
// kubelet's sync, up to a minute or more) and picks up rotations.
type secretSyncer struct {
	reader   client.Reader
	key      types.NamespacedName
	dir      string
	interval time.Duration
	log      logr.Logger
}

// NeedLeaderElection: every replica serves the webhook.
func (s *secretSyncer) NeedLeaderElection() bool { return false }

func (s *secretSyncer) Start(ctx context.Context) error {
	period := firstSyncInterval
	if s.interval < period {
		period = s.interval
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		wrote, present, err := s.sync(ctx)
		if err != nil {
			s.log.Error(err, "copying the serving certificate to the webhook's certificate directory", "secret", s.key, "dir", s.dir)
		} else if wrote {
			s.log.Info("serving certificate written", "secret", s.key, "dir", s.dir)
		}
		if present {
			period = s.interval
		}
		t.Reset(period)
	}
}

// sync writes the Secret's certificate and key when they differ from the
// files. It reports whether it wrote, and whether the files now hold the
// Secret's pair. An empty Secret is not an error: the rotator has not
// filled it yet.
func (s *secretSyncer) sync(ctx context.Context) (wrote, present bool, err error) {
	var secret corev1.Secret
	if err := s.reader.Get(ctx, s.key, &secret); err != nil {
		return false, false, err
	}
	cert, key := secret.Data[CertFile], secret.Data[KeyFile]
	if len(cert) == 0 || len(key) == 0 {
		return false, false, nil
	}
	wrote, err = writePair(s.dir, cert, key)
	return wrote, err == nil, err
}

// writePair writes tls.crt and tls.key into dir when they differ, each
// through a temporary file and a rename, so a reader never sees a torn
// file. The key is written first: controller-runtime's certificate watcher
// reloads on either file and keeps the old pair while they do not match.
func writePair(dir string, cert, key []byte) (bool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, err
	}
	oldCert, _ := os.ReadFile(filepath.Join(dir, CertFile))
	oldKey, _ := os.ReadFile(filepath.Join(dir, KeyFile))
	if bytes.Equal(oldCert, cert) && bytes.Equal(oldKey, key) {
		return false, nil
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{KeyFile, key}, {CertFile, cert}} {
		if err := writeAtomic(filepath.Join(dir, f.name), f.data); err != nil {
			return false, err
		}
	}
	return true, nil
}

func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}

// fileWaiter closes ready once tls.crt and tls.key exist in dir: with
// rotation off the files come from a mounted Secret (cert-manager).
type fileWaiter struct {
	dir   string
	ready chan struct{}
	log   logr.Logger
}

func (w *fileWaiter) NeedLeaderElection() bool { return false }

func (w *fileWaiter) Start(ctx context.Context) error {
	t := time.NewTicker(firstSyncInterval / 2)
	defer t.Stop()
	for {
		if filesPresent(w.dir) {
			w.log.Info("serving certificate present", "dir", w.dir)
			close(w.ready)
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func filesPresent(dir string) bool {
	for _, f := range []string{CertFile, KeyFile} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			return false
		}
	}
	return true
}
