// Package stack runs retention-guard end to end on one machine, every part
// a separate process: etcd and kube-apiserver (envtest), a Kafka broker
// (test/kafka-broker, franz-go's kfake), the retention-guard manager
// binary with its webhook, and optionally a Prometheus server evaluating
// the chart's alerts. The manager runs with the credentials of the
// Helm chart's ServiceAccount (a TokenRequest token), after every object
// the chart renders has been applied to the API server, so the chart's RBAC
// and webhook configuration are what is exercised.
//
// The end-to-end suite (test/e2e) and `make demo` (hack/demo) share it,
// on kfake; test/realkafka/e2e runs it on a real Apache Kafka broker it
// starts itself (Options.KafkaAddrs).
package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/retentionguard/retention-guard/internal/testenv"
	"github.com/retentionguard/retention-guard/test/e2e/e2eutil"
)

// Options configure a stack.
type Options struct {
	// Dir holds binaries, certificates, kubeconfigs, the broker's data and
	// every process's log. Empty: a new temporary directory, removed by
	// Stop.
	Dir string
	// Log receives progress lines. Nil: discarded.
	Log io.Writer
	// KafkaAddrs, when set, run the stack on a Kafka cluster that is
	// already running at these bootstrap servers (an Apache Kafka broker
	// started by internal/kafka/apachekafka, test/realkafka/e2e) instead
	// of starting kfake broker processes: BrokerConfigs, KafkaClusters,
	// BrokersPerCluster and BrokerStats do not apply, the broker binary is
	// not built, and StartBroker and StopBroker fail (the cluster is its
	// starter's to stop). Empty: kfake (the e2e suite, the demo).
	KafkaAddrs []string
	// BrokerConfigs are passed to the broker as --broker-config k=v.
	BrokerConfigs map[string]string
	// ChartValues are set over the values the stack needs (webhook.url,
	// webhook.caBundle, allowedBootstrapServers, ...).
	ChartValues map[string]any
	// KafkaClusters is how many Kafka clusters (broker processes) to run;
	// default 1. The first is BrokerAddr.
	KafkaClusters int
	// BrokersPerCluster is how many brokers each cluster has; default 1.
	BrokersPerCluster int
	// BrokerStats makes each cluster count the requests it answers
	// (KafkaCluster.Requests).
	BrokerStats bool
	// ManagerFlags are set over the chart's manager flags and the ones
	// the stack sets (e.g. "--leader-elect": "true").
	ManagerFlags map[string]string
	// DeferManager leaves the manager unstarted: call StartManager.
	DeferManager bool
	// Prometheus starts a Prometheus server configured from the chart's
	// ServiceMonitor and PrometheusRule (both enabled, with the dashboard)
	// once the manager is up.
	Prometheus bool
}

// KafkaCluster is one broker process: a kfake cluster of one or more
// brokers.
type KafkaCluster struct {
	// Addrs are the brokers' addresses, the first being the bootstrap
	// server tests name.
	Addrs []string
	// StatsAddr serves the request counts (Options.BrokerStats).
	StatsAddr string
	Process   *Process
	name      string
	args      []string
}

// Stack is a running control plane, broker and manager.
type Stack struct {
	Dir     string
	Env     *testenv.Env
	Binary  string // retention-guard
	Kubectl string // kubectl from the control-plane build, may not exist

	BrokerBinary string
	// BrokerAddr and Broker are the first Kafka cluster's bootstrap
	// server and process (Clusters[0]).
	BrokerAddr string
	Broker     *Process
	// Clusters are every Kafka cluster (Options.KafkaClusters).
	Clusters []*KafkaCluster

	CAPEM       []byte
	WebhookPort int
	MetricsAddr string
	ProbeAddr   string
	Manager     *Process
	ManagerArgs []string
	// ManagerEnv is added to the manager's environment.
	ManagerEnv    []string
	ManagerConfig *rest.Config // the chart ServiceAccount's credentials
	ManagerClient client.Client
	// AdminKubeconfig is a kubeconfig file with the control plane's admin
	// credentials.
	AdminKubeconfig string
	// ManagerKubeconfig is the kubeconfig file the manager runs with.
	ManagerKubeconfig string
	// Chart is what the chart rendered (and was applied, but the
	// Prometheus Operator's objects).
	Chart []*unstructured.Unstructured
	// Prometheus runs with Options.Prometheus.
	Prometheus *Prometheus

	log        io.Writer
	removeDir  bool
	ServiceAcc string
}

