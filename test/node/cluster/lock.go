package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// A node uses fixed ports (etcd 2379/2380, the API server 6443, the kubelet
// 10250/10248, the controller-manager 10257, the scheduler 10259,
// kube-proxy 10249/10256), one bridge and the machine's iptables: one node
// per machine. The lock file serializes runs (two worktrees, two CI jobs);
// the state file beside it records the run in progress, so that the next
// run cleans what a crashed one left behind (a test binary killed by
// go test's -timeout cannot run its teardown).
func lockPath() string  { return filepath.Join(os.TempDir(), "retention-guard-node.lock") }
func statePath() string { return filepath.Join(os.TempDir(), "retention-guard-node.state.json") }

// state is what a run records before it changes anything.
type state struct {
	RunDir  string    `json:"runDir"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	Before  *Snapshot `json:"before"`
}

// lock takes the machine-wide node lock, waiting for a run in progress
// (up to ctx's deadline). Closing the returned file releases it.
func lock(ctx context.Context, logf func(string, ...any)) (*os.File, error) {
	f, err := os.OpenFile(lockPath(), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	waited := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", lockPath(), err)
		}
		if !waited {
			holder := "another run"
			if st, err := readState(); err == nil && st != nil {
				holder = fmt.Sprintf("the run of pid %d started %s (folder %s)", st.PID, st.Started.Format(time.RFC3339), st.RunDir)
			}
			logf("a node runs on this machine already (%s); waiting for it to finish: one node per machine (fixed ports)", holder)
			waited = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for the node lock %s: %w", lockPath(), ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

func readState() (*state, error) {
	b, err := os.ReadFile(statePath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", statePath(), err)
	}
	return &st, nil
}

func writeState(st *state) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := statePath() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, statePath())
}

func removeState() error {
	err := os.Remove(statePath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// reap cleans what a run that did not tear down left behind (called with
// the lock held).
func reap(ctx context.Context, logf func(string, ...any)) error {
	st, err := readState()
	if err != nil || st == nil {
		return err
	}
	logf("the node run of pid %d (started %s, folder %s) did not tear down: cleaning what it left", st.PID, st.Started.Format(time.RFC3339), st.RunDir)
	if st.Before == nil {
		return fmt.Errorf("%s has no snapshot of the machine before that run: clean by hand, then delete it", statePath())
	}
	if err := sweep(ctx, st.RunDir, st.Before, logf); err != nil {
		return fmt.Errorf("cleaning after the run in %s: %w", st.RunDir, err)
	}
	return removeState()
}
