package stack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Prometheus is a real Prometheus server (Debian's prometheus package) on
// loopback, configured the way the Prometheus Operator would be from the
// chart's ServiceMonitor and PrometheusRule: it scrapes the manager with
// the ServiceMonitor's interval, path and honorLabels under the job and
// namespace labels the Operator gives, evaluates the chart's rendered
// rules, and scrapes the kube-apiserver's /metrics over TLS with a
// ServiceAccount token (what kube-prometheus does), for the alerts on the
// API server's webhook metrics.
type Prometheus struct {
	Addr    string
	API     promv1.API
	Process *Process
	// Job is the manager's scrape job: the metrics Service's name.
	Job string
	// Started is when the server started scraping.
	Started time.Time
}

// The Prometheus Operator's names for what it derives from a
// ServiceMonitor endpoint.
const (
	prometheusNamespace = "monitoring"
	prometheusSA        = "prometheus"
	// apiserverScrapeInterval is longer than the manager's: the API
	// server's /metrics is large.
	apiserverScrapeInterval = "2s"
)

// startPrometheus writes the configuration and the rules, starts the
// server and waits until both targets are scraped up.
func (s *Stack) startPrometheus(ctx context.Context) error {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		return errors.New("prometheus is not installed: run make deps (hack/install-deps.sh installs Debian's prometheus package)")
	}
	dir := filepath.Join(s.Dir, "prometheus")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}

	rules, err := s.chartRules()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o644); err != nil {
		return err
	}
	manager, job, err := s.managerScrapeConfig()
	if err != nil {
		return err
	}
	apiserver, err := s.apiserverScrapeConfig(ctx, dir)
	if err != nil {
		return err
	}
	cfg := map[string]any{
		"global": map[string]any{
			"scrape_interval":     "1s",
			"evaluation_interval": "1s",
		},
		"rule_files":     []string{"rules.yaml"},
		"scrape_configs": []any{manager, apiserver},
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
		return err
	}

	port, err := FreePort()
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	proc, err := startProcess(ctx, s.Dir, "prometheus", bin, []string{
		"--config.file=" + cfgPath,
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr,
		"--storage.tsdb.retention.time=1d",
	}, nil, "", 0)
	if err != nil {
		return err
	}
	s.Prometheus = &Prometheus{Addr: addr, Process: proc, Job: job, Started: time.Now()}
	if err := s.Prometheus.waitReady(ctx, 60*time.Second); err != nil {
		return err
	}
	c, err := promapi.NewClient(promapi.Config{Address: "http://" + addr})
	if err != nil {
		return err
	}
	s.Prometheus.API = promv1.NewAPI(c)
	if err := s.Prometheus.waitTargetsUp(ctx, 60*time.Second); err != nil {
		return err
	}
	s.logf("Prometheus (pid %d) on http://%s scraping the manager (job %s) and the API server, rules from the chart's PrometheusRule",
		proc.PID(), addr, job)
	return nil
}

// chartRules is the spec of the chart's PrometheusRule: a rule file.
func (s *Stack) chartRules() ([]byte, error) {
	pr := s.chartObjectOf("monitoring.coreos.com", "PrometheusRule")
	if pr == nil {
		return nil, errors.New("the chart rendered no PrometheusRule (prometheusRule.enabled)")
	}
	return yaml.Marshal(pr.Object["spec"])
}