// Admin is the control plane's admin, as a person with kubectl acts.
func (s *Stack) Admin() e2eutil.Kubectl {
	return e2eutil.Kubectl{Client: s.Env.Client, Config: s.Env.Config}
}

func (s *Stack) logf(format string, args ...any) {
	fmt.Fprintf(s.log, format+"\n", args...)
}

// Start builds the binaries and starts every part. On error what was
// started is stopped again.
func Start(ctx context.Context, o Options) (_ *Stack, err error) {
	s := &Stack{Dir: o.Dir, log: o.Log}
	if s.log == nil {
		s.log = io.Discard
	}
	if s.Dir == "" {
		if s.Dir, err = os.MkdirTemp("", "retention-guard-e2e-"); err != nil {
			return nil, err
		}
		s.removeDir = true
	} else if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	root := testenv.RepoRoot()

	external := len(o.KafkaAddrs) > 0
	if external {
		s.logf("building retention-guard into %s", s.Dir)
		if s.Binary, err = BuildManager(ctx, root, s.Dir, s.log); err != nil {
			return s, err
		}
		kc := &KafkaCluster{Addrs: slices.Clone(o.KafkaAddrs), name: "external"}
		for _, a := range kc.Addrs {
			if err := waitTCP(ctx, a, 10*time.Second); err != nil {
				return s, fmt.Errorf("the Kafka cluster at %s: %w", a, err)
			}
		}
		s.Clusters = append(s.Clusters, kc)
		s.logf("Kafka cluster (not started by the stack) at %s", strings.Join(kc.Addrs, ","))
	} else {
		s.logf("building retention-guard and the Kafka broker into %s", s.Dir)
		if s.Binary, s.BrokerBinary, err = Build(ctx, root, s.Dir, s.log); err != nil {
			return s, err
		}
	}

	// The Kafka clusters.
	for i := range max(o.KafkaClusters, 1) {
		if external {
			break
		}
		kc, err := newKafkaCluster(s.Dir, i, max(o.BrokersPerCluster, 1), o.BrokerStats, o.BrokerConfigs)
		if err != nil {
			return s, err
		}
		s.Clusters = append(s.Clusters, kc)
		if err := s.startCluster(ctx, kc); err != nil {
			return s, err
		}
	}
	s.BrokerAddr, s.Broker = s.Clusters[0].Addrs[0], s.Clusters[0].Process

	// The control plane.
	s.logf("starting etcd and kube-apiserver (KUBEBUILDER_ASSETS=%s)", os.Getenv("KUBEBUILDER_ASSETS"))
	start := time.Now()
	if s.Env, err = testenv.Start(); err != nil {
		return s, err
	}
	s.Kubectl = filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	s.logf("control plane up in %s at %s", time.Since(start).Round(100*time.Millisecond), s.Env.Config.Host)
	s.AdminKubeconfig = filepath.Join(s.Dir, "admin.kubeconfig")
	if err := AdminKubeconfig(s.Env.Config, s.AdminKubeconfig); err != nil {
		return s, err
	}

	// The webhook's serving certificate, and the chart that trusts it.
	if s.WebhookPort, err = FreePort(); err != nil {
		return s, err
	}
	certDir := filepath.Join(s.Dir, "webhook-certs")
	if s.CAPEM, err = writeServingCert(certDir); err != nil {
		return s, err
	}
	vals := map[string]any{
		"allowedBootstrapServers": []any{"127.0.0.1:*"},
		"allowedCursorHosts":      []any{"127.0.0.1:*"},
		"kafkaRequestTimeout":     "2s",
		"logEncoder":              "console",
		"webhook": map[string]any{
			// The chart appends the webhook's path.
			"url":      "https://127.0.0.1:" + strconv.Itoa(s.WebhookPort),
			"caBundle": string(s.CAPEM), // PEM: the chart base64-encodes it
		},
		"certManager": map[string]any{"enabled": false},
	}
	if o.Prometheus {
		vals["serviceMonitor"] = map[string]any{"enabled": true}
		vals["prometheusRule"] = map[string]any{"enabled": true}
		vals["grafanaDashboard"] = map[string]any{"enabled": true}
	}
	for k, v := range o.ChartValues {
		vals[k] = v
	}
	if s.Chart, err = RenderChart(filepath.Join(root, "charts", "retention-guard"), vals); err != nil {
		return s, err
	}
	applied, err := ApplyChart(ctx, s.Env.Client, s.Chart)
	if err != nil {
		return s, err
	}
	s.logf("applied the chart's %d objects: %s", len(applied), strings.Join(applied, ", "))

	// The manager, as the chart's ServiceAccount, with the chart's flags.
	dep := s.chartObject("Deployment")
	if dep == nil {
		return s, errors.New("the chart rendered no Deployment")
	}
	s.ServiceAcc, _, _ = unstructured.NestedString(dep.Object, "spec", "template", "spec", "serviceAccountName")
	if s.ServiceAcc == "" {
		return s, errors.New("the chart's Deployment names no serviceAccountName")
	}
	s.ManagerKubeconfig = filepath.Join(s.Dir, "manager.kubeconfig")
	if s.ManagerConfig, err = ServiceAccountKubeconfig(ctx, s.Env.Config, ReleaseNamespace, s.ServiceAcc, s.ManagerKubeconfig); err != nil {
		return s, err
	}
	if s.ManagerClient, err = client.New(s.ManagerConfig, client.Options{Scheme: s.Env.Scheme}); err != nil {
		return s, err
	}
	chartArgs, err := containerArgs(dep)
	if err != nil {
		return s, err
	}
	metricsPort, err := FreePort()
	if err != nil {
		return s, err
	}
	probePort, err := FreePort()
	if err != nil {
		return s, err
	}
	s.MetricsAddr = "127.0.0.1:" + strconv.Itoa(metricsPort)
	s.ProbeAddr = "127.0.0.1:" + strconv.Itoa(probePort)
	flags := map[string]string{
		"--kubeconfig":                s.ManagerKubeconfig,
		"--leader-elect":              "false",
		"--enable-webhook":            "true",
		"--webhook-host":              "127.0.0.1",
		"--webhook-port":              strconv.Itoa(s.WebhookPort),
		"--webhook-cert-dir":          certDir,
		"--metrics-bind-address":      s.MetricsAddr,
		"--health-probe-bind-address": s.ProbeAddr,
	}
	maps.Copy(flags, o.ManagerFlags)
	s.ManagerArgs = append([]string{"manager"}, OverrideArgs(chartArgs, flags)...)
	if o.DeferManager {
		return s, nil
	}
	if err := s.StartManager(ctx); err != nil {
		return s, err
	}
	if o.Prometheus {
		if err := s.startPrometheus(ctx); err != nil {
			return s, err
		}
	}
	return s, nil
}

