// Package cluster brings up one real single-node Kubernetes cluster on this
// machine — etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
// containerd, the kubelet, kube-proxy and a bridge CNI network — in a
// per-run folder, under a machine-wide lock (fixed ports: one node per
// machine), imports locally built images into containerd (no registry is
// reachable), and tears everything down again: no process, mount, veth,
// iptables chain, cgroup or changed sysctl is left behind, and Stop reports
// anything that was.
//
// The settings that make a node work on these machines (cgroup v1,
// containerd 1.6, no CAP_SYS_RESOURCE, no systemd) are in
// shared/design/REAL-NODE.md; each is commented where it is applied.
//
// It needs Linux and root. The binaries come from hack/build-node.sh
// (kubelet and friends, built from the Go module proxy like kube-apiserver)
// and hack/install-deps.sh node (containerd, runc, the CNI plugins,
// iptables, conntrack).
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/retentionguard/retention-guard/internal/testenv"
)

// EnvAssets names the folder with the Kubernetes binaries (the output of
// hack/build-node.sh). Unset: Start runs hack/build-node.sh itself.
const EnvAssets = "RETENTION_GUARD_NODE_ASSETS"

// Options configure a node.
type Options struct {
	// Log receives progress lines. Nil: discarded.
	Log io.Writer
	// Images are image tarballs (docker-archive or OCI layout, what `ctr
	// images import` reads) imported into containerd's k8s.io namespace
	// before the kubelet starts. One of them must be PauseImage.
	Images []string
	// Lock bounds the wait for another run's node lock. Zero: 30 minutes.
	LockTimeout time.Duration
}

// Cluster is a running node.
type Cluster struct {
	// RunDir holds every file of the run: certificates, kubeconfigs, data,
	// and each component's log under logs/.
	RunDir string
	// NodeIP is the machine's address: the API server, the kubelet and the
	// node's pods use it; pods reach host processes on it.
	NodeIP string
	// Kubeconfig is an admin kubeconfig (system:masters).
	Kubeconfig string
	// Assets is the folder of the Kubernetes binaries (kubectl included).
	Assets string
	Config *rest.Config
	Client client.Client

	l      layout
	log    io.Writer
	lockF  *os.File
	before *Snapshot

	etcd, apiserver, controllerManager, scheduler, containerd, kubelet, kubeProxy *process
}

func (c *Cluster) logf(format string, args ...any) {
	fmt.Fprintf(c.log, "[node] "+format+"\n", args...)
}