// managerScrapeConfig is the scrape configuration the Prometheus Operator
// generates from the chart's ServiceMonitor, pointed at the manager
// process instead of pod endpoints: its interval, path and honorLabels,
// the job label from the Service it selects (its name), the Service's
// namespace as namespace.
func (s *Stack) managerScrapeConfig() (map[string]any, string, error) {
	sm := s.chartObjectOf("monitoring.coreos.com", "ServiceMonitor")
	if sm == nil {
		return nil, "", errors.New("the chart rendered no ServiceMonitor (serviceMonitor.enabled)")
	}
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 1 {
		return nil, "", fmt.Errorf("the ServiceMonitor has %d endpoints, want 1", len(eps))
	}
	ep, _ := eps[0].(map[string]any)
	port, _ := ep["port"].(string)
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	var svc *unstructured.Unstructured
	for _, o := range s.Chart {
		if o.GetKind() != "Service" || !hasLabels(o.GetLabels(), sel) {
			continue
		}
		ports, _, _ := unstructured.NestedSlice(o.Object, "spec", "ports")
		for _, p := range ports {
			if m, _ := p.(map[string]any); m["name"] == port {
				svc = o
			}
		}
	}
	if svc == nil {
		return nil, "", fmt.Errorf("no Service of the chart matches the ServiceMonitor's selector %v with a port %q", sel, port)
	}
	honor, _ := ep["honorLabels"].(bool)
	path, _ := ep["path"].(string)
	interval, _ := ep["interval"].(string)
	return map[string]any{
		"job_name":        "serviceMonitor/" + ReleaseNamespace + "/" + sm.GetName() + "/0",
		"honor_labels":    honor,
		"metrics_path":    path,
		"scrape_interval": interval,
		"static_configs": []any{map[string]any{
			"targets": []string{s.MetricsAddr},
			"labels": map[string]string{
				"job": svc.GetName(), "namespace": ReleaseNamespace, "service": svc.GetName(),
				"endpoint": port, "pod": "retention-guard-manager",
			},
		}},
	}, svc.GetName(), nil
}

func hasLabels(have, want map[string]string) bool {
	if len(want) == 0 {
		return false
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// apiserverScrapeConfig gives Prometheus what it needs to scrape the API
// server as in a cluster: a ServiceAccount whose ClusterRole grants get on
// the non-resource URL /metrics (and nothing else), its token, and the API
// server's CA.
func (s *Stack) apiserverScrapeConfig(ctx context.Context, dir string) (map[string]any, error) {
	c := s.Env.Client
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: prometheusNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: prometheusNamespace, Name: prometheusSA}},
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "prometheus-apiserver-metrics"},
			Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "prometheus-apiserver-metrics"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "prometheus-apiserver-metrics"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: prometheusNamespace, Name: prometheusSA}},
		},
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating %T %s for Prometheus: %w", o, o.GetName(), err)
		}
	}
	token, err := ServiceAccountToken(ctx, s.Env.Config, prometheusNamespace, prometheusSA)
	if err != nil {
		return nil, err
	}
	tokenFile, caFile := filepath.Join(dir, "apiserver.token"), filepath.Join(dir, "apiserver-ca.crt")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(caFile, s.Env.Config.CAData, 0o644); err != nil {
		return nil, err
	}
	host, err := hostOf(s.Env.Config.Host)
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"job_name":        "apiserver",
		"scheme":          "https",
		"scrape_interval": apiserverScrapeInterval,
		"authorization":   map[string]any{"credentials_file": tokenFile},
		"tls_config":      map[string]any{"ca_file": caFile},
		"static_configs":  []any{map[string]any{"targets": []string{host}}},
		// Only the admission webhook series: the rest of the API
		// server's metrics cost storage and nothing here reads them.
		"metric_relabel_configs": []any{map[string]any{
			"source_labels": []string{"__name__"},
			"regex":         "apiserver_admission_webhook_.*",
			"action":        "keep",
		}},
	}, nil
}

func (s *Stack) chartObjectOf(group, kind string) *unstructured.Unstructured {
	for _, o := range s.Chart {
		if o.GetKind() == kind && o.GroupVersionKind().Group == group {
			return o
		}
	}
	return nil
}

func (p *Prometheus) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	hc := &http.Client{Timeout: time.Second}
	for {
		if p.Process.Exited() {
			return fmt.Errorf("prometheus exited; log %s:\n%s", p.Process.LogPath, p.Process.Tail())
		}
		resp, err := hc.Get("http://" + p.Addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("prometheus is not ready after %s; log %s:\n%s", timeout, p.Process.LogPath, p.Process.Tail())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitTargetsUp waits until every target has been scraped successfully.
func (p *Prometheus) waitTargetsUp(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		tr, err := p.API.Targets(ctx)
		if err == nil && len(tr.Active) > 0 {
			up := 0
			var last string
			for _, t := range tr.Active {
				if t.Health == promv1.HealthGood {
					up++
				} else {
					last = fmt.Sprintf("%s %s: %s %s", t.ScrapePool, t.ScrapeURL, t.Health, t.LastError)
				}
			}
			if up == len(tr.Active) {
				return nil
			}
			err = errors.New(last)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("prometheus targets not all up after %s: %v; log %s:\n%s", timeout, err, p.Process.LogPath, p.Process.Tail())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
