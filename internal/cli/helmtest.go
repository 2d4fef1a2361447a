package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/spf13/cobra"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// helmTestOptions are the flags of `retention-guard helm-test`, which the
// chart's test hook (templates/tests) passes.
type helmTestOptions struct {
	namespace      string // the release's, where the Service is
	service        string
	webhookConfig  string
	probeNamespace string
	probePolicy    string
	probeLabel     string // key=value the probe policy selects
	image          string // of the dry-run Deployment (never pulled)
	timeout        time.Duration
}

func newHelmTestCommand() *cobra.Command {
	o := &helmTestOptions{}
	cmd := &cobra.Command{
		Use:   "helm-test",
		Short: "Prove an installed guard works (the chart's helm test hook)",
		Long: `Prove, from a pod in the cluster, that an installed retention-guard works:

  1. a server-side dry-run of a Deployment that the probe policy selects is
     refused by the webhook, naming the policy: the API server called the
     webhook for the probe's namespace, and the manager judged the rollout
     against the policy it holds;
  2. the webhook answers an AdmissionReview sent to its Service, over TLS
     checked against the CA the API server trusts (the webhook
     configuration's caBundle) for the Service's DNS name;
  3. the manager's metrics answer through the Service.

The chart's test hook runs it (helm test): it creates the probe policy (a
Deny policy on a KafkaConnection that does not exist, so it is never
proven and no broker is dialed) and deletes it afterwards. Nothing is
created by this command: the dry-run persists nothing.

Exit codes: 0 every check passed, 1 one failed, 64 usage error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.service == "" || o.webhookConfig == "" || o.probeNamespace == "" || o.probePolicy == "" || o.image == "" {
				return UsageError(errors.New("--service, --webhook-configuration, --probe-namespace, --probe-policy and --image are required"))
			}
			key, value, ok := strings.Cut(o.probeLabel, "=")
			if !ok || key == "" {
				return UsageError(fmt.Errorf("--probe-label %q: want key=value", o.probeLabel))
			}
			cfg, err := rest.InClusterConfig()
			if err != nil {
				return ExitError(ExitFailure, fmt.Errorf("not running in a pod: %w", err))
			}
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return ExitError(ExitFailure, err)
			}
			// SIGTERM (the pod deleted, e.g. by helm test giving up) ends
			// the checks at once: as PID 1 the process would otherwise
			// ignore it until the grace period ends.
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			ctx, cancel := context.WithTimeout(ctx, o.timeout)
			defer cancel()
			if err := runHelmTest(ctx, cmd.OutOrStdout(), cs, o, key, value); err != nil {
				return ExitError(ExitFailure, err)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.namespace, "namespace", "", "namespace of the release (its Service); default: this pod's")
	fs.StringVar(&o.service, "service", "", "the webhook's Service (ports webhook and metrics)")
	fs.StringVar(&o.webhookConfig, "webhook-configuration", "", "the ValidatingWebhookConfiguration (its caBundle and path)")
	fs.StringVar(&o.probeNamespace, "probe-namespace", "", "namespace of the probe policy")
	fs.StringVar(&o.probePolicy, "probe-policy", "", "name of the probe ConsumerRetentionPolicy")
	fs.StringVar(&o.probeLabel, "probe-label", "", "key=value: the pod label the probe policy selects")
	fs.StringVar(&o.image, "image", "", "image of the dry-run Deployment (never pulled: nothing runs)")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "give up after this long")
	return cmd
}

// webhookName is the webhook of the configuration that guards workloads.
const webhookName = "workloads.retentionguard.io"

func runHelmTest(ctx context.Context, out io.Writer, cs kubernetes.Interface, o *helmTestOptions, key, value string) error {
	if o.namespace == "" {
		o.namespace = podNamespace()
	}
	step := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	start := time.Now()

	// 1. A dry-run rollout the probe policy selects, through the API
	// server. Until the manager has seen the policy (its leader adds the
	// namespace to the webhook's guarded-namespaces condition; every
	// replica's cache holds the policy) the dry-run is allowed: retry.
	dep := probeDeployment(o, key, value)
	var last string
	reported := start
	waiting := func(answer string) {
		last = answer
		if time.Since(reported) >= 10*time.Second {
			reported = time.Now()
			step("waiting (%s): the dry-run rollout in %s is %s", time.Since(start).Round(time.Second), o.probeNamespace, firstLines(answer, 2))
		}
	}
	denial, err := poll(ctx, time.Second, func() (string, bool, error) {
		_, err := cs.AppsV1().Deployments(o.probeNamespace).Create(ctx, dep, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		switch {
		case err == nil:
			waiting("allowed (the webhook has not judged it against the probe policy yet)")
			return "", false, nil
		case apierrors.IsForbidden(err) && strings.Contains(err.Error(), `admission webhook "`+webhookName+`" denied the request`):
			if !strings.Contains(err.Error(), o.probePolicy) {
				return "", false, fmt.Errorf("the webhook refused the dry-run without naming the probe policy %s: %v", o.probePolicy, err)
			}
			return err.Error(), true, nil
		case strings.Contains(err.Error(), "failed calling webhook"):
			// Fail closed: the API server could not reach the webhook.
			waiting("refused without the webhook's answer: " + err.Error())
			return "", false, nil
		default:
			return "", false, fmt.Errorf("dry-run of Deployment %s/%s: %w", o.probeNamespace, dep.Name, err)
		}
	})
	if err != nil {
		if last != "" {
			err = fmt.Errorf("%w; last answer: %s", err, last)
		}
		return fmt.Errorf("the dry-run rollout of a Deployment the probe policy %s/%s selects was not refused by the webhook: %w", o.probeNamespace, o.probePolicy, err)
	}
	step("ok: a dry-run rollout of Deployment %s/%s (pods %s=%s) is refused by the webhook, naming the probe policy (%s after the start):\n    %s",
		o.probeNamespace, dep.Name, key, value, time.Since(start).Round(time.Millisecond), firstLines(denial, 3))

	// 2. The webhook through its Service, as the API server calls it.
	svc, err := cs.CoreV1().Services(o.namespace).Get(ctx, o.service, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading Service %s/%s: %w", o.namespace, o.service, err)
	}
	vwc, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, o.webhookConfig, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", o.webhookConfig, err)
	}
	wh, err := findWebhook(vwc)
	if err != nil {
		return err
	}
	path := "/"
	if wh.ClientConfig.Service != nil && wh.ClientConfig.Service.Path != nil {
		path = *wh.ClientConfig.Service.Path
	} else if wh.ClientConfig.URL != nil {
		if i := strings.Index(strings.TrimPrefix(*wh.ClientConfig.URL, "https://"), "/"); i >= 0 {
			path = strings.TrimPrefix(*wh.ClientConfig.URL, "https://")[i:]
		}
	}
	webhookAddr, err := servicePort(svc, "webhook")
	if err != nil {
		return err
	}
	serverName := o.service + "." + o.namespace + ".svc"
	review, err := poll(ctx, time.Second, func() (string, bool, error) {
		msg, err := postReview(ctx, webhookAddr, serverName, wh.ClientConfig.CABundle, path, o, dep)
		if err != nil {
			last = err.Error()
			return "", false, nil
		}
		return msg, true, nil
	})
	if err != nil {
		return fmt.Errorf("the webhook did not refuse the probe's AdmissionReview sent to Service %s/%s (%s, TLS for %s): %w; last: %s",
			o.namespace, o.service, webhookAddr, serverName, err, last)
	}
	step("ok: the webhook answers through Service %s/%s (%s%s, TLS verified for %s against the webhook configuration's caBundle): %s",
		o.namespace, o.service, webhookAddr, path, serverName, firstLines(review, 1))

	// 3. The manager's metrics through the Service.
	metricsAddr, err := servicePort(svc, "metrics")
	if err != nil {
		return err
	}
	families, err := scrape(ctx, metricsAddr)
	if err != nil {
		return fmt.Errorf("the manager's metrics through Service %s/%s (%s): %w", o.namespace, o.service, metricsAddr, err)
	}
	inflight := families["controller_runtime_webhook_requests_in_flight"]
	served := false
	if inflight != nil {
		for _, m := range inflight.GetMetric() {
			for _, l := range m.GetLabel() {
				served = served || (l.GetName() == "webhook" && l.GetValue() == path)
			}
		}
	}
	if !served {
		return fmt.Errorf("the metrics of %s have no controller_runtime_webhook_requests_in_flight{webhook=%q}: not the manager serving this webhook", metricsAddr, path)
	}
	var ours []string
	for name := range families {
		if strings.HasPrefix(name, "retentionguard_") {
			ours = append(ours, name)
		}
	}
	step("ok: the manager's metrics answer through Service %s/%s (%s): %d families, the webhook's %s among them; retention-guard's own: %d",
		o.namespace, o.service, metricsAddr, len(families), path, len(ours))
	step("helm test: the guard works (%s)", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// probeDeployment is the Deployment the dry-runs create: one replica of
// pods the probe policy selects (a start, which the webhook judges on a
// live check).
func probeDeployment(o *helmTestOptions, key, value string) *appsv1.Deployment {
	labels := map[string]string{key: value}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: o.probeNamespace, Name: o.probePolicy + "-consumer"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "consumer", Image: o.image, Args: []string{"version"},
				}}},
			},
		},
	}
}

func findWebhook(vwc *admissionregistrationv1.ValidatingWebhookConfiguration) (*admissionregistrationv1.ValidatingWebhook, error) {
	for i := range vwc.Webhooks {
		if vwc.Webhooks[i].Name == webhookName {
			if len(vwc.Webhooks[i].ClientConfig.CABundle) == 0 {
				return nil, fmt.Errorf("ValidatingWebhookConfiguration %s: webhook %s has no caBundle: the API server cannot trust the webhook", vwc.Name, webhookName)
			}
			return &vwc.Webhooks[i], nil
		}
	}
	return nil, fmt.Errorf("ValidatingWebhookConfiguration %s has no webhook %s", vwc.Name, webhookName)
}

// servicePort is ClusterIP:port of the Service's named port (cluster DNS
// is not needed).
func servicePort(svc *corev1.Service, name string) (string, error) {
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return "", fmt.Errorf("the Service %s/%s has no cluster IP", svc.Namespace, svc.Name)
	}
	for _, p := range svc.Spec.Ports {
		if p.Name == name {
			return net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(p.Port))), nil
		}
	}
	return "", fmt.Errorf("the Service %s/%s has no port named %s", svc.Namespace, svc.Name, name)
}

// postReview sends the probe Deployment's creation (dry-run) as an
// AdmissionReview and returns the webhook's refusal message; an allowed
// answer (the replica has not seen the policy yet) is an error.
func postReview(ctx context.Context, addr, serverName string, caBundle []byte, path string, o *helmTestOptions, dep *appsv1.Deployment) (string, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caBundle) {
		return "", errors.New("the caBundle holds no PEM certificate")
	}
	raw, err := json.Marshal(dep)
	if err != nil {
		return "", err
	}
	uid := randomUID()
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID(uid),
			Kind:      metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
			Resource:  metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
			Name:      dep.Name,
			Namespace: o.probeNamespace,
			Operation: admissionv1.Create,
			UserInfo:  authenticationUser(),
			Object:    runtime.RawExtension{Raw: raw},
			DryRun:    ptr.To(true),
		},
	})
	if err != nil {
		return "", err
	}
	client := &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12},
			DisableKeepAlives: true,
		},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+addr+path+"?timeout=5s", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("HTTP %d: %s", resp.StatusCode, firstLines(string(b), 2))
	}
	var ar admissionv1.AdmissionReview
	if err := json.Unmarshal(b, &ar); err != nil || ar.Response == nil {
		return "", fmt.Errorf("not an AdmissionReview answer: %v: %s", err, firstLines(string(b), 2))
	}
	if string(ar.Response.UID) != uid {
		return "", fmt.Errorf("the answer's uid %q is not the request's %q", ar.Response.UID, uid)
	}
	msg := ""
	if ar.Response.Result != nil {
		msg = ar.Response.Result.Message
	}
	if ar.Response.Allowed {
		return "", fmt.Errorf("allowed: %q (this replica has not judged it against the probe policy yet)", msg)
	}
	if !strings.Contains(msg, o.probePolicy) {
		return "", fmt.Errorf("refused without naming the probe policy %s: %s", o.probePolicy, msg)
	}
	return "refused: " + msg, nil
}

// scrape reads a Prometheus text exposition.
func scrape(ctx context.Context, addr string) (map[string]*dtoFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

type dtoFamily = dto.MetricFamily

// podNamespace is the namespace of the pod this runs in.
func podNamespace() string {
	b, _ := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	return strings.TrimSpace(string(b))
}

// authenticationUser is who the AdmissionReview sent to the webhook says
// asked (the webhook only reads it for its events and logs, and records
// nothing on a dry-run).
func authenticationUser() authenticationv1.UserInfo {
	return authenticationv1.UserInfo{Username: "retention-guard-helm-test"}
}

// poll calls f every interval until it reports done, returns an error, or
// ctx ends.
func poll(ctx context.Context, interval time.Duration, f func() (string, bool, error)) (string, error) {
	for {
		s, done, err := f()
		if err != nil || done {
			return s, err
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("not within the timeout: %w", ctx.Err())
		case <-time.After(interval):
		}
	}
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, "\n    ")
}

func randomUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
