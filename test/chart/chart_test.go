package chart_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/retentionguard/retention-guard/internal/webhookscope"
)

// combos are the value sets every rendering test and the dry-run apply
// go through.
var combos = map[string]map[string]any{
	"defaults":        nil,
	"certManager":     set("certManager.enabled", true),
	"webhookURL":      set("webhook.url", "https://10.0.0.1:9443", "webhook.caBundle", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"),
	"watchNamespaces": set("watchNamespaces", []any{"orders", "payments"}),
	"monitoring":      set("serviceMonitor.enabled", true, "prometheusRule.enabled", true, "grafanaDashboard.enabled", true),
	"noCRDs":          set("crds.enabled", false),
	"argoRollouts":    set("argoRollouts.enabled", true),
	"networkPolicy": set("networkPolicy.enabled", true, "allowedBootstrapServers", []any{"*.kafka.svc:9093"},
		"networkPolicy.egress", []any{map[string]any{
			"to":    []any{map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "kafka"}}}},
			"ports": []any{map[string]any{"port": 9093}},
		}}),
}

// guardsArgoRollouts reports whether a combination turns the Rollout
// rules on (argoRollouts.enabled true; auto renders them only where the
// cluster serves Rollouts, which a plain render does not).
func guardsArgoRollouts(name string) bool { return name == "argoRollouts" }

// withoutArgo drops the rules of the argoproj.io group, as the chart does
// unless it guards Argo Rollouts.
func withoutArgo[R any](rules []R, groups func(R) []string) []R {
	var out []R
	for _, r := range rules {
		if !slices.Contains(groups(r), "argoproj.io") {
			out = append(out, r)
		}
	}
	return out
}

func TestLint(t *testing.T) {
	for name, vals := range combos {
		t.Run(name, func(t *testing.T) {
			l := lint.RunAll(chartDir, vals, releaseNS)
			for _, m := range l.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint: %s", m)
				}
			}
		})
	}
}

func argValue(args []string, flag string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v, true
		}
		if a == flag {
			return "", true
		}
	}
	return "", false
}

func mustArg(t *testing.T, args []string, flag string) string {
	t.Helper()
	v, ok := argValue(args, flag)
	if !ok {
		t.Fatalf("manager args %v lack %s", args, flag)
	}
	return v
}

func managerDeployment(t *testing.T, m manifests) (*appsv1.Deployment, corev1.Container) {
	t.Helper()
	d := into[appsv1.Deployment](t, m.get(t, "Deployment", fullname))
	if n := len(d.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("%d containers, want 1", n)
	}
	return d, d.Spec.Template.Spec.Containers[0]
}

func webhookConfig(t *testing.T, m manifests) admissionv1.ValidatingWebhook {
	t.Helper()
	vwc := into[admissionv1.ValidatingWebhookConfiguration](t, m.get(t, "ValidatingWebhookConfiguration", fullname))
	if len(vwc.Webhooks) != 1 {
		t.Fatalf("%d webhooks, want 1", len(vwc.Webhooks))
	}
	return vwc.Webhooks[0]
}