// Start brings the node up and waits until it is Ready. On error what was
// started is torn down again.
func Start(ctx context.Context, o Options) (_ *Cluster, err error) {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		return nil, fmt.Errorf("a real node needs Linux and root (this is %s, uid %d)", runtime.GOOS, os.Geteuid())
	}
	c := &Cluster{log: o.Log}
	if c.log == nil {
		c.log = io.Discard
	}
	if c.Assets, err = assets(ctx, c.log); err != nil {
		return nil, err
	}
	if err := checkTools(); err != nil {
		return nil, err
	}
	if c.NodeIP, err = HostIP(); err != nil {
		return nil, err
	}

	lockCtx, cancel := context.WithTimeout(ctx, cmpOr(o.LockTimeout, 30*time.Minute))
	defer cancel()
	if c.lockF, err = lock(lockCtx, c.logf); err != nil {
		return nil, err
	}
	start := time.Now() // bring-up, not the wait for another run
	if err := reap(ctx, c.logf); err != nil {
		c.lockF.Close()
		return nil, err
	}
	if c.before, err = TakeSnapshot(); err != nil {
		c.lockF.Close()
		return nil, fmt.Errorf("reading the machine before the node starts: %w", err)
	}
	if c.RunDir, err = os.MkdirTemp("", RunDirPrefix); err != nil {
		c.lockF.Close()
		return nil, err
	}
	if err := writeState(&state{RunDir: c.RunDir, PID: os.Getpid(), Started: time.Now(), Before: c.before}); err != nil {
		c.lockF.Close()
		return nil, err
	}
	defer func() {
		if err != nil {
			if stopErr := c.Stop(); stopErr != nil {
				err = errors.Join(err, fmt.Errorf("tearing down: %w", stopErr))
			}
		}
	}()
	c.l = newLayout(c.RunDir)
	if err := c.l.mkdirs(); err != nil {
		return c, err
	}
	c.logf("bringing up a node in %s (node IP %s, binaries %s)", c.RunDir, c.NodeIP, c.Assets)
	if err := c.configure(); err != nil {
		return c, err
	}

	// etcd, then the API server; containerd meanwhile.
	if err := c.etcd.start(); err != nil {
		return c, err
	}
	if err := c.containerd.start(); err != nil {
		return c, err
	}
	if err := c.waitEtcd(ctx); err != nil {
		return c, err
	}
	if err := c.apiserver.start(); err != nil {
		return c, err
	}
	if err := c.waitContainerd(ctx); err != nil {
		return c, err
	}
	for _, img := range o.Images {
		if err := c.ImportImage(ctx, img); err != nil {
			return c, err
		}
	}
	if err := c.waitAPIServer(ctx); err != nil {
		return c, err
	}
	c.logf("API server ready at https://%s:%d after %s", c.NodeIP, apiServerPort, time.Since(start).Round(100*time.Millisecond))
	for _, p := range []*process{c.controllerManager, c.scheduler, c.kubelet, c.kubeProxy} {
		if err := p.start(); err != nil {
			return c, err
		}
	}
	if err := c.WaitNodeReady(ctx, 2*time.Minute); err != nil {
		return c, err
	}
	c.logf("node %s Ready after %s", nodeName, time.Since(start).Round(100*time.Millisecond))
	return c, nil
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// assets finds the Kubernetes binaries: $RETENTION_GUARD_NODE_ASSETS, or
// hack/build-node.sh's cache (building what is missing).
func assets(ctx context.Context, log io.Writer) (string, error) {
	dir := os.Getenv(EnvAssets)
	if dir == "" {
		script := filepath.Join(testenv.RepoRoot(), "hack", "build-node.sh")
		cmd := exec.CommandContext(ctx, script)
		cmd.Stderr = log
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("%s: %w", script, err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		dir = lines[len(lines)-1]
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kubectl", "kubelet", "kube-controller-manager", "kube-scheduler", "kube-proxy"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("%s is missing from %s: run hack/build-node.sh (it builds and caches the node's binaries)", b, dir)
		}
	}
	return dir, nil
}

// checkTools fails with the command to run when a Debian package is missing.
func checkTools() error {
	var missing []string
	for _, t := range []string{"containerd", "containerd-shim-runc-v2", "ctr", "runc", "iptables", "ip6tables", "iptables-restore", "conntrack", "ip"} {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t)
		}
	}
	for _, p := range []string{"bridge", "host-local", "portmap", "loopback"} {
		if _, err := os.Stat(filepath.Join("/usr/lib/cni", p)); err != nil {
			missing = append(missing, "CNI plugin "+p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s: run hack/install-deps.sh node", strings.Join(missing, ", "))
	}
	return nil
}

// HostIP is the address the node uses and its pods reach this machine on:
// the IPv4 address of the interface of the default route
// ($RETENTION_GUARD_NODE_IP overrides it). Host processes the pods talk to
// (a Kafka broker) listen on it.
func HostIP() (string, error) {
	if ip := os.Getenv("RETENTION_GUARD_NODE_IP"); ip != "" {
		return ip, nil
	}
	b, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 2 || f[1] != "00000000" {
			continue
		}
		iface, err := net.InterfaceByName(f[0])
		if err != nil {
			return "", err
		}
		addrs, err := iface.Addrs()
		if err != nil {
			return "", err
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
				return ipn.IP.String(), nil
			}
		}
	}
	return "", errors.New("no IPv4 default route: set RETENTION_GUARD_NODE_IP to the address pods can reach this machine on")
}