func (s *Stack) chartObject(kind string) *unstructured.Unstructured {
	for _, o := range s.Chart {
		if o.GetKind() == kind {
			return o
		}
	}
	return nil
}

// containerArgs are the args of the manager container of the chart's
// Deployment.
func containerArgs(dep *unstructured.Unstructured) ([]string, error) {
	cs, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		return nil, errors.New("the chart's Deployment has no container")
	}
	c, _ := cs[0].(map[string]any)
	raw, _ := c["args"].([]any)
	var args []string
	for _, a := range raw {
		args = append(args, fmt.Sprint(a))
	}
	if len(args) == 0 || args[0] != "manager" {
		return nil, fmt.Errorf("the chart's manager container args %v do not start with the manager command", args)
	}
	return args[1:], nil
}

// OverrideArgs returns args (a command line of --flag=value flags) with
// set's values in place of theirs, never a flag twice (the last would win
// silently), and the flags of set the args did not have appended in name
// order. args is not modified.
func OverrideArgs(args []string, set map[string]string) []string {
	out := make([]string, 0, len(args)+len(set))
	seen := map[string]bool{}
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if v, ok := set[name]; ok {
			if !seen[name] {
				out = append(out, name+"="+v)
			}
			seen[name] = true
			continue
		}
		out = append(out, a)
	}
	for _, name := range slices.Sorted(maps.Keys(set)) {
		if !seen[name] {
			out = append(out, name+"="+set[name])
		}
	}
	return out
}

