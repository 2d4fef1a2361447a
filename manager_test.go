package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/certs"
	"github.com/retentionguard/retention-guard/internal/cli"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/testenv"
	"github.com/retentionguard/retention-guard/webhook"
)

func TestManagerUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"manager", "--allowed-bootstrap-servers", "*.kafka.svc:9093,kafka-[.prod:9092"}, "--allowed-bootstrap-servers"},
		{[]string{"manager", "--kafka-request-timeout", "0s"}, "--kafka-request-timeout"},
		{[]string{"manager", "--live-checks-per-connection", "-1"}, "--live-checks-per-connection must be at least 1"},
		{[]string{"manager", "--no-such-flag"}, "unknown flag"},
		{[]string{"manager", "--webhook-live-check-timeout", "10s"}, "--webhook-live-check-timeout"},
		{[]string{"manager", "--cert-rotation", "--namespace", ""}, "--cert-rotation needs --namespace"},
		{[]string{"manager", "extra-argument"}, "unknown command"},
		{[]string{"manager", "--kube-api-qps", "0"}, "--kube-api-qps"},
		{[]string{"manager", "--kube-api-qps", "-3"}, "--kube-api-qps"},
		{[]string{"manager", "--kube-api-qps", "100", "--kube-api-burst", "10"}, "--kube-api-burst"},
		{[]string{"manager", "--watch-label-selector", "retentionguard.io/shard in a"}, "--watch-label-selector"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := execute(tc.args, &stdout, &stderr)
			if code != cli.ExitUsage {
				t.Errorf("exit code %d, want %d; stderr: %s", code, cli.ExitUsage, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr does not mention %q: %s", tc.want, stderr.String())
			}
		})
	}
}

func TestManagerHelpNamesItsFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := execute([]string{"manager", "--help"}, &stdout, &stderr); code != cli.ExitOK {
		t.Fatalf("exit code %d: %s", code, stderr.String())
	}
	for _, flag := range []string{
		"--metrics-bind-address", "--health-probe-bind-address", "--leader-elect", "--leader-election-namespace",
		"--allowed-bootstrap-servers", "--kafka-request-timeout", "--watch-namespaces", "--kubeconfig",
		"--zap-log-level", "Empty (the default): none is allowed", "--allowed-cursor-hosts",
		"--kube-api-qps", "--kube-api-burst", "--kube-api-timeout", "--pprof-bind-address", "--live-checks-per-connection",
		"--enable-webhook", "--watch-label-selector", "--webhook-port", "--webhook-cert-dir", "--webhook-live-check-timeout", "--cert-rotation", "--cert-secret-name",
	} {
		if !strings.Contains(stdout.String(), flag) {
			t.Errorf("manager --help does not mention %s", flag)
		}
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

func httpGet(g Gomega, url string) (int, string) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(body)
}

// `retention-guard manager` against a real control plane and a kfake
// cluster: it elects itself leader, proves a policy, serves its probes and
// metrics, and shuts down when its context ends.
func TestManagerRunsTheReconciler(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}

	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "orders", 2, map[string]string{"retention.ms": strconv.FormatInt(int64(7*24*time.Hour/time.Millisecond), 10)})
	c.Produce(t, "orders", 20)
	c.CommitOffsets(t, "billing", "orders", map[int32]int64{0: 10, 1: 3})

	o := &managerOptions{
		kubeconfig:              kubeconfig,
		metricsAddr:             freeAddr(t),
		probeAddr:               freeAddr(t),
		leaderElect:             true,
		leaderElectionNamespace: "default",
		allowedBootstrapServers: []string{"127.0.0.1:*"},
		kafkaRequestTimeout:     2 * time.Second,
		kubeAPIQPS:              defaultKubeAPIQPS,
		kubeAPIBurst:            defaultKubeAPIBurst,
		pprofAddr:               freeAddr(t),
	}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runManager(ctx, o) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("the manager ended with: %v", err)
			}
		case <-time.After(time.Minute):
			t.Errorf("the manager did not stop within a minute")
		}
	}
	t.Cleanup(stop)

	g := NewWithT(t)
	bg := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "manager-"}}
	g.Expect(env.Client.Create(bg, ns)).To(Succeed())
	policy := &rgv1.ConsumerRetentionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "billing", Namespace: ns.Name},
		Spec: rgv1.ConsumerRetentionPolicySpec{
			GroupID:        "billing",
			Topics:         []string{"orders"},
			RecoveryWindow: metav1.Duration{Duration: 72 * time.Hour},
			Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"app": "billing"}},
			Kafka:          rgv1.PolicyKafka{BootstrapServers: c.Addrs},
		},
	}
	g.Expect(env.Client.Create(bg, policy)).To(Succeed())

	g.Eventually(func(g Gomega) rgv1.Verdict {
		p := &rgv1.ConsumerRetentionPolicy{}
		g.Expect(env.Client.Get(bg, client.ObjectKeyFromObject(policy), p)).To(Succeed())
		g.Expect(p.Status.Proof).NotTo(BeNil())
		return p.Status.Proof.Verdict
	}, 30*time.Second, 100*time.Millisecond).Should(Equal(rgv1.VerdictProven))

	for _, path := range []string{"/healthz", "/readyz"} {
		code, body := httpGet(g, "http://"+o.probeAddr+path)
		g.Expect(code).To(Equal(http.StatusOK), "%s: %s", path, body)
	}
	// --pprof-bind-address (off by default) serves Go's profiles.
	code, body := httpGet(g, "http://"+o.pprofAddr+"/debug/pprof/")
	g.Expect(code).To(Equal(http.StatusOK), "/debug/pprof/: %s", body)
	g.Expect(body).To(ContainSubstring("heap"))
	g.Eventually(func(g Gomega) string {
		_, body := httpGet(g, "http://"+o.metricsAddr+"/metrics")
		return body
	}, 10*time.Second, 100*time.Millisecond).Should(And(
		ContainSubstring(`retentionguard_policy_verdict{namespace="`+ns.Name+`",policy="billing",verdict="Proven"} 1`),
		ContainSubstring(`retentionguard_kafka_request_duration_seconds_count{api="ListOffsets"}`),
	))

	lease := &coordinationv1.Lease{}
	g.Expect(env.Client.Get(bg, client.ObjectKey{Namespace: "default", Name: leaderElectionID}, lease)).To(Succeed())
	g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
	g.Expect(*lease.Spec.HolderIdentity).NotTo(BeEmpty())

	start := time.Now()
	stop()
	g.Expect(time.Since(start)).To(BeNumerically("<", 30*time.Second), "graceful shutdown")
	// LeaderElectionReleaseOnCancel: the next replica need not wait out the
	// lease.
	g.Expect(env.Client.Get(bg, client.ObjectKey{Namespace: "default", Name: leaderElectionID}, lease)).To(Succeed())
	g.Expect(lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "").To(BeTrue(), "the lease is released on shutdown")
}