// TestDefaults: what an installer relies on without setting a value.
func TestDefaults(t *testing.T) {
	m := render(t, nil)
	d, c := managerDeployment(t, m)
	pod := d.Spec.Template.Spec

	if *d.Spec.Replicas != 2 {
		t.Errorf("replicas %d, want 2", *d.Spec.Replicas)
	}
	if c.Args[0] != "manager" {
		t.Errorf("args %v do not run `retention-guard manager`", c.Args)
	}
	mustArg(t, c.Args, "--leader-elect")
	// Secure by default: no allow list reaches the manager, whose empty
	// default allows no inline or namespaced server and no cursor host.
	for _, flag := range []string{"--allowed-bootstrap-servers", "--allowed-cursor-hosts"} {
		if _, ok := argValue(c.Args, flag); ok {
			t.Errorf("%s set though the value is empty", flag)
		}
	}
	if m.find("NetworkPolicy", fullname) != nil {
		t.Error("a NetworkPolicy is rendered by default (it needs an enforcing CNI and the installer's egress rules)")
	}
	for flag, want := range map[string]string{
		"--metrics-bind-address": ":8080", "--health-probe-bind-address": ":8081",
		"--kafka-request-timeout": "10s", "--zap-log-level": "info", "--zap-encoder": "json",
		"--webhook-port": "9443", "--webhook-live-check-timeout": "3s", "--cert-rotation": "true",
		"--kube-api-qps": "100", "--kube-api-burst": "200", "--live-checks-per-connection": "4",
	} {
		if got := mustArg(t, c.Args, flag); got != want {
			t.Errorf("%s=%s, want %s", flag, got, want)
		}
	}
	if _, ok := argValue(c.Args, "--pprof-bind-address"); ok {
		t.Error("pprof is served by default")
	}

	// Restricted pod security.
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil ||
		psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v is not restricted", psc)
	}
	sc := c.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.Capabilities == nil || !reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("container securityContext %+v is not restricted", sc)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %+v lack requests or a memory limit", c.Resources)
	}

	// Probes on the probe port the manager binds.
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["probes"] != 8081 || ports["metrics"] != 8080 || ports["webhook"] != 9443 {
		t.Errorf("container ports %v, want probes 8081, metrics 8080, webhook 9443", ports)
	}
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		want := map[string]string{"liveness": "/healthz", "readiness": "/readyz"}[name]
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != want || p.HTTPGet.Port.StrVal != "probes" {
			t.Errorf("%s probe %+v, want GET %s on port probes", name, p, want)
		}
	}

	// The writable cert dir for the rotated certificate.
	certDir := mustArg(t, c.Args, "--webhook-cert-dir")
	var mounted bool
	for _, vm := range c.VolumeMounts {
		if vm.MountPath == certDir {
			mounted = true
			if vm.ReadOnly {
				t.Errorf("cert dir %s mounted read-only with built-in rotation", certDir)
			}
			for _, v := range pod.Volumes {
				if v.Name == vm.Name && v.EmptyDir == nil {
					t.Errorf("cert dir volume %+v is not an emptyDir", v)
				}
			}
		}
	}
	if !mounted {
		t.Errorf("nothing mounted at --webhook-cert-dir %s (the root filesystem is read-only)", certDir)
	}
	var podNS bool
	for _, e := range c.Env {
		podNS = podNS || (e.Name == "POD_NAMESPACE" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
			e.ValueFrom.FieldRef.FieldPath == "metadata.namespace")
	}
	if !podNS {
		t.Error("POD_NAMESPACE is not set from metadata.namespace (--namespace defaults to it)")
	}

	// Spread over nodes, without refusing to schedule.
	podLabels := labels.Set(d.Spec.Template.Labels)
	if len(pod.TopologySpreadConstraints) != 1 {
		t.Fatalf("topologySpreadConstraints %+v", pod.TopologySpreadConstraints)
	}
	tsc := pod.TopologySpreadConstraints[0]
	if tsc.TopologyKey != "kubernetes.io/hostname" || tsc.WhenUnsatisfiable != corev1.ScheduleAnyway || !selects(t, tsc.LabelSelector, podLabels) {
		t.Errorf("topologySpreadConstraint %+v", tsc)
	}
	if !selects(t, d.Spec.Selector, podLabels) {
		t.Errorf("Deployment selector does not select its pods")
	}

	// A stopping replica keeps serving while its endpoint leaves the
	// Service: a rolling update refuses no admission (the real node's helm
	// upgrade saw one "connection refused" without it).
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil ||
		c.Lifecycle.PreStop.Sleep.Seconds != 5 || int64(5) >= ptr.Deref(pod.TerminationGracePeriodSeconds, 30) {
		t.Errorf("preStop %+v, want a 5 s sleep within terminationGracePeriodSeconds %v", c.Lifecycle, pod.TerminationGracePeriodSeconds)
	}
	if c := into[appsv1.Deployment](t, render(t, set("webhook.drainSeconds", 0)).get(t, "Deployment", fullname)).Spec.Template.Spec.Containers[0]; c.Lifecycle != nil {
		t.Errorf("webhook.drainSeconds 0 still renders %+v", c.Lifecycle)
	}

	pdb := into[policyv1.PodDisruptionBudget](t, m.get(t, "PodDisruptionBudget", fullname))
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 || !selects(t, pdb.Spec.Selector, podLabels) {
		t.Errorf("PodDisruptionBudget %+v, want minAvailable 1 over the manager's pods", pdb.Spec)
	}

	// The Service sends 443 to the webhook port and exposes metrics.
	svcName := mustArg(t, c.Args, "--webhook-service-name")
	svc := into[corev1.Service](t, m.get(t, "Service", svcName))
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) {
		t.Errorf("Service selector %v does not select the manager's pods", svc.Spec.Selector)
	}
	sp := map[string]corev1.ServicePort{}
	for _, p := range svc.Spec.Ports {
		sp[p.Name] = p
	}
	if sp["webhook"].Port != 443 || sp["webhook"].TargetPort.StrVal != "webhook" || sp["metrics"].Port != 8080 {
		t.Errorf("Service ports %+v, want webhook 443→webhook, metrics 8080", svc.Spec.Ports)
	}

	// The webhook configuration.
	wh := webhookConfig(t, m)
	if *wh.FailurePolicy != admissionv1.Fail || *wh.SideEffects != admissionv1.SideEffectClassNoneOnDryRun || *wh.TimeoutSeconds != 5 {
		t.Errorf("failurePolicy %s, sideEffects %s, timeoutSeconds %d; want Fail, NoneOnDryRun, 5",
			*wh.FailurePolicy, *wh.SideEffects, *wh.TimeoutSeconds)
	}
	if s := wh.ClientConfig.Service; s == nil || s.Name != svcName || s.Namespace != releaseNS || *s.Port != 443 || wh.ClientConfig.URL != nil {
		t.Errorf("clientConfig %+v, want the Service %s/%s:443", wh.ClientConfig, releaseNS, svcName)
	}
	if len(wh.ClientConfig.CABundle) != 0 {
		t.Errorf("caBundle set by the chart: the rotator injects it, and Helm would fight it on upgrade")
	}
	if got := mustArg(t, c.Args, "--webhook-configuration-name"); got != fullname {
		t.Errorf("--webhook-configuration-name=%s, the chart's configuration is %s", got, fullname)
	}

	// The certificate Secret exists (empty) for the rotator to fill.
	secretName := mustArg(t, c.Args, "--cert-secret-name")
	if s := m.get(t, "Secret", secretName); s.GetNamespace() != releaseNS {
		t.Errorf("cert Secret in %s", s.GetNamespace())
	}

	// The CRD, updated on upgrade and kept on uninstall.
	crd := m.get(t, "CustomResourceDefinition", "consumerretentionpolicies.retentionguard.io")
	if crd.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
		t.Errorf("CRD annotations %v lack helm.sh/resource-policy: keep", crd.GetAnnotations())
	}

	if !strings.Contains(m.notes, "kind: ConsumerRetentionPolicy") || !strings.Contains(m.notes, "kubectl get crp") {
		t.Errorf("NOTES.txt does not show a first policy and `kubectl get crp`:\n%s", m.notes)
	}
}

func selects(t *testing.T, sel *metav1.LabelSelector, set labels.Set) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatal(err)
	}
	return !s.Empty() && s.Matches(set)
}

