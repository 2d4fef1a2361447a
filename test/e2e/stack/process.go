package stack

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is a child process of the stack (the broker, the manager), its
// output written to a log file under the stack's directory.
type Process struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	err     error
}

// startProcess starts bin with args; its stdout and stderr go to
// dir/<name>.log (appended: a restarted process keeps one log). When
// readyLine is not empty, it waits until a stdout line contains it.
func startProcess(ctx context.Context, dir, name, bin string, args []string, env []string, readyLine string, timeout time.Duration) (*Process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(logFile, "=== %s: %s %s\n", time.Now().Format(time.RFC3339Nano), bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	var ready chan struct{}
	if readyLine != "" {
		out, err := cmd.StdoutPipe()
		if err != nil {
			logFile.Close()
			return nil, err
		}
		ready = make(chan struct{})
		go func() {
			var once sync.Once
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				fmt.Fprintln(logFile, sc.Text())
				if strings.Contains(sc.Text(), readyLine) {
					once.Do(func() { close(ready) })
				}
			}
			_, _ = io.Copy(logFile, out)
		}()
	} else {
		cmd.Stdout = logFile
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	if ready == nil {
		return p, nil
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-ready:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("%s exited before it was ready (%v); log: %s\n%s", name, p.err, logPath, tail(logPath))
	case <-t.C:
		p.Kill()
		return nil, fmt.Errorf("%s printed no %q within %s; log: %s\n%s", name, readyLine, timeout, logPath, tail(logPath))
	case <-ctx.Done():
		p.Kill()
		return nil, ctx.Err()
	}
}

// PID is the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM and waits for the exit (SIGKILL after grace).
func (p *Process) Stop(grace time.Duration) error {
	if p == nil || p.Exited() {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		p.Kill()
		return fmt.Errorf("%s did not exit within %s of SIGTERM: killed", p.Name, grace)
	}
}

// Kill sends SIGKILL and waits for the exit.
func (p *Process) Kill() {
	if p == nil || p.Exited() {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Tail is the end of the process's log, for failure messages.
func (p *Process) Tail() string { return tail(p.LogPath) }

func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	const n = 4000
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitTCP waits until addr accepts connections.
func waitTCP(ctx context.Context, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s accepts no connections after %s: %w", addr, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Binaries built ahead (`make build-e2e` sets these): the stack then runs
// them as they are instead of building its own.
const (
	EnvManagerBinary = "RETENTION_GUARD_BIN"
	EnvBrokerBinary  = "KAFKA_BROKER_BIN"
)

// Build compiles the retention-guard binary and the kafka-broker program
// into dir, and returns their paths; binaries named by EnvManagerBinary
// and EnvBrokerBinary are used as they are. The build is not bound by ctx's
// deadline (a first build of the manager on a cold cache takes minutes on 2
// cores; that is not the stack failing to start), only by its cancellation,
// and it uses the same build settings as `go test` so it reuses its cache.
func Build(ctx context.Context, root, dir string, log io.Writer) (manager, broker string, err error) {
	return build(ctx, root, dir, log, true)
}

// BuildManager is Build without the broker, for a stack on a Kafka cluster
// it does not start.
func BuildManager(ctx context.Context, root, dir string, log io.Writer) (string, error) {
	manager, _, err := build(ctx, root, dir, log, false)
	return manager, err
}

func build(ctx context.Context, root, dir string, log io.Writer, withBroker bool) (manager, broker string, err error) {
	manager = filepath.Join(dir, "retention-guard")
	broker = filepath.Join(dir, "kafka-broker")
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	defer context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.Canceled) {
			cancel() // Ctrl-C, not a deadline
		}
	})()
	for _, b := range []struct {
		out *string
		pkg string
		env string
	}{{&manager, ".", EnvManagerBinary}, {&broker, "./test/kafka-broker", EnvBrokerBinary}} {
		if b.out == &broker && !withBroker {
			broker = ""
			continue
		}
		if prebuilt := os.Getenv(b.env); prebuilt != "" {
			if _, err := os.Stat(prebuilt); err != nil {
				return "", "", fmt.Errorf("%s=%s: %w (run make build-e2e, or unset it to build here)", b.env, prebuilt, err)
			}
			*b.out = prebuilt
			fmt.Fprintf(log, "using %s from %s\n", filepath.Base(prebuilt), b.env)
			continue
		}
		start := time.Now()
		cmd := exec.CommandContext(bctx, "go", "build", "-o", *b.out, b.pkg)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", "", fmt.Errorf("go build %s: %w\n%s", b.pkg, err, out)
		}
		fmt.Fprintf(log, "built %s in %s\n", filepath.Base(*b.out), time.Since(start).Round(100*time.Millisecond))
	}
	return manager, broker, nil
}