// configure writes certificates, kubeconfigs and configuration files and
// prepares the component processes.
func (c *Cluster) configure() error {
	l := c.l
	p, err := newPKI(l.pki)
	if err != nil {
		return err
	}
	ip := net.ParseIP(c.NodeIP)
	serving, err := p.serving("apiserver", "kube-apiserver",
		[]string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"},
		[]net.IP{ip, net.ParseIP(apiServiceIP), net.ParseIP("127.0.0.1")})
	if err != nil {
		return err
	}
	server := fmt.Sprintf("https://%s:%d", c.NodeIP, apiServerPort)
	kc := func(name, cn string, orgs ...string) (string, error) {
		cert, err := p.client(name, cn, orgs...)
		if err != nil {
			return "", err
		}
		path := filepath.Join(l.kubeconfigs, name+".kubeconfig")
		return path, writeKubeconfig(path, server, p.CAFile, cert)
	}
	if c.Kubeconfig, err = kc("admin", "retention-guard-node-admin", "system:masters"); err != nil {
		return err
	}
	cmKC, err := kc("controller-manager", "system:kube-controller-manager")
	if err != nil {
		return err
	}
	schedKC, err := kc("scheduler", "system:kube-scheduler")
	if err != nil {
		return err
	}
	proxyKC, err := kc("kube-proxy", "system:kube-proxy")
	if err != nil {
		return err
	}
	// The kubelet's identity for the Node authorizer and NodeRestriction.
	kubeletKC, err := kc("kubelet", "system:node:"+nodeName, "system:nodes")
	if err != nil {
		return err
	}
	kubeletClient, err := p.client("apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters")
	if err != nil {
		return err
	}
	saKey, saPub, err := p.serviceAccountKey()
	if err != nil {
		return err
	}
	if c.Config, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig); err != nil {
		return err
	}
	// An admin does not wait on client-go's default client-side rate limit
	// (5 requests/s): latencies measured through this client are the API
	// server's and the webhook's.
	c.Config.QPS, c.Config.Burst = 500, 1000
	scheme := testenv.Scheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	if c.Client, err = client.New(c.Config, client.Options{Scheme: scheme}); err != nil {
		return err
	}

	if err := os.WriteFile(l.containerdConfig, []byte(containerdConfig(l)), 0o644); err != nil {
		return err
	}
	cni, err := cniConfig(l)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(l.cniConfDir, "10-"+cniNetworkName+".conflist"), cni, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(l.kubeletConfig, []byte(kubeletConfig(l, c.NodeIP)), 0o644); err != nil {
		return err
	}

	bin := func(name string) string { return filepath.Join(c.Assets, name) }
	c.etcd = newProcess(l.logs, "etcd", bin("etcd"),
		"--name=node", "--data-dir="+l.etcdData,
		fmt.Sprintf("--listen-client-urls=http://127.0.0.1:%d", etcdClientPort),
		fmt.Sprintf("--advertise-client-urls=http://127.0.0.1:%d", etcdClientPort),
		fmt.Sprintf("--listen-peer-urls=http://127.0.0.1:%d", etcdPeerPort),
		fmt.Sprintf("--initial-advertise-peer-urls=http://127.0.0.1:%d", etcdPeerPort),
		fmt.Sprintf("--initial-cluster=node=http://127.0.0.1:%d", etcdPeerPort),
		"--unsafe-no-fsync", "--log-level=warn")
	c.apiserver = newProcess(l.logs, "kube-apiserver", bin("kube-apiserver"),
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", etcdClientPort),
		// Where pods reach it: the manager's in-cluster client goes through
		// the kubernetes Service (kube-proxy) to this address.
		"--bind-address="+c.NodeIP, "--advertise-address="+c.NodeIP, fmt.Sprintf("--secure-port=%d", apiServerPort),
		"--cert-dir="+filepath.Join(l.run, "apiserver"),
		"--tls-cert-file="+serving.Cert, "--tls-private-key-file="+serving.Key,
		"--client-ca-file="+p.CAFile,
		"--service-cluster-ip-range="+serviceCIDR,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+saPub, "--service-account-signing-key-file="+saKey,
		"--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
		"--kubelet-client-certificate="+kubeletClient.Cert, "--kubelet-client-key="+kubeletClient.Key,
		"--kubelet-preferred-address-types=InternalIP",
		// Admission webhooks are called on the pod IP behind their Service:
		// no dependency on kube-proxy for the webhook (REAL-NODE.md).
		"--enable-aggregator-routing=true",
		"--allow-privileged=true", "--profiling=false", "--v=1")
	c.controllerManager = newProcess(l.logs, "kube-controller-manager", bin("kube-controller-manager"),
		"--kubeconfig="+cmKC, "--authentication-kubeconfig="+cmKC, "--authorization-kubeconfig="+cmKC,
		"--bind-address=127.0.0.1", "--leader-elect=false",
		"--service-account-private-key-file="+saKey, "--root-ca-file="+p.CAFile,
		"--use-service-account-credentials=true",
		"--cluster-cidr="+clusterCIDR, "--service-cluster-ip-range="+serviceCIDR,
		"--cluster-signing-cert-file="+p.CAFile, "--cluster-signing-key-file="+filepath.Join(l.pki, "ca.key"),
		"--profiling=false", "--v=1")
	c.scheduler = newProcess(l.logs, "kube-scheduler", bin("kube-scheduler"),
		"--kubeconfig="+schedKC, "--authentication-kubeconfig="+schedKC, "--authorization-kubeconfig="+schedKC,
		"--bind-address=127.0.0.1", "--leader-elect=false", "--profiling=false", "--v=1")
	c.containerd = newProcess(l.logs, "containerd", "containerd", "--config", l.containerdConfig)
	c.kubelet = newProcess(l.logs, "kubelet", bin("kubelet"),
		"--config="+l.kubeletConfig, "--kubeconfig="+kubeletKC,
		"--root-dir="+l.kubeletRoot, "--cert-dir="+filepath.Join(l.kubeletRoot, "pki"),
		"--hostname-override="+nodeName, "--node-ip="+c.NodeIP, "--v=1")
	c.kubeProxy = newProcess(l.logs, "kube-proxy", bin("kube-proxy"),
		"--kubeconfig="+proxyKC, "--hostname-override="+nodeName,
		"--proxy-mode=iptables", "--cluster-cidr="+clusterCIDR,
		// 0: leave nf_conntrack_max alone (REAL-NODE.md).
		"--conntrack-max-per-core=0",
		"--metrics-bind-address=127.0.0.1:10249", "--healthz-bind-address=127.0.0.1:10256", "--v=1")
	return nil
}