// A replica serving the webhook is Ready only once its admission handler
// answers with its policies. Before, the handler was registered in a
// goroutine after the certificate was in place, while readiness checked
// only the certificate and the server's start: a replica could be Ready
// and answer 404 on the webhook path (failurePolicy Fail: a refused
// rollout), and stayed Ready when that registration failed. Now the
// handler is registered before the manager starts (a failure ends the
// manager) and readiness also waits for its policy informer. Here the
// policies' list is held back: no Ready; once it goes through, the first
// Ready answer comes with the handler on the path, admitting.
func TestManagerReadyOnlyWithTheAdmissionHandler(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	certDir := filepath.Join(dir, "certs")
	ca := kafkatest.NewCA(t, "webhook-ca")
	cert, key := ca.Issue(t, "webhook", "127.0.0.1")
	for name, data := range map[string][]byte{"kubeconfig": env.KubeConfig, "certs/tls.crt": cert, "certs/tls.key": key} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	webhookAddr := freeAddr(t)
	_, portText, _ := net.SplitHostPort(webhookAddr)
	port, _ := strconv.Atoi(portText)
	var held atomic.Int32
	o := &managerOptions{
		kubeconfig: kubeconfig, metricsAddr: "0", probeAddr: freeAddr(t),
		kafkaRequestTimeout: 2 * time.Second, kubeAPIQPS: defaultKubeAPIQPS, kubeAPIBurst: defaultKubeAPIBurst,
		webhookEnabled: true, webhookHost: "127.0.0.1", webhookPort: port, webhookCertDir: certDir,
		liveCheckTimeout: time.Second, certs: certs.Options{WebhookName: "retention-guard"}, skipNameValidation: true,
		wrapTransport: func(rt http.RoundTripper) http.RoundTripper {
			return roundTripper(func(req *http.Request) (*http.Response, error) {
				// The policies' list (a list, or a watch sending the
				// initial events), held back.
				if strings.HasSuffix(req.URL.Path, "/consumerretentionpolicies") {
					held.Add(1)
					select {
					case <-release:
					case <-req.Context().Done():
						return nil, req.Context().Err()
					}
				}
				return rt.RoundTrip(req)
			})
		},
	}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var runErr error
	exited := make(chan struct{})
	go func() { runErr = runManager(ctx, o); close(exited) }()
	t.Cleanup(func() {
		unblock()
		cancel()
		select {
		case <-exited:
		case <-time.After(time.Minute):
			t.Errorf("the manager did not stop within a minute")
		}
	})

	g := NewWithT(t)
	readyz := func(g Gomega) int {
		select {
		case <-exited:
			t.Fatalf("the manager ended: %v", runErr)
		default:
		}
		code, _ := httpGet(g, "http://"+o.probeAddr+"/readyz")
		return code
	}
	g.Eventually(func() int32 {
		select {
		case <-exited:
			t.Fatalf("the manager ended: %v", runErr)
		default:
		}
		return held.Load()
	}, 60*time.Second, 100*time.Millisecond).Should(BeNumerically(">", 0))
	g.Eventually(readyz, 60*time.Second, 100*time.Millisecond).Should(BeNumerically(">=", 500)) // answering, not Ready
	g.Expect(readyz(g)).NotTo(Equal(http.StatusOK), "Ready while the handler's policies are not listed")

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	tlsClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","kind":{"group":"apps","version":"v1","kind":"Deployment"},` +
		`"resource":{"group":"apps","version":"v1","resource":"deployments"},"namespace":"default","operation":"CREATE",` +
		`"object":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x","namespace":"default"},"spec":{"template":{"metadata":{"labels":{"app":"x"}}}}}}}`

	unblock()
	g.Eventually(readyz, 60*time.Second, 20*time.Millisecond).Should(Equal(http.StatusOK))
	resp, err := tlsClient.Post("https://"+webhookAddr+webhook.Path, "application/json", strings.NewReader(review))
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "the first Ready answer: the webhook path is not the handler's: %s", body)
	g.Expect(string(body)).To(ContainSubstring(`"allowed":true`))
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
