package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/retentionguard/retention-guard/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true)))
	os.Exit(testenv.Main(m, &env))
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitClosed(t *testing.T, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s: not within %s", what, d)
	}
}

func eventually(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %s: %v", what, d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// handshake dials the webhook server and verifies its certificate against
// caPEM for serverName, the way the API server does.
func handshake(addr, serverName string, caPEM []byte) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return errors.New("no CA in PEM")
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr,
		&tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12})
	if err != nil {
		return err
	}
	return conn.Close()
}

// TestRotation: the rotator fills the chart's empty Secret, injects its CA
// into the webhook configuration, the syncer writes the pair into the cert
// directory, the webhook server serves it (readiness turns true only then),
// and a new CA after the Secret is emptied reaches the configuration and
// the served certificate without a restart.
func TestRotation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := env.Client
	const ns, secretName, svcName, whName = "rg-certs", "rg-webhook-cert", "rg-webhook", "rg-test-webhook"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	// The chart creates the Secret empty, so the rotator only updates it.
	if err := c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secretName},
		Type:       corev1.SecretTypeOpaque,
	}); err != nil {
		t.Fatal(err)
	}
	none := admissionv1.SideEffectClassNoneOnDryRun
	vwc := &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: whName},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name: "workloads.retentionguard.io",
			ClientConfig: admissionv1.WebhookClientConfig{Service: &admissionv1.ServiceReference{
				Namespace: ns, Name: svcName, Path: ptr.To("/validate-apps-v1-workloads"),
			}},
			Rules: []admissionv1.RuleWithOperations{{
				Operations: []admissionv1.OperationType{admissionv1.Create},
				Rule: admissionv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"},
					Resources: []string{"deployments"}},
			}},
			// Only a namespace no test creates: the webhook is never called.
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"rg-never": "true"}},
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if err := c.Create(ctx, vwc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), vwc) })

	certDir := t.TempDir()
	port := freePort(t)
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir}),
	})
	if err != nil {
		t.Fatal(err)
	}
	o := Options{
		Enabled: true, SecretName: secretName, SecretNamespace: ns, ServiceName: svcName,
		WebhookName: whName, CertDir: certDir, SyncInterval: 200 * time.Millisecond,
	}
	ready, err := Setup(mgr, o)
	if err != nil {
		t.Fatal(err)
	}
	checker := ReadyChecker(ready, mgr)
	probe, _ := http.NewRequest(http.MethodGet, "/readyz", nil)
	if err := checker(probe); err == nil {
		t.Fatal("ReadyChecker: ready before the manager started")
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	waitClosed(t, ready, 30*time.Second, "certificates ready")

	var secret corev1.Secret
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: secretName}, &secret); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ca.crt", "ca.key", CertFile, KeyFile} {
		if len(secret.Data[k]) == 0 {
			t.Fatalf("Secret %s has no %s after ready", secretName, k)
		}
	}
	for _, f := range []string{CertFile, KeyFile} {
		got, err := os.ReadFile(filepath.Join(certDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(secret.Data[f]) {
			t.Errorf("%s in the cert dir differs from the Secret's", f)
		}
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(vwc), vwc); err != nil {
		t.Fatal(err)
	}
	if got := string(vwc.Webhooks[0].ClientConfig.CABundle); got != string(secret.Data["ca.crt"]) {
		t.Fatalf("caBundle is not the Secret's CA:\n%s", got)
	}
	ca := secret.Data["ca.crt"]

	// The webhook is registered after ready (the server needs its files);
	// readiness then follows the server.
	mgr.GetWebhookServer().Register("/validate-apps-v1-workloads", http.NotFoundHandler())
	eventually(t, 10*time.Second, "ReadyChecker after the webhook server started", func() error { return checker(probe) })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for _, name := range []string{svcName + "." + ns + ".svc", svcName + "." + ns + ".svc.cluster.local"} {
		if err := handshake(addr, name, ca); err != nil {
			t.Errorf("TLS to the webhook as %s with the injected CA: %v", name, err)
		}
	}

	// Rotation: emptying the Secret makes the rotator issue a new CA; the
	// configuration and the served certificate follow.
	secret.Data = nil
	if err := c.Update(ctx, &secret); err != nil {
		t.Fatal(err)
	}
	var newCA []byte
	eventually(t, 20*time.Second, "a new CA in the Secret and the webhook configuration", func() error {
		var s corev1.Secret
		if err := c.Get(ctx, client.ObjectKeyFromObject(&secret), &s); err != nil {
			return err
		}
		newCA = s.Data["ca.crt"]
		if len(newCA) == 0 || string(newCA) == string(ca) {
			return errors.New("CA not rotated yet")
		}
		var got admissionv1.ValidatingWebhookConfiguration
		if err := c.Get(ctx, client.ObjectKeyFromObject(vwc), &got); err != nil {
			return err
		}
		if string(got.Webhooks[0].ClientConfig.CABundle) != string(newCA) {
			return errors.New("caBundle not updated yet")
		}
		return nil
	})
	eventually(t, 20*time.Second, "the webhook serving the rotated certificate", func() error {
		return handshake(addr, svcName+"."+ns+".svc", newCA)
	})
}

// TestFilesFromElsewhere: with rotation off (cert-manager mounts the
// Secret), ready closes once both files exist, and not before.
func TestFilesFromElsewhere(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	certDir := t.TempDir()
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	ready, err := Setup(mgr, Options{CertDir: certDir})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	if err := os.WriteFile(filepath.Join(certDir, CertFile), []byte("cert"), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ready:
		t.Fatal("ready with tls.key missing")
	case <-time.After(1500 * time.Millisecond):
	}
	if err := os.WriteFile(filepath.Join(certDir, KeyFile), []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, ready, 5*time.Second, "ready after both files exist")
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"no cert dir", Options{}, "certificate directory"},
		{"rotation without namespace", Options{Enabled: true, CertDir: "/x", SecretName: "s", ServiceName: "v", WebhookName: "w"}, "--namespace"},
		{"rotation without secret", Options{Enabled: true, CertDir: "/x", SecretNamespace: "n", ServiceName: "v", WebhookName: "w"}, "--cert-secret-name"},
		{"rotation without webhook", Options{Enabled: true, CertDir: "/x", SecretNamespace: "n", SecretName: "s", ServiceName: "v"}, "--webhook-configuration-name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error naming %q", err, tc.want)
			}
		})
	}
	ok := Options{Enabled: true, CertDir: "/x", SecretNamespace: "n", SecretName: "s", ServiceName: "v", WebhookName: "w"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("complete options: %v", err)
	}
}