func (c *Cluster) waitEtcd(ctx context.Context) error {
	return poll(ctx, "etcd healthy", 30*time.Second, 100*time.Millisecond, func() error {
		if err := c.etcd.exited(); err != nil {
			return err
		}
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/health", etcdClientPort))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/health: %s", resp.Status)
		}
		return nil
	})
}

func (c *Cluster) waitAPIServer(ctx context.Context) error {
	tlsCfg, err := rest.TLSConfigFor(c.Config)
	if err != nil {
		return err
	}
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg.Clone()}}
	defer hc.CloseIdleConnections()
	return poll(ctx, "kube-apiserver ready", 90*time.Second, 200*time.Millisecond, func() error {
		if err := c.apiserver.exited(); err != nil {
			return err
		}
		resp, err := hc.Get(c.Config.Host + "/readyz")
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: %s %s", resp.Status, body)
		}
		return nil
	})
}

func (c *Cluster) waitContainerd(ctx context.Context) error {
	return poll(ctx, "containerd answering", 30*time.Second, 100*time.Millisecond, func() error {
		if err := c.containerd.exited(); err != nil {
			return err
		}
		_, err := c.ctr(ctx, "version")
		return err
	})
}

// ctr runs containerd's CLI against this node's containerd, in the k8s.io
// namespace (the CRI's).
func (c *Cluster) ctr(ctx context.Context, args ...string) (string, error) {
	return run(ctx, "ctr", append([]string{"--address", c.l.containerdSocket, "--namespace", "k8s.io"}, args...)...)
}