// TestNamespaceSelector evaluates the webhook's namespaceSelector the way
// the API server does, against namespaces' labels.
func TestNamespaceSelector(t *testing.T) {
	ns := func(name string, extra ...string) labels.Set {
		l := labels.Set{"kubernetes.io/metadata.name": name}
		for i := 0; i < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	for _, tc := range []struct {
		combo  string
		vals   map[string]any
		called map[string]labels.Set
		not    map[string]labels.Set
	}{
		{"defaults", nil,
			map[string]labels.Set{"orders": ns("orders"), "ignore=false": ns("orders", "retentionguard.io/ignore", "false")},
			map[string]labels.Set{
				"kube-system": ns("kube-system"), "kube-node-lease": ns("kube-node-lease"),
				"the release namespace": ns(releaseNS), "ignore=true": ns("orders", "retentionguard.io/ignore", "true"),
			}},
		{"watchNamespaces", set("watchNamespaces", []any{"orders"}),
			map[string]labels.Set{"orders": ns("orders")},
			map[string]labels.Set{"unwatched": ns("payments"), "ignore=true": ns("orders", "retentionguard.io/ignore", "true")}},
		{"extra matchExpressions", set("webhook.namespaceSelector.matchExpressions",
			[]any{map[string]any{"key": "team", "operator": "In", "values": []any{"kafka"}}}),
			map[string]labels.Set{"team=kafka": ns("orders", "team", "kafka")},
			map[string]labels.Set{"other team": ns("orders", "team", "web"), "kube-system": ns("kube-system", "team", "kafka")}},
	} {
		t.Run(tc.combo, func(t *testing.T) {
			wh := webhookConfig(t, render(t, tc.vals))
			sel, err := metav1.LabelSelectorAsSelector(wh.NamespaceSelector)
			if err != nil {
				t.Fatal(err)
			}
			for name, l := range tc.called {
				if !sel.Matches(l) {
					t.Errorf("webhook not called for %s (%v); selector %s", name, l, sel)
				}
			}
			for name, l := range tc.not {
				if sel.Matches(l) {
					t.Errorf("webhook called for %s (%v); selector %s", name, l, sel)
				}
			}
		})
	}
}

// TestWebhookMatchesGenerated: rules, matchConditions, path and matchPolicy
// are those controller-gen generates from webhook/setup.go's marker, so the
// chart cannot drift from the handler's own expectations; the chart adds
// one matchCondition, guarded-namespaces, which the manager maintains
// (internal/webhookscope) and which a fresh install renders guarding no
// namespace.
func TestWebhookMatchesGenerated(t *testing.T) {
	gen := generated[admissionv1.ValidatingWebhookConfiguration](t, "config/webhook/manifests.yaml").Webhooks[0]
	want := append(slices.Clone(gen.MatchConditions), admissionv1.MatchCondition{
		Name: webhookscope.ConditionName, Expression: webhookscope.Expression(nil)})
	for name, vals := range combos {
		t.Run(name, func(t *testing.T) {
			wh := webhookConfig(t, render(t, vals))
			if len(gen.MatchConditions) == 0 || !reflect.DeepEqual(wh.MatchConditions, want) {
				t.Errorf("matchConditions differ from config/webhook/manifests.yaml's plus guarded-namespaces:\nchart: %+v\nwant: %+v", wh.MatchConditions, want)
			}
			wantRules := gen.Rules
			if !guardsArgoRollouts(name) {
				wantRules = withoutArgo(gen.Rules, func(r admissionv1.RuleWithOperations) []string { return r.APIGroups })
			}
			if !reflect.DeepEqual(wh.Rules, wantRules) {
				t.Errorf("rules differ from config/webhook/manifests.yaml:\nchart: %+v\ngenerated: %+v", wh.Rules, wantRules)
			}
			if got := rulesCoverVersion(wh.Rules, "argoproj.io/rollouts", "v1alpha1") && rulesCoverVersion(wh.Rules, "argoproj.io/rollouts/scale", "v1alpha1"); got != guardsArgoRollouts(name) {
				t.Errorf("the webhook rules cover Argo Rollouts: %v, want %v (argoRollouts.enabled)", got, guardsArgoRollouts(name))
			}
			// Issue #8: the batch consumers are guarded like Deployments.
			for _, want := range []string{"apps/deployments", "apps/statefulsets", "apps/deployments/scale",
				"apps/statefulsets/scale", "batch/jobs", "batch/cronjobs"} {
				if !rulesCover(wh.Rules, want) {
					t.Errorf("the chart's webhook rules do not cover %s on CREATE and UPDATE: %+v", want, wh.Rules)
				}
			}
			if wh.Name != gen.Name || *wh.MatchPolicy != *gen.MatchPolicy || !reflect.DeepEqual(wh.AdmissionReviewVersions, gen.AdmissionReviewVersions) {
				t.Errorf("name/matchPolicy/admissionReviewVersions %s %s %v, generated %s %s %v",
					wh.Name, *wh.MatchPolicy, wh.AdmissionReviewVersions, gen.Name, *gen.MatchPolicy, gen.AdmissionReviewVersions)
			}
			path := ""
			if wh.ClientConfig.Service != nil {
				path = *wh.ClientConfig.Service.Path
			} else if wh.ClientConfig.URL != nil {
				path = *wh.ClientConfig.URL
			}
			if !strings.HasSuffix(path, *gen.ClientConfig.Service.Path) {
				t.Errorf("webhook path %q does not end in the handler's %q", path, *gen.ClientConfig.Service.Path)
			}
		})
	}
}

// rulesCover: some rule covers group/resource at v1 on CREATE and UPDATE.
func rulesCover(rules []admissionv1.RuleWithOperations, groupResource string) bool {
	return rulesCoverVersion(rules, groupResource, "v1")
}

func rulesCoverVersion(rules []admissionv1.RuleWithOperations, groupResource, version string) bool {
	group, resource, _ := strings.Cut(groupResource, "/")
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.APIVersions, version) && slices.Contains(r.Resources, resource) &&
			slices.Contains(r.Operations, admissionv1.Create) && slices.Contains(r.Operations, admissionv1.Update) {
			return true
		}
	}
	return false
}

// TestRBACMatchesGenerated: the manager's ClusterRole is exactly what the
// +kubebuilder:rbac markers generate.
func TestRBACMatchesGenerated(t *testing.T) {
	gen := generated[rbacv1.ClusterRole](t, "config/rbac/role.yaml")
	for name, vals := range combos {
		t.Run(name, func(t *testing.T) {
			cr := into[rbacv1.ClusterRole](t, render(t, vals).get(t, "ClusterRole", fullname+"-manager"))
			want := gen.Rules
			if !guardsArgoRollouts(name) {
				// Reading Rollouts only where they are guarded.
				want = withoutArgo(gen.Rules, func(r rbacv1.PolicyRule) []string { return r.APIGroups })
			}
			if !reflect.DeepEqual(cr.Rules, want) {
				t.Errorf("ClusterRole rules differ from config/rbac/role.yaml:\nchart: %+v\ngenerated: %+v", cr.Rules, want)
			}
		})
	}
}

