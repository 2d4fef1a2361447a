// Package teardown asserts that a real node leaves the machine as it found
// it — no process, mount, network interface, iptables chain or rule,
// cgroup, changed sysctl or file outside its run folder — whether it is
// stopped in order, interrupted (SIGINT, as Ctrl-C or a CI cancel), or
// killed outright (then the next run cleans up before it starts). Each
// test compares snapshots of the machine (cluster.TakeSnapshot, read from
// the kernel and the file system) taken before and after, and first checks
// that the node did change the machine while it ran, so the comparison is
// not vacuous.
//
// Like the rest of the real-node tier it runs only under make test-node
// (Linux, root).
package teardown

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/retentionguard/retention-guard/internal/testenv"
	"github.com/retentionguard/retention-guard/test/node/cluster"
	"github.com/retentionguard/retention-guard/test/node/nodeimages"
)

var (
	images nodeimages.Set
	nodeup string
)

func TestMain(m *testing.M) {
	if os.Getenv("RETENTION_GUARD_NODE_TESTS") != "1" {
		fmt.Fprintln(os.Stderr, "node teardown tests: not run: they bring up real nodes on this machine — run them with make test-node")
		os.Exit(0)
	}
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		fmt.Fprintf(os.Stderr, "node teardown tests: need Linux and root (this is %s, uid %d)\n", runtime.GOOS, os.Geteuid())
		os.Exit(1)
	}
	ctrllog.SetLogger(logr.Discard())
	dir, err := os.MkdirTemp("", "retention-guard-nodetier-teardown-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		if images, err = nodeimages.Build(ctx, dir, nodeimages.Pause); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		nodeup = filepath.Join(dir, "nodeup")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", nodeup, "./test/node/nodeup")
		cmd.Dir = testenv.RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build ./test/node/nodeup: %v\n%s", err, out)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

func snapshot(t *testing.T) *cluster.Snapshot {
	t.Helper()
	s, err := cluster.TakeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// kubectl runs kubectl against a node as its admin.
func kubectl(ctx context.Context, assets, kubeconfig string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(assets, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// workload gives the node everything that leaves traces: pods (veths,
// sandboxes, overlay and tmpfs mounts, cgroups), a Service (kube-proxy's
// chains) and a hostPort (the portmap plugin's chains), and waits until
// they run.
func workload(t *testing.T, assets, kubeconfig string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	manifest := fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
        - name: web
          image: %[1]s
          ports: [{containerPort: 8080, hostPort: 18080}]
          volumeMounts: [{name: scratch, mountPath: /scratch}]
      volumes: [{name: scratch, emptyDir: {medium: Memory}}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`, cluster.PauseImage)
	f := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(f, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := kubectl(ctx, assets, kubeconfig, "apply", "-f", f); err != nil {
		t.Fatal(err)
	}
	if _, err := kubectl(ctx, assets, kubeconfig, "rollout", "status", "deployment/web", "--namespace=default", "--timeout=90s"); err != nil {
		t.Fatal(err)
	}
}

// changed asserts the node did change the machine (its bridge, kube-proxy's
// chains, its pods' mounts): a comparison after teardown means something.
func changed(t *testing.T, before *cluster.Snapshot) {
	t.Helper()
	diff := strings.Join(snapshot(t).Leftovers(before), "\n")
	for _, want := range []string{"network interface left behind: rgnode0", "iptables chain left behind: iptables nat KUBE-SERVICES",
		"iptables chain left behind: iptables nat CNI-HOSTPORT-DNAT", "mount left behind: ", "process left behind: "} {
		if !strings.Contains(diff, want) {
			t.Errorf("while the node runs, the machine should show %q; it differs by:\n%s", want, diff)
		}
	}
}

func clean(t *testing.T, before *cluster.Snapshot, how string) {
	t.Helper()
	if left := snapshot(t).Leftovers(before); len(left) > 0 {
		t.Errorf("after %s the machine differs from before the node:\n  %s", how, strings.Join(left, "\n  "))
	}
}

// Stopped in order (what every successful or failed test run does).
func TestStopLeavesTheMachineAsItWas(t *testing.T) {
	before := snapshot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Options{Log: testWriter{t}, Images: images.Archives()})
	if err != nil {
		t.Fatal(err)
	}
	workload(t, c.Assets, c.Kubeconfig)
	changed(t, before)
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	clean(t, before, "Stop")
}

// nodeupProcess runs test/node/nodeup until it prints "node ready".
type nodeupProcess struct {
	cmd        *exec.Cmd
	kubeconfig string
	assets     string
	lines      chan string
	log        *strings.Builder
}

func startNodeup(t *testing.T) *nodeupProcess {
	t.Helper()
	args := []string{}
	for _, a := range images.Archives() {
		args = append(args, "--image", a)
	}
	n := &nodeupProcess{cmd: exec.Command(nodeup, args...), lines: make(chan string, 100), log: &strings.Builder{}}
	n.cmd.Stderr = testWriter{t}
	// Its own process group: a signal to it is not a signal to the test.
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := n.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			n.lines <- sc.Text()
		}
		close(n.lines)
	}()
	deadline := time.After(5 * time.Minute)
	for {
		select {
		case l, ok := <-n.lines:
			if !ok {
				t.Fatalf("nodeup exited before the node was ready: %v", n.cmd.Wait())
			}
			n.log.WriteString(l + "\n")
			if v, ok := strings.CutPrefix(l, "export KUBECONFIG="); ok {
				n.kubeconfig = v
			}
			if v, ok := strings.CutPrefix(l, "kubectl: "); ok {
				n.assets = filepath.Dir(v)
				return n
			}
		case <-deadline:
			_ = n.cmd.Process.Kill()
			t.Fatalf("nodeup printed no kubeconfig within 5 minutes:\n%s", n.log)
		}
	}
}

// wait waits for nodeup to exit and returns the rest of its stdout.
func (n *nodeupProcess) wait(t *testing.T) (string, error) {
	t.Helper()
	for l := range n.lines {
		n.log.WriteString(l + "\n")
	}
	return n.log.String(), n.cmd.Wait()
}

// Interrupted: SIGINT (Ctrl-C, a CI job cancelled) tears everything down.
func TestInterruptTearsDown(t *testing.T) {
	before := snapshot(t)
	n := startNodeup(t)
	workload(t, n.assets, n.kubeconfig)
	changed(t, before)
	if err := n.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	out, err := n.wait(t)
	if err != nil || !strings.Contains(out, "node torn down") {
		t.Fatalf("nodeup after SIGINT: %v\n%s", err, out)
	}
	clean(t, before, "SIGINT")
}

// Killed outright (go test's -timeout, an OOM kill): nothing can run then;
// the components die with it (their parent-death signal) but containers,
// mounts and rules stay. The next run finds the state file and cleans up
// before it starts, and its own teardown then leaves the machine clean.
func TestKilledRunIsCleanedByTheNextOne(t *testing.T) {
	before := snapshot(t)
	n := startNodeup(t)
	workload(t, n.assets, n.kubeconfig)
	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = n.wait(t)
	left := snapshot(t).Leftovers(before)
	if len(left) == 0 {
		t.Fatal("a killed run left nothing behind: this test no longer exercises the reaper")
	}
	t.Logf("a killed run leaves %d changes, e.g. %s", len(left), left[0])

	next := startNodeup(t)
	if err := next.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if out, err := next.wait(t); err != nil || !strings.Contains(out, "node torn down") {
		t.Fatalf("the next nodeup: %v\n%s", err, out)
	}
	clean(t, before, "a killed run and the next run's clean-up")
}

// testWriter sends a component's progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