// ImportImage imports an image tarball into containerd (k8s.io namespace),
// where the kubelet finds it: pods use it with imagePullPolicy IfNotPresent
// or Never.
func (c *Cluster) ImportImage(ctx context.Context, tarball string) error {
	start := time.Now()
	out, err := c.ctr(ctx, "images", "import", tarball)
	if err != nil {
		return fmt.Errorf("importing %s: %w", tarball, err)
	}
	c.logf("imported %s in %s: %s", filepath.Base(tarball), time.Since(start).Round(10*time.Millisecond), strings.TrimSpace(out))
	return nil
}

// WaitNodeReady waits until the node reports Ready.
func (c *Cluster) WaitNodeReady(ctx context.Context, timeout time.Duration) error {
	return poll(ctx, "node "+nodeName+" Ready", timeout, 250*time.Millisecond, func() error {
		for _, p := range []*process{c.kubelet, c.containerd, c.apiserver} {
			if err := p.exited(); err != nil {
				return err
			}
		}
		var n corev1.Node
		if err := c.Client.Get(ctx, client.ObjectKey{Name: nodeName}, &n); err != nil {
			return err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				if cond.Status == corev1.ConditionTrue {
					return nil
				}
				return fmt.Errorf("condition Ready=%s %s: %s", cond.Status, cond.Reason, cond.Message)
			}
		}
		return errors.New("no Ready condition yet")
	})
}

// NodeName is the node's name.
func (c *Cluster) NodeName() string { return nodeName }

// Kubectl is the path of kubectl.
func (c *Cluster) Kubectl() string { return filepath.Join(c.Assets, "kubectl") }

// LogPath is the log file of a component (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, containerd, kubelet,
// kube-proxy).
func (c *Cluster) LogPath(component string) string { return filepath.Join(c.l.logs, component+".log") }

// PodLogsDir is the kubelet's podLogsDir.
func (c *Cluster) PodLogsDir() string { return c.l.podLogsDir }

// RestartContainerd stops containerd (SIGTERM: running containers keep
// running under their shims, as with a containerd upgrade) and starts it
// again.
func (c *Cluster) RestartContainerd(ctx context.Context) error {
	if err := c.containerd.stop(20 * time.Second); err != nil {
		return err
	}
	if err := c.containerd.start(); err != nil {
		return err
	}
	return c.waitContainerd(ctx)
}

// RestartKubelet stops the kubelet (SIGTERM: pods keep running) and starts
// it again, then waits until the new kubelet has reported the node Ready.
func (c *Cluster) RestartKubelet(ctx context.Context) error {
	if err := c.kubelet.stop(20 * time.Second); err != nil {
		return err
	}
	restarted := time.Now()
	if err := c.kubelet.start(); err != nil {
		return err
	}
	return poll(ctx, "node "+nodeName+" Ready, reported by the restarted kubelet", 2*time.Minute, 250*time.Millisecond, func() error {
		if err := c.kubelet.exited(); err != nil {
			return err
		}
		var n corev1.Node
		if err := c.Client.Get(ctx, client.ObjectKey{Name: nodeName}, &n); err != nil {
			return err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue && cond.LastHeartbeatTime.After(restarted) {
				return nil
			}
		}
		return errors.New("no Ready heartbeat from the restarted kubelet yet")
	})
}