// crdFiles are the CRDs controller-gen generates, all in the chart.
var crdFiles = []string{
	"config/crd/bases/retentionguard.io_consumerretentionpolicies.yaml",
	"config/crd/bases/retentionguard.io_clusterkafkaconnections.yaml",
	"config/crd/bases/retentionguard.io_kafkaconnections.yaml",
}

// TestCRDMatchesGenerated: the chart's CRDs are config/crd/bases' specs.
func TestCRDMatchesGenerated(t *testing.T) {
	for _, f := range crdFiles {
		gen := generated[apiextensionsv1.CustomResourceDefinition](t, f)
		crd := into[apiextensionsv1.CustomResourceDefinition](t, render(t, nil).get(t, "CustomResourceDefinition", gen.Name))
		if !reflect.DeepEqual(crd.Spec, gen.Spec) {
			t.Errorf("the chart's CRD %s differs from config/crd/bases: run make manifests", gen.Name)
		}
	}
}

func TestCRDsToggles(t *testing.T) {
	if crds := render(t, set("crds.enabled", false)).all("CustomResourceDefinition"); len(crds) != 0 {
		t.Errorf("crds.enabled=false rendered %d CRDs", len(crds))
	}
	crds := render(t, set("crds.keep", false)).all("CustomResourceDefinition")
	if len(crds) != len(crdFiles) {
		t.Errorf("crds.keep=false rendered %d CRDs, want %d", len(crds), len(crdFiles))
	}
	for _, crd := range crds {
		if crd.GetAnnotations()["helm.sh/resource-policy"] != "" {
			t.Errorf("crds.keep=false: CRD %s annotations %v", crd.GetName(), crd.GetAnnotations())
		}
	}
	for _, crd := range render(t, nil).all("CustomResourceDefinition") {
		if crd.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
			t.Errorf("defaults: CRD %s is not kept on uninstall", crd.GetName())
		}
	}
}

// TestRotationRBAC: built-in rotation may update only its own webhook
// configuration and Secret; cert-manager mode grants neither.
func TestRotationRBAC(t *testing.T) {
	m := render(t, nil)
	_, c := managerDeployment(t, m)
	cr := into[rbacv1.ClusterRole](t, m.get(t, "ClusterRole", fullname+"-cert-rotation"))
	role := into[rbacv1.Role](t, m.get(t, "Role", fullname+"-cert-rotation"))
	if role.Namespace != releaseNS {
		t.Errorf("cert Role in %q", role.Namespace)
	}
	checkUpdateOnlyNamed(t, cr.Rules, "validatingwebhookconfigurations", mustArg(t, c.Args, "--webhook-configuration-name"))
	checkUpdateOnlyNamed(t, role.Rules, "secrets", mustArg(t, c.Args, "--cert-secret-name"))
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		b := into[rbacv1.RoleBinding](t, m.get(t, kind, fullname+"-cert-rotation"))
		if b.Subjects[0].Name != fullname || b.Subjects[0].Namespace != releaseNS {
			t.Errorf("%s binds %+v", kind, b.Subjects)
		}
	}
	lr := into[rbacv1.Role](t, m.get(t, "Role", fullname+"-leader-election"))
	if lr.Namespace != releaseNS || lr.Rules[0].Resources[0] != "leases" {
		t.Errorf("leader election Role %+v", lr)
	}

	cm := render(t, set("certManager.enabled", true))
	for _, kind := range []string{"ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding"} {
		if cm.find(kind, fullname+"-cert-rotation") != nil {
			t.Errorf("certManager.enabled still renders the rotation %s", kind)
		}
	}
}

// TestWebhookScopeAndLeaseRBAC: in every mode the manager may patch its own
// webhook configuration only (to keep guarded-namespaces), and its leader
// Lease is an object of the release, so helm uninstall deletes it.
func TestWebhookScopeAndLeaseRBAC(t *testing.T) {
	for name, vals := range combos {
		t.Run(name, func(t *testing.T) {
			m := render(t, vals)
			_, c := managerDeployment(t, m)
			vwcName := mustArg(t, c.Args, "--webhook-configuration-name")
			m.get(t, "ValidatingWebhookConfiguration", vwcName)
			cr := into[rbacv1.ClusterRole](t, m.get(t, "ClusterRole", fullname+"-webhook-scope"))
			checkUpdateOnlyNamed(t, cr.Rules, "validatingwebhookconfigurations", vwcName)
			b := into[rbacv1.ClusterRoleBinding](t, m.get(t, "ClusterRoleBinding", fullname+"-webhook-scope"))
			if b.RoleRef.Name != cr.Name || b.Subjects[0].Name != fullname || b.Subjects[0].Namespace != releaseNS {
				t.Errorf("webhook-scope binding %+v", b)
			}
			lease := m.get(t, "Lease", mustArg(t, c.Args, "--leader-election-id"))
			if lease.GetNamespace() != releaseNS {
				t.Errorf("the leader Lease is in %q, the manager elects in %q", lease.GetNamespace(), releaseNS)
			}
			if _, ok := lease.Object["spec"]; ok {
				t.Error("the chart sets the Lease's spec: the replicas own it; Helm would fight them on upgrade")
			}
		})
	}
}

func checkUpdateOnlyNamed(t *testing.T, rules []rbacv1.PolicyRule, resource, name string) {
	t.Helper()
	var named bool
	for _, r := range rules {
		if !slices.Contains(r.Resources, resource) {
			continue
		}
		for _, v := range r.Verbs {
			if v != "get" && v != "list" && v != "watch" {
				if !reflect.DeepEqual(r.ResourceNames, []string{name}) {
					t.Errorf("%s %s allowed on %v, want only %q", resource, v, r.ResourceNames, name)
				}
				named = true
			}
		}
	}
	if !named {
		t.Errorf("no update of %s %q granted", resource, name)
	}
}