// newKafkaCluster picks free ports for cluster i's brokers (and its stats
// endpoint) and its arguments; its data lives under dir.
func newKafkaCluster(dir string, i, brokers int, stats bool, configs map[string]string) (*KafkaCluster, error) {
	kc := &KafkaCluster{name: "kafka-broker"}
	data := filepath.Join(dir, "kafka-data")
	if i > 0 {
		kc.name = "kafka-broker-" + strconv.Itoa(i)
		data += "-" + strconv.Itoa(i)
	}
	for range brokers {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		kc.Addrs = append(kc.Addrs, "127.0.0.1:"+strconv.Itoa(port))
	}
	kc.args = []string{"--listen", strings.Join(kc.Addrs, ","), "--data-dir", data}
	if stats {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		kc.StatsAddr = "127.0.0.1:" + strconv.Itoa(port)
		kc.args = append(kc.args, "--stats-addr", kc.StatsAddr)
	}
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		kc.args = append(kc.args, "--broker-config", k+"="+configs[k])
	}
	return kc, nil
}

func (s *Stack) startCluster(ctx context.Context, kc *KafkaCluster) error {
	var err error
	kc.Process, err = startProcess(ctx, s.Dir, kc.name, s.BrokerBinary, kc.args, nil, "listening on", 30*time.Second)
	if err != nil {
		return err
	}
	for _, a := range kc.Addrs {
		if err := waitTCP(ctx, a, 10*time.Second); err != nil {
			return err
		}
	}
	s.logf("Kafka cluster %s (pid %d) listening on %s", kc.name, kc.Process.PID(), strings.Join(kc.Addrs, ","))
	return nil
}

// StartBroker starts the first Kafka cluster's process (again) on
// BrokerAddr, with the same data directory.
func (s *Stack) StartBroker(ctx context.Context) error {
	if s.Clusters[0].Process == nil && s.BrokerBinary == "" {
		return errors.New("the stack runs on a Kafka cluster it did not start (Options.KafkaAddrs): start it where it was started")
	}
	if err := s.startCluster(ctx, s.Clusters[0]); err != nil {
		return err
	}
	s.Broker = s.Clusters[0].Process
	return nil
}

// StopBroker stops the first Kafka cluster with SIGTERM.
func (s *Stack) StopBroker() error {
	if s.Broker == nil {
		return errors.New("the stack runs on a Kafka cluster it did not start (Options.KafkaAddrs): stop it where it was started")
	}
	err := s.Broker.Stop(15 * time.Second)
	s.logf("Kafka broker stopped (SIGTERM)")
	return err
}