// Stop tears the node down: the controllers first (nothing recreates
// pods), then every pod through the kubelet (so the CNI plugin releases
// each pod's network), the kubelet and kube-proxy, what containerd still
// runs, containerd, kube-proxy's iptables rules, the API server and etcd;
// then it sweeps the machine (see sweep) and compares it with the snapshot
// taken before the node started: anything left behind is an error naming
// it. It releases the lock. Safe to call on a partly started node.
func (c *Cluster) Stop() error {
	if c == nil || c.lockF == nil {
		return nil
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(c.controllerManager.stop(10 * time.Second))
	add(c.scheduler.stop(10 * time.Second))
	if c.apiserver.running() && c.kubelet.running() {
		add(c.deleteAllPods(ctx))
	}
	add(c.kubeProxy.stop(10 * time.Second))
	add(c.kubelet.stop(15 * time.Second))
	if c.containerd.running() {
		add(c.stopContainers(ctx))
	}
	add(c.containerd.stop(15 * time.Second))
	if c.Assets != "" {
		// kube-proxy's own cleanup of its iptables rules; sweep removes
		// whatever it does not.
		if out, err := run(ctx, filepath.Join(c.Assets, "kube-proxy"), "--cleanup", "--proxy-mode=iptables"); err != nil {
			c.logf("kube-proxy --cleanup: %v", strings.TrimSpace(out))
		}
	}
	add(c.apiserver.stop(15 * time.Second))
	add(c.etcd.stop(15 * time.Second))
	if c.RunDir != "" {
		add(sweep(ctx, c.RunDir, c.before, c.logf))
	}
	after, err := TakeSnapshot()
	add(err)
	if after != nil && c.before != nil {
		if left := after.Leftovers(c.before); len(left) > 0 {
			add(fmt.Errorf("the node left the machine changed:\n  %s", strings.Join(left, "\n  ")))
		}
	}
	if len(errs) == 0 {
		add(removeState())
	}
	c.lockF.Close()
	c.lockF = nil
	c.logf("torn down in %s", time.Since(start).Round(100*time.Millisecond))
	return errors.Join(errs...)
}

// deleteAllPods deletes every pod (the controllers are stopped, nothing
// recreates them) and waits until the kubelet has stopped them all and
// the API has none left.
func (c *Cluster) deleteAllPods(ctx context.Context) error {
	var pods corev1.PodList
	if err := c.Client.List(ctx, &pods); err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	grace := int64(2)
	for i := range pods.Items {
		_ = c.Client.Delete(ctx, &pods.Items[i], &client.DeleteOptions{GracePeriodSeconds: &grace})
	}
	return poll(ctx, "every pod deleted by the kubelet", 60*time.Second, 250*time.Millisecond, func() error {
		var left corev1.PodList
		if err := c.Client.List(ctx, &left); err != nil {
			return err
		}
		if n := len(left.Items); n > 0 {
			return fmt.Errorf("%d pods left, e.g. %s/%s", n, left.Items[0].Namespace, left.Items[0].Name)
		}
		return nil
	})
}

// stopContainers kills and deletes every task containerd still runs (what
// the kubelet did not stop).
func (c *Cluster) stopContainers(ctx context.Context) error {
	out, err := c.ctr(ctx, "tasks", "list", "--quiet")
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range strings.Fields(out) {
		_, _ = c.ctr(ctx, "tasks", "kill", "--signal", "SIGKILL", id)
		if _, err := c.ctr(ctx, "tasks", "delete", "--force", id); err != nil {
			errs = append(errs, err)
		}
	}
	if n := len(strings.Fields(out)); n > 0 {
		c.logf("killed %d containers the kubelet had not stopped", n)
	}
	return errors.Join(errs...)
}