func TestCertManager(t *testing.T) {
	m := render(t, set("certManager.enabled", true))
	d, c := managerDeployment(t, m)
	if got := mustArg(t, c.Args, "--cert-rotation"); got != "false" {
		t.Errorf("--cert-rotation=%s with cert-manager", got)
	}
	if m.find("Secret", fullname+"-webhook-cert") != nil {
		t.Error("cert-manager mode renders the empty rotation Secret (cert-manager owns it)")
	}
	if n := len(m.all("Issuer")); n != 2 {
		t.Errorf("%d Issuers, want a self-signed and a CA Issuer", n)
	}
	ca := m.get(t, "Certificate", fullname+"-ca")
	if !boolean(ca.Object, "spec", "isCA") {
		t.Error("the CA Certificate is not isCA")
	}
	serving := m.get(t, "Certificate", fullname+"-webhook")
	secretName := str(serving.Object, "spec", "secretName")
	issuer := str(serving.Object, "spec", "issuerRef", "name")
	caSecret := str(ca.Object, "spec", "secretName")
	caIssuer := m.get(t, "Issuer", issuer)
	if s := str(caIssuer.Object, "spec", "ca", "secretName"); s != caSecret {
		t.Errorf("serving Certificate's issuer %s signs with %q, the CA is in %q", issuer, s, caSecret)
	}
	dns := strs(serving.Object, "spec", "dnsNames")
	svc := fullname + "-webhook." + releaseNS + ".svc"
	if !slices.Contains(dns, svc) {
		t.Errorf("serving Certificate dnsNames %v lack %s (what the API server dials)", dns, svc)
	}
	vwc := m.get(t, "ValidatingWebhookConfiguration", fullname)
	if got, want := vwc.GetAnnotations()["cert-manager.io/inject-ca-from"], releaseNS+"/"+serving.GetName(); got != want {
		t.Errorf("inject-ca-from %q, want %q", got, want)
	}
	certDir := mustArg(t, c.Args, "--webhook-cert-dir")
	var ok bool
	for _, vm := range c.VolumeMounts {
		for _, v := range d.Spec.Template.Spec.Volumes {
			if vm.MountPath == certDir && v.Name == vm.Name && v.Secret != nil && v.Secret.SecretName == secretName {
				ok = true
			}
		}
	}
	if !ok {
		t.Errorf("the Secret %s is not mounted at %s", secretName, certDir)
	}
}

func TestWebhookURL(t *testing.T) {
	pem := "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	wh := webhookConfig(t, render(t, set("webhook.url", "https://10.0.0.1:9443/", "webhook.caBundle", pem)))
	if wh.ClientConfig.Service != nil || wh.ClientConfig.URL == nil || *wh.ClientConfig.URL != "https://10.0.0.1:9443/validate-apps-v1-workloads" {
		t.Errorf("clientConfig %+v, want url https://10.0.0.1:9443/validate-apps-v1-workloads", wh.ClientConfig)
	}
	if string(wh.ClientConfig.CABundle) != pem {
		t.Errorf("caBundle %q, want the PEM given", wh.ClientConfig.CABundle)
	}
	// The rendered YAML carries it base64-encoded, as the API expects.
	files, err := renderErr(t, set("webhook.caBundle", pem))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(files["retention-guard/templates/webhook.yaml"], base64.StdEncoding.EncodeToString([]byte(pem))) {
		t.Error("caBundle is not base64 in the manifest")
	}

	// A caBundle of one's own turns the rotation off: the rotator would
	// overwrite it with its own CA.
	m := render(t, set("webhook.caBundle", pem))
	d, c := managerDeployment(t, m)
	if got := mustArg(t, c.Args, "--cert-rotation"); got != "false" {
		t.Errorf("--cert-rotation=%s with webhook.caBundle set", got)
	}
	if m.find("Secret", fullname+"-webhook-cert") != nil || m.find("ClusterRole", fullname+"-cert-rotation") != nil {
		t.Error("webhook.caBundle set, yet the rotation Secret or RBAC is rendered")
	}
	var mounted bool
	for _, v := range d.Spec.Template.Spec.Volumes {
		mounted = mounted || (v.Secret != nil && v.Secret.SecretName == fullname+"-webhook-cert")
	}
	if !mounted {
		t.Errorf("webhook.caBundle set: the installer's Secret %s-webhook-cert is not mounted", fullname)
	}
}

