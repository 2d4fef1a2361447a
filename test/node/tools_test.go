package node

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
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/retentionguard/retention-guard/internal/testenv"
)

// toolset are the programs the tier runs besides the node: the Helm CLI
// (pinned in go.mod's tool directive), the Kafka broker program, the
// retention-guard CLI a platform team runs from its laptop (scan), and
// Argo Rollouts' controller with its CRDs (hack/build-argo-rollouts.sh).
type toolset struct {
	dir          string // scratch folder for the run (tools, images, broker data)
	helm         string
	broker       string
	cli          string
	argoRollouts string // folder: rollouts-controller and crds/
}

// Prebuilt binaries (make test-node builds them once, with go test's build
// settings so its cache serves): used as they are when set.
const (
	envHelm         = "HELM_BIN"
	envBroker       = "KAFKA_BROKER_BIN"
	envCLI          = "RETENTION_GUARD_BIN"
	envArgoRollouts = "ARGO_ROLLOUTS_DIR"
)

func buildTools(ctx context.Context) (toolset, error) {
	dir, err := os.MkdirTemp("", "retention-guard-nodetier-")
	if err != nil {
		return toolset{}, err
	}
	t := toolset{dir: dir}
	for _, b := range []struct {
		out      *string
		env, pkg string
		name     string
	}{
		{&t.helm, envHelm, "helm.sh/helm/v4/cmd/helm", "helm"},
		{&t.broker, envBroker, "./test/kafka-broker", "kafka-broker"},
		{&t.cli, envCLI, ".", "retention-guard"},
	} {
		if p := os.Getenv(b.env); p != "" {
			if _, err := os.Stat(p); err != nil {
				return t, fmt.Errorf("%s=%s: %w", b.env, p, err)
			}
			*b.out = p
			continue
		}
		*b.out = filepath.Join(dir, b.name)
		start := time.Now()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", *b.out, b.pkg)
		cmd.Dir = testenv.RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			return t, fmt.Errorf("go build %s: %w\n%s", b.pkg, err, out)
		}
		fmt.Fprintf(os.Stderr, "node tier: built %s in %s\n", filepath.Base(*b.out), time.Since(start).Round(100*time.Millisecond))
	}
	if t.argoRollouts = os.Getenv(envArgoRollouts); t.argoRollouts == "" {
		cmd := exec.CommandContext(ctx, filepath.Join(testenv.RepoRoot(), "hack", "build-argo-rollouts.sh"))
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return t, fmt.Errorf("hack/build-argo-rollouts.sh: %w", err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		t.argoRollouts = lines[len(lines)-1]
	}
	if _, err := os.Stat(filepath.Join(t.argoRollouts, "rollouts-controller")); err != nil {
		return t, fmt.Errorf("%s=%s: %w", envArgoRollouts, t.argoRollouts, err)
	}
	return t, nil
}

// broker is test/kafka-broker (franz-go's kfake) running on the machine's
// address: pods reach it there, and the tests drive it as a team's tools
// would (stack.Kafka).
type broker struct {
	addr    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{}
}

// brokerConfigs: group offsets are checked for expiry every 200ms and
// expire after a day unless a scenario shortens offset.retention.ms
// (kfake's test knob; the broker keeps reporting the default
// offsets.retention.minutes=10080, which is what the proof reads).
var brokerConfigs = []string{
	"offset.retention.ms=86400000",
	"offsets.retention.check.interval.ms=200",
	"group.initial.rebalance.delay.ms=0",
}

func startBroker(ctx context.Context, t toolset, hostIP string) (*broker, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(hostIP, "0"))
	if err != nil {
		return nil, fmt.Errorf("finding a free port on %s: %w", hostIP, err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	b := &broker{addr: net.JoinHostPort(hostIP, strconv.Itoa(port)), logPath: filepath.Join(t.dir, "kafka-broker.log"), done: make(chan struct{})}
	args := []string{"--listen", b.addr, "--data-dir", filepath.Join(t.dir, "kafka-data")}
	for _, c := range brokerConfigs {
		args = append(args, "--broker-config", c)
	}
	logf, err := os.Create(b.logPath)
	if err != nil {
		return nil, err
	}
	b.cmd = exec.Command(t.broker, args...)
	b.cmd.Stderr = logf
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := b.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := b.cmd.Start(); err != nil {
		return nil, err
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			fmt.Fprintln(logf, sc.Text())
			if strings.HasPrefix(sc.Text(), "listening on") {
				close(ready)
			}
		}
		_, _ = io.Copy(logf, out)
	}()
	go func() { _ = b.cmd.Wait(); logf.Close(); close(b.done) }()
	select {
	case <-ready:
		return b, nil
	case <-b.done:
		return nil, fmt.Errorf("the Kafka broker exited: %s", b.tail())
	case <-time.After(30 * time.Second):
		b.stop()
		return nil, errors.New("the Kafka broker did not start within 30s: " + b.tail())
	case <-ctx.Done():
		b.stop()
		return nil, ctx.Err()
	}
}

func (b *broker) stop() {
	if b == nil || b.cmd == nil || b.cmd.Process == nil {
		return
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(15 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.done
	}
}

func (b *broker) tail() string {
	data, _ := os.ReadFile(b.logPath)
	if len(data) > 3000 {
		data = data[len(data)-3000:]
	}
	return string(data)
}