// Requests are the requests the cluster has answered so far, by Kafka API
// name (Options.BrokerStats).
func (kc *KafkaCluster) Requests(ctx context.Context) (map[string]int64, error) {
	if kc.StatsAddr == "" {
		return nil, errors.New("the cluster does not count requests: start the stack with BrokerStats")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+kc.StatsAddr+"/requests", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /requests: %s", resp.Status)
	}
	out := map[string]int64{}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("decoding the request counts: %w", err)
	}
	return out, nil
}

// StartManager starts the manager process (again) and waits until it is
// ready (/readyz: serving the webhook with its certificate).
func (s *Stack) StartManager(ctx context.Context) error {
	var err error
	s.Manager, err = startProcess(ctx, s.Dir, "manager", s.Binary, s.ManagerArgs,
		append([]string{"POD_NAMESPACE=" + ReleaseNamespace}, s.ManagerEnv...), "", 0)
	if err != nil {
		return err
	}
	if err := s.WaitManagerReady(ctx, 60*time.Second); err != nil {
		return err
	}
	s.logf("retention-guard manager (pid %d) ready: webhook https://127.0.0.1:%d, metrics http://%s/metrics",
		s.Manager.PID(), s.WebhookPort, s.MetricsAddr)
	return nil
}

// WaitManagerReady polls the manager's /readyz.
func (s *Stack) WaitManagerReady(ctx context.Context, timeout time.Duration) error {
	return waitReady(ctx, s.Manager, s.ProbeAddr, timeout)
}

// StartManagerInstance starts one more manager process beside Manager
// (e.g. a shard of test/scale -shards): name names its log (Dir/name.log),
// args are the manager command and its flags (ManagerArgs with some
// replaced), probeAddr its --health-probe-bind-address. It runs with the
// manager's environment and returns once its /readyz answers; the caller
// stops it.
func (s *Stack) StartManagerInstance(ctx context.Context, name string, args []string, probeAddr string) (*Process, error) {
	p, err := startProcess(ctx, s.Dir, name, s.Binary, args,
		append([]string{"POD_NAMESPACE=" + ReleaseNamespace}, s.ManagerEnv...), "", 0)
	if err != nil {
		return nil, err
	}
	if err := waitReady(ctx, p, probeAddr, 60*time.Second); err != nil {
		p.Kill()
		return nil, err
	}
	s.logf("retention-guard %s (pid %d) ready", name, p.PID())
	return p, nil
}

func waitReady(ctx context.Context, p *Process, probeAddr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	hc := &http.Client{Timeout: time.Second}
	for {
		if p.Exited() {
			return fmt.Errorf("the %s exited; log %s:\n%s", p.Name, p.LogPath, p.Tail())
		}
		resp, err := hc.Get("http://" + probeAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the %s is not ready after %s; log %s:\n%s", p.Name, timeout, p.LogPath, p.Tail())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// KillManager kills the manager with SIGKILL, as a node failure or an OOM
// kill does.
func (s *Stack) KillManager() {
	s.Manager.Kill()
	s.logf("retention-guard manager killed (SIGKILL)")
}

// Metrics scrapes the manager's /metrics.
func (s *Stack) Metrics(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.MetricsAddr+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return string(b), nil
}

// Stop stops the manager, the broker and the control plane, and removes
// the directory when Start made it.
func (s *Stack) Stop() {
	if s == nil {
		return
	}
	if s.Prometheus != nil {
		if err := s.Prometheus.Process.Stop(15 * time.Second); err != nil {
			s.logf("%v", err)
		}
	}
	if err := s.Manager.Stop(15 * time.Second); err != nil {
		s.logf("%v", err)
	}
	for _, kc := range s.Clusters {
		if err := kc.Process.Stop(15 * time.Second); err != nil {
			s.logf("%v", err)
		}
	}
	if s.Env != nil {
		if err := s.Env.Stop(); err != nil {
			s.logf("stopping the control plane: %v", err)
		}
	}
	if s.removeDir {
		_ = os.RemoveAll(s.Dir)
	}
}