func TestValuesReachTheManager(t *testing.T) {
	m := render(t, set(
		"allowedBootstrapServers", []any{"*.kafka.svc:9093", "kafka-?.prod:9092"},
		"allowedCursorHosts", []any{"*.db.svc:5432", "mariadb-?.prod:3306"},
		"watchNamespaces", []any{"orders", "payments"},
		"logLevel", "debug", "logEncoder", "console", "kafkaRequestTimeout", "20s",
		"webhook.failurePolicy", "Ignore", "webhook.timeoutSeconds", 3, "webhook.liveCheckTimeout", "2s",
		"replicaCount", 3, "image.tag", "v9.9.9",
		"kubeAPI.qps", 40, "kubeAPI.burst", 80, "pprof.enabled", true, "liveChecksPerConnection", 8,
	))
	d, c := managerDeployment(t, m)
	for flag, want := range map[string]string{
		"--allowed-bootstrap-servers": "*.kafka.svc:9093,kafka-?.prod:9092", "--watch-namespaces": "orders,payments",
		"--allowed-cursor-hosts": "*.db.svc:5432,mariadb-?.prod:3306",
		"--zap-log-level":        "debug", "--zap-encoder": "console", "--kafka-request-timeout": "20s",
		"--webhook-live-check-timeout": "2s",
		"--kube-api-qps":               "40", "--kube-api-burst": "80", "--pprof-bind-address": "127.0.0.1:8082",
		"--live-checks-per-connection": "8",
	} {
		if got := mustArg(t, c.Args, flag); got != want {
			t.Errorf("%s=%s, want %s", flag, got, want)
		}
	}
	if *d.Spec.Replicas != 3 || !strings.HasSuffix(c.Image, ":v9.9.9") {
		t.Errorf("replicas %d image %s", *d.Spec.Replicas, c.Image)
	}
	wh := webhookConfig(t, m)
	if *wh.FailurePolicy != admissionv1.Ignore || *wh.TimeoutSeconds != 3 {
		t.Errorf("failurePolicy %s timeoutSeconds %d", *wh.FailurePolicy, *wh.TimeoutSeconds)
	}
	// watchNamespaces: read access only there.
	if m.find("ClusterRoleBinding", fullname+"-manager") != nil {
		t.Error("watchNamespaces set, yet the manager ClusterRole is bound cluster-wide")
	}
	for _, ns := range []string{"orders", "payments"} {
		var found bool
		for _, rb := range m.all("RoleBinding") {
			b := into[rbacv1.RoleBinding](t, rb)
			found = found || (b.Namespace == ns && b.RoleRef.Kind == "ClusterRole" && b.RoleRef.Name == fullname+"-manager")
		}
		if !found {
			t.Errorf("no RoleBinding of the manager ClusterRole in %s", ns)
		}
	}
	if render(t, nil).find("ClusterRoleBinding", fullname+"-manager") == nil {
		t.Error("defaults: the manager ClusterRole is not bound")
	}
	// ClusterKafkaConnections are cluster-scoped and keep their Secrets in
	// the release namespace: read whatever namespaces are watched.
	if m.find("ClusterRoleBinding", fullname+"-cluster-connections") == nil {
		t.Error("watchNamespaces set: ClusterKafkaConnections and namespaces cannot be read")
	}
	var inRelease bool
	for _, rb := range m.all("RoleBinding") {
		b := into[rbacv1.RoleBinding](t, rb)
		inRelease = inRelease || (b.Name == fullname+"-manager" && b.RoleRef.Name == fullname+"-manager" && !slices.Contains([]string{"orders", "payments"}, b.Namespace))
	}
	if !inRelease {
		t.Error("watchNamespaces set: no RoleBinding of the manager ClusterRole in the release namespace, where ClusterKafkaConnections' Secrets live")
	}
}

func TestSingleReplicaHasNoPDB(t *testing.T) {
	if pdbs := render(t, set("replicaCount", 1)).all("PodDisruptionBudget"); len(pdbs) != 0 {
		t.Error("a PodDisruptionBudget with minAvailable 1 over 1 replica would block every node drain")
	}
	if pdbs := render(t, set("podDisruptionBudget.enabled", false)).all("PodDisruptionBudget"); len(pdbs) != 0 {
		t.Error("podDisruptionBudget.enabled=false still renders one")
	}
}

// metricName finds the metric names in a PromQL expression (its quoted
// label values removed, see quoted): ours and controller-runtime's by
// prefix, and any name written with a selector (`name{`), so that a metric
// from elsewhere is checked too.
var (
	metricName = regexp.MustCompile(`\b(?:retentionguard_[a-z_]+|controller_runtime_[a-z_]+)\b|\b[a-zA-Z_:][a-zA-Z0-9_:]*\{`)
	quoted     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
)

// externalMetrics are the metrics alerts and the dashboard may name that
// our Go code does not register. Keep it short: each entry is a metric
// that signals what ours cannot.
var externalMetrics = []string{
	// kube-apiserver: a webhook call that failed (unreachable, TLS,
	// timeout) and, with failurePolicy Fail, rejected the request.
	// controller-runtime answers HTTP 200 even when the handler errs, so
	// only the API server sees that it got no answer.
	"apiserver_admission_webhook_rejection_count",
	// kube-apiserver: with failurePolicy Ignore, a failed call lets the
	// request through; only this counts it.
	"apiserver_admission_webhook_fail_open_count",
	// kube-apiserver: every call to the webhook, by HTTP code (the
	// dashboard's view of the webhook from the API server's side).
	"apiserver_admission_webhook_request_total",
	// Prometheus: whether the manager's metrics target was scraped.
	"up",
}

