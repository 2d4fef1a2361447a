package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// process is one component of the node (etcd, kube-apiserver, kubelet,
// containerd, ...), its stdout and stderr appended to <run>/logs/<name>.log,
// so a restarted component keeps one log.
type process struct {
	name    string
	bin     string
	args    []string
	env     []string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
}

func newProcess(logDir, name, bin string, args ...string) *process {
	return &process{name: name, bin: bin, args: args, logPath: filepath.Join(logDir, name+".log")}
}

// start starts the process (again).
func (p *process) start() error {
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "=== %s: %s %s\n", time.Now().Format(time.RFC3339Nano), p.bin, strings.Join(p.args, " "))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	cmd.Stdout, cmd.Stderr = f, f
	// Its own process group (a Ctrl-C in the terminal reaches the harness,
	// which stops the components in order), and killed if the harness dies
	// without stopping it; the next run's reaper cleans what that leaves.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	p.cmd, p.done, p.err = cmd, make(chan struct{}), nil
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return nil
}

func (p *process) running() bool {
	if p == nil || p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and waits up to grace, then SIGKILL.
func (p *process) stop(grace time.Duration) error {
	if !p.running() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not exit within %s of SIGTERM: killed", p.name, grace)
	}
}

// exited reports an error when the process has exited (it should not).
func (p *process) exited() error {
	if p == nil || p.done == nil {
		return fmt.Errorf("%s was not started", p.name)
	}
	select {
	case <-p.done:
		return fmt.Errorf("%s exited (%v); log %s:\n%s", p.name, p.err, p.logPath, tailFile(p.logPath, 3000))
	default:
		return nil
	}
}

// tailFile is the end of a log, for error messages.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// poll calls f every interval until it returns nil, ctx ends or timeout
// passes; the error names what was awaited and f's last error.
func poll(ctx context.Context, what string, timeout, interval time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not after %s: %w", what, timeout, err)
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("%s: %w", what, ctx.Err()), err)
		case <-time.After(interval):
		}
	}
}

// run runs a command to completion and returns its combined output.
func run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}