// knownMetrics are the metric names the Go code registers (the Name of
// a collector's options, the name of a per-policy family), and
// externalMetrics.
func knownMetrics(t *testing.T) map[string]bool {
	t.Helper()
	known := map[string]bool{}
	for _, m := range externalMetrics {
		known[m] = true
	}
	for _, f := range []string{"controllers/metrics.go", "webhook/metrics.go"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?:Name|name):\s+"(retentionguard_[a-z_]+)"`).FindAllStringSubmatch(string(b), -1) {
			known[m[1]] = true
		}
	}
	return known
}

// The absolute series alerts and panels read the time left from.
const (
	headroomAt = "retentionguard_recovery_headroom_expiration_timestamp_seconds"
	offsetsAt  = "retentionguard_group_offsets_expiration_timestamp_seconds"
)

// expirationRead is an absolute series as an expression reads it, with
// its selector and what follows.
var expirationRead = regexp.MustCompile(`retentionguard_[a-z_]+_expiration_timestamp_seconds(\{[^}]*\})?( - time\(\))?`)

// checkTimeLeft: every absolute series an expression reads is turned into
// the time left (minus time()), which is right between checks, where a
// relative gauge is as old as the last check.
func checkTimeLeft(t *testing.T, where, expr string) {
	t.Helper()
	for _, m := range expirationRead.FindAllStringSubmatch(expr, -1) {
		if m[2] == "" {
			t.Errorf("%s reads %s as is: compare (it - time()), the time left", where, m[0])
		}
	}
}

// deprecatedMetrics are registered one more release for users' own
// dashboards; the chart reads their successors.
var deprecatedMetrics = map[string]string{
	"retentionguard_recovery_headroom_seconds":    "retentionguard_recovery_headroom_expiration_timestamp_seconds",
	"retentionguard_group_offsets_expiry_seconds": "retentionguard_group_offsets_expiration_timestamp_seconds",
}

func checkNotDeprecated(t *testing.T, where, text string) {
	t.Helper()
	for _, n := range metricName.FindAllString(quoted.ReplaceAllString(text, `""`), -1) {
		if use, ok := deprecatedMetrics[strings.TrimSuffix(n, "{")]; ok {
			t.Errorf("%s reads the deprecated %s, which is as old as the last check: use %s - time()", where, n, use)
		}
	}
}

func checkMetrics(t *testing.T, where, text string, known map[string]bool) {
	t.Helper()
	names := metricName.FindAllString(quoted.ReplaceAllString(text, `""`), -1)
	if len(names) == 0 {
		t.Errorf("%s names no metric", where)
	}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimSuffix(n, "{"), "_bucket")
		if !known[base] {
			t.Errorf("%s uses %s, which no Go code registers", where, n)
		}
	}
}

func TestMonitoring(t *testing.T) {
	if m := render(t, nil); len(m.all("ServiceMonitor"))+len(m.all("PrometheusRule"))+len(m.all("ConfigMap")) != 0 {
		t.Error("monitoring objects rendered by default (their CRDs may not exist)")
	}
	m := render(t, combos["monitoring"])
	known := knownMetrics(t)

	sm := m.get(t, "ServiceMonitor", fullname)
	eps := slice(sm.Object, "spec", "endpoints")
	if len(eps) != 1 || eps[0].(map[string]any)["port"] != "metrics" {
		t.Errorf("ServiceMonitor endpoints %v, want the metrics port", eps)
	}
	// The policies' series have their own namespace label; without
	// honorLabels the Prometheus Operator's target label (the release's
	// namespace) replaces it and every alert's namespace is wrong.
	if len(eps) == 1 && eps[0].(map[string]any)["honorLabels"] != true {
		t.Errorf("ServiceMonitor endpoint %v lacks honorLabels: true", eps[0])
	}

	pr := m.get(t, "PrometheusRule", fullname)
	groups := slice(pr.Object, "spec", "groups")
	alerts := map[string]string{}
	for _, g := range groups {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			rule := r.(map[string]any)
			alerts[rule["alert"].(string)] = fmt.Sprint(rule["expr"])
			for _, a := range rule["annotations"].(map[string]any) {
				if s := fmt.Sprint(a); strings.Contains(s, "{{") && !strings.Contains(s, "$labels") && !strings.Contains(s, "$value") {
					t.Errorf("alert %s annotation %q has a template Prometheus would not expand", rule["alert"], s)
				}
			}
		}
	}
	for _, want := range []string{
		"RetentionGuardPolicyViolated", "RetentionGuardPolicyUnknown", "RetentionGuardRecoveryHeadroomLow",
		"RetentionGuardGroupOffsetsExpireWithinADay", "RetentionGuardEmptyGroupNearingOffsetsRetention",
		"RetentionGuardWebhookDenying", "RetentionGuardWebhookFailingClosed", "RetentionGuardWebhookErrors",
		"RetentionGuardManagerDown", "RetentionGuardOffsetsTopicUnreadable", "RetentionGuardLiveChecksBusy",
		"RetentionGuardLogDivergedBelowGroup",
	} {
		expr, ok := alerts[want]
		if !ok {
			t.Errorf("no alert %s", want)
			continue
		}
		checkMetrics(t, "alert "+want, expr, known)
	}
	// controller-runtime answers HTTP 200 with the error inside the
	// AdmissionReview, so its code="500" never comes: the API server's
	// rejections for failed calls to our webhook, by its name, do.
	mustContainAll(t, "alert RetentionGuardWebhookErrors", alerts["RetentionGuardWebhookErrors"],
		`apiserver_admission_webhook_rejection_count{name="workloads.retentionguard.io", error_type=~"calling_webhook_error|apiserver_internal_error"}`, "> 0")
	// The ServiceMonitor's job label is the Service's name.
	mustContainAll(t, "alert RetentionGuardManagerDown", alerts["RetentionGuardManagerDown"],
		`up{job="`+fullname+`-webhook", namespace="`+releaseNS+`"}`)
	// The headroom and expiry alerts compare the time left, from the
	// absolute series (right between checks), with the policy's own window.
	for a, at := range map[string]string{"RetentionGuardRecoveryHeadroomLow": headroomAt,
		"RetentionGuardEmptyGroupNearingOffsetsRetention": offsetsAt, "RetentionGuardGroupOffsetsExpireWithinADay": offsetsAt} {
		mustContainAll(t, "alert "+a, alerts[a], at, "retentionguard_policy_recovery_window_seconds")
	}
	for name, expr := range alerts {
		checkNotDeprecated(t, "alert "+name, expr)
		checkTimeLeft(t, "alert "+name, expr)
	}
	for name, expr := range alerts {
		if strings.Contains(expr, "controller_runtime_webhook_requests_total") {
			t.Errorf("alert %s watches controller_runtime_webhook_requests_total, whose code is always 200: %s", name, expr)
		}
	}
	// Without the ServiceMonitor the job label is unknown: no target alert.
	noSM := render(t, set("prometheusRule.enabled", true))
	for _, g := range slice(noSM.get(t, "PrometheusRule", fullname).Object, "spec", "groups") {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			if r.(map[string]any)["alert"] == "RetentionGuardManagerDown" {
				t.Error("RetentionGuardManagerDown rendered without the ServiceMonitor, whose job label it needs")
			}
		}
	}

	cm := into[corev1.ConfigMap](t, m.get(t, "ConfigMap", fullname+"-dashboard"))
	if cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap labels %v lack grafana_dashboard: \"1\"", cm.Labels)
	}
	var dash struct {
		Templating struct {
			List []struct{ Name, Query string }
		}
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal([]byte(cm.Data["retention-guard.json"]), &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	whName := generated[admissionv1.ValidatingWebhookConfiguration](t, "config/webhook/manifests.yaml").Webhooks[0].Name
	for _, v := range dash.Templating.List {
		if v.Name == "namespace" {
			checkMetrics(t, "dashboard variable namespace", strings.NewReplacer("label_values(", "", ",", "{").Replace(v.Query), known)
		}
	}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("dashboard panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			checkMetrics(t, "dashboard panel "+p.Title, tg.Expr, known)
			checkNotDeprecated(t, "dashboard panel "+p.Title, tg.Expr)
			checkTimeLeft(t, "dashboard panel "+p.Title, tg.Expr)
			if strings.Contains(tg.Expr, "controller_runtime_webhook_requests_total") {
				t.Errorf("dashboard panel %s watches controller_runtime_webhook_requests_total, whose code is always 200", p.Title)
			}
			if strings.Contains(tg.Expr, "apiserver_admission_webhook") && !strings.Contains(tg.Expr, `name="`+whName+`"`) {
				t.Errorf("dashboard panel %s reads the API server's webhook metrics without name=%q: %s", p.Title, whName, tg.Expr)
			}
		}
	}
	// What the dashboard answers at a glance: which groups can lose data
	// (verdict per policy), how soon (headroom and offsets expiry against
	// the window), what was lost, what is refused.
	exprs := map[string]string{}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs[p.Title] += tg.Expr + "\n"
		}
	}
	for title, metrics := range map[string][]string{
		"Which groups can lose data, and how soon": {"retentionguard_policy_verdict", headroomAt,
			"retentionguard_policy_recovery_window_seconds", offsetsAt, "retentionguard_expired_records",
			"retentionguard_policy_info"},
		"Headroom against the window (below 1: data at risk)":          {headroomAt, "retentionguard_policy_recovery_window_seconds"},
		"Offsets expiry against the window (below 1: offsets at risk)": {offsetsAt, "retentionguard_policy_recovery_window_seconds"},
		"Expired records by topic":                                     {"retentionguard_expired_records"},
		"Admission decisions on rollouts":                              {"retentionguard_admission_decisions_total"},
	} {
		expr, ok := exprs[title]
		if !ok {
			t.Errorf("dashboard has no panel %q", title)
			continue
		}
		mustContainAll(t, "dashboard panel "+title, expr, metrics...)
	}
}

// TestSchemaRejects: a typo or a wrong type fails the install, naming the key.
func TestSchemaRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		vals map[string]any
		want []string
	}{
		{"typo at the top", set("replicaCont", 3), []string{"replicaCont"}},
		{"typo nested", set("webhook.timeoutSecond", 3), []string{"timeoutSecond"}},
		{"typo in crds", set("crds.keap", false), []string{"keap"}},
		{"wrong type", set("replicaCount", "two"), []string{"replicaCount"}},
		{"wrong enum", set("webhook.failurePolicy", "Never"), []string{"failurePolicy"}},
		{"timeout above the API's 30s", set("webhook.timeoutSeconds", 31), []string{"timeoutSeconds"}},
		{"not a duration", set("kafkaRequestTimeout", "10"), []string{"kafkaRequestTimeout"}},
		{"http webhook URL", set("webhook.url", "http://x:9443"), []string{"url"}},
		{"bad namespace", set("watchNamespaces", []any{"Orders"}), []string{"watchNamespaces"}},
		{"typo in resources", set("resources.limit", map[string]any{"cpu": "1"}), []string{"limit"}},
		{"a client rate of zero", set("kubeAPI.qps", 0), []string{"qps"}},
		{"typo in kubeAPI", set("kubeAPI.qsp", 10), []string{"qsp"}},
		{"a drain past the grace period", set("webhook.drainSeconds", 40), []string{"drainSeconds"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderErr(t, tc.vals)
			if err == nil {
				t.Fatalf("values %v accepted", tc.vals)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not name %q:\n%v", w, err)
				}
			}
		})
	}
}

func str(obj map[string]any, path ...string) string {
	v, _ := dig(obj, path...)
	s, _ := v.(string)
	return s
}

func boolean(obj map[string]any, path ...string) bool {
	v, _ := dig(obj, path...)
	b, _ := v.(bool)
	return b
}

func slice(obj map[string]any, path ...string) []any {
	v, _ := dig(obj, path...)
	s, _ := v.([]any)
	return s
}

func strs(obj map[string]any, path ...string) []string {
	var out []string
	for _, v := range slice(obj, path...) {
		out = append(out, fmt.Sprint(v))
	}
	return out
}

func dig(obj map[string]any, path ...string) (any, bool) {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func mustContainAll(t *testing.T, where, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("%s lacks %q: %s", where, w, s)
		}
	}
}

// TestNetworkPolicy: networkPolicy.enabled limits the manager's egress to
// DNS, the API server and the installer's rules, on the manager's pods.
func TestNetworkPolicy(t *testing.T) {
	m := render(t, combos["networkPolicy"])
	d, _ := managerDeployment(t, m)
	np := into[networkingv1.NetworkPolicy](t, m.get(t, "NetworkPolicy", fullname))
	if np.Namespace != releaseNS {
		t.Errorf("NetworkPolicy in %q, want %q", np.Namespace, releaseNS)
	}
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil || np.Spec.PodSelector.Size() == 0 || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("podSelector %v does not select the manager's pods %v", np.Spec.PodSelector, d.Spec.Template.Labels)
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}) {
		t.Errorf("policyTypes %v, want [Egress] (ingress is the API server's and Prometheus')", np.Spec.PolicyTypes)
	}
	ports := func(r networkingv1.NetworkPolicyEgressRule) []string {
		var out []string
		for _, p := range r.Ports {
			out = append(out, fmt.Sprintf("%s/%s", ptr.Deref(p.Protocol, corev1.ProtocolTCP), p.Port.String()))
		}
		return out
	}
	rules := np.Spec.Egress
	if len(rules) != 3 {
		t.Fatalf("%d egress rules, want DNS, the API server and the installer's one: %+v", len(rules), rules)
	}
	if got := ports(rules[0]); len(rules[0].To) != 0 || !slices.Equal(got, []string{"UDP/53", "TCP/53"}) {
		t.Errorf("DNS rule %v to %v", got, rules[0].To)
	}
	if got := ports(rules[1]); !slices.Equal(got, []string{"TCP/443", "TCP/6443"}) {
		t.Errorf("API server rule %v", got)
	}
	if got := ports(rules[2]); len(rules[2].To) != 1 || rules[2].To[0].NamespaceSelector == nil || !slices.Equal(got, []string{"TCP/9093"}) {
		t.Errorf("the installer's Kafka rule: %v to %+v", got, rules[2].To)
	}
}
