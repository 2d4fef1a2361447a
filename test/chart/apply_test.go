package chart_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/retentionguard/retention-guard/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, &env, func(e *envtest.Environment) {
		e.CRDs = append(e.CRDs,
			openCRD("cert-manager.io", "Issuer", "issuers"),
			openCRD("cert-manager.io", "Certificate", "certificates"),
			openCRD("monitoring.coreos.com", "ServiceMonitor", "servicemonitors"),
			openCRD("monitoring.coreos.com", "PrometheusRule", "prometheusrules"),
		)
	}))
}

// openCRD stands in for a CRD of another project (cert-manager, Prometheus
// Operator) that this control plane does not have: it accepts any spec, so
// the dry-run proves the kind, group, version and metadata only.
func openCRD(group, kind, plural string) *apiextensionsv1.CustomResourceDefinition {
	version := "v1"
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, Plural: plural},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
}

// dryRunApply server-side applies every object with dryRun=All: the API
// server runs its full validation (schemas, CEL of matchConditions, RBAC
// rule shapes, label selectors) and admission, and stores nothing.
func dryRunApply(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, o := range objs {
		// Apply writes the server's answer (defaults filled in) into its
		// argument: keep the rendered object as rendered.
		err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()),
			client.FieldOwner("helm"), client.ForceOwnership, client.DryRunAll)
		if err != nil {
			t.Errorf("dry-run apply of %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
}

func TestChartAppliesToTheAPIServer(t *testing.T) {
	for _, ns := range []string{releaseNS, "orders", "payments"} {
		ensureNamespace(t, ns)
	}
	for name, vals := range combos {
		t.Run(name, func(t *testing.T) {
			m := render(t, vals)
			if len(m.objs) < 10 {
				t.Fatalf("only %d objects rendered", len(m.objs))
			}
			// The helm test hook's probe namespace is created before the
			// objects in it (Helm creates hooks in weight order).
			for _, ns := range m.all("Namespace") {
				ensureNamespace(t, ns.GetName())
			}
			dryRunApply(t, m.objs)
		})
	}
}

// TestNotesPolicyIsValid: the first policy NOTES.txt tells the installer to
// apply is accepted by the CRD's validation, and names Kafka the way the
// values let it: through a ClusterKafkaConnection by default (no inline
// server is allowed), inline once allowedBootstrapServers lists servers.
func TestNotesPolicyIsValid(t *testing.T) {
	ensureNamespace(t, "orders")
	for name, c := range map[string]struct {
		vals map[string]any
		want string
	}{
		"defaults":       {nil, "connectionRef"},
		"allowed inline": {set("allowedBootstrapServers", []any{"*.kafka.svc:9092"}), "bootstrapServers"},
	} {
		t.Run(name, func(t *testing.T) {
			notes := render(t, c.vals).notes
			_, after, ok := strings.Cut(notes, "<<'YAML'\n")
			body, _, ok2 := strings.Cut(after, "\n  YAML\n")
			if !ok || !ok2 {
				t.Fatalf("NOTES.txt has no heredoc policy:\n%s", notes)
			}
			var lines []string
			for _, l := range strings.Split(body, "\n") {
				lines = append(lines, strings.TrimPrefix(l, "  "))
			}
			objs, err := decodeAll(strings.Join(lines, "\n"))
			if err != nil || len(objs) != 1 || objs[0].GetKind() != "ConsumerRetentionPolicy" {
				t.Fatalf("NOTES.txt policy: %v %v", objs, err)
			}
			if kafka, _, _ := unstructured.NestedMap(objs[0].Object, "spec", "kafka"); kafka[c.want] == nil {
				t.Errorf("NOTES.txt policy names Kafka with %v, want %s", kafka, c.want)
			}
			dryRunApply(t, objs)
		})
	}
}

// TestKustomize builds config/default with the kustomize embedded in the
// control plane's kubectl, dry-run applies it, and checks that the flags
// the Deployment passes name the objects kustomize produced.
func TestKustomize(t *testing.T) {
	kubectl := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	out, err := exec.Command(kubectl, "kustomize", filepath.Join(root, "config", "default")).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%s kustomize config/default: %v\n%s", kubectl, err, stderr)
	}
	objs, err := decodeAll(string(out))
	if err != nil {
		t.Fatal(err)
	}
	m := manifests{objs: objs}

	const ns = "retention-guard-system"
	if m.find("Namespace", ns) == nil {
		t.Fatalf("no Namespace %s", ns)
	}
	ensureNamespace(t, ns)
	var rest []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() != "Namespace" {
			rest = append(rest, o)
		}
	}
	dryRunApply(t, rest)

	d := into[appsv1.Deployment](t, m.get(t, "Deployment", "retention-guard-manager"))
	args := d.Spec.Template.Spec.Containers[0].Args
	vwc := into[admissionv1.ValidatingWebhookConfiguration](t,
		m.get(t, "ValidatingWebhookConfiguration", mustArg(t, args, "--webhook-configuration-name")))
	svcName := mustArg(t, args, "--webhook-service-name")
	m.get(t, "Service", svcName)
	if s := vwc.Webhooks[0].ClientConfig.Service; s.Name != svcName || s.Namespace != ns {
		t.Errorf("webhook calls Service %s/%s, the manager's certificate names %s/%s", s.Namespace, s.Name, ns, svcName)
	}
	m.get(t, "Secret", mustArg(t, args, "--cert-secret-name"))
	sa := d.Spec.Template.Spec.ServiceAccountName
	m.get(t, "ServiceAccount", sa)

	// The hand-written rotation RBAC names the final (prefixed) objects.
	cr := into[rbacv1.ClusterRole](t, m.get(t, "ClusterRole", "retention-guard-cert-rotation"))
	checkUpdateOnlyNamed(t, cr.Rules, "validatingwebhookconfigurations", vwc.Name)
	role := into[rbacv1.Role](t, m.get(t, "Role", "retention-guard-cert-rotation"))
	checkUpdateOnlyNamed(t, role.Rules, "secrets", mustArg(t, args, "--cert-secret-name"))

	// Same webhook as the chart: generated rules and matchConditions, own
	// namespace and ignore label skipped. kustomize has no capabilities to
	// look at: it always carries the Argo Rollouts rule, like the chart
	// with argoRollouts.enabled=true (a rule for a resource the cluster
	// does not serve matches nothing).
	chartWH := webhookConfig(t, render(t, combos["argoRollouts"]))
	kw := vwc.Webhooks[0]
	if !reflect.DeepEqual(kw.MatchConditions, chartWH.MatchConditions) || !reflect.DeepEqual(kw.Rules, chartWH.Rules) {
		t.Error("kustomize and chart webhooks differ in rules or matchConditions")
	}
	sel, err := metav1.LabelSelectorAsSelector(kw.NamespaceSelector)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []map[string]string{
		{"kubernetes.io/metadata.name": ns},
		{"kubernetes.io/metadata.name": "kube-system"},
		{"kubernetes.io/metadata.name": "orders", "retentionguard.io/ignore": "true"},
	} {
		if sel.Matches(labels.Set(l)) {
			t.Errorf("kustomize webhook is called for namespace labels %v", l)
		}
	}

	// And the same pod security and probes as the chart's defaults.
	_, chartC := managerDeployment(t, render(t, nil))
	kc := d.Spec.Template.Spec.Containers[0]
	if !reflect.DeepEqual(kc.SecurityContext, chartC.SecurityContext) || !reflect.DeepEqual(kc.ReadinessProbe, chartC.ReadinessProbe) ||
		!reflect.DeepEqual(kc.LivenessProbe, chartC.LivenessProbe) {
		t.Errorf("kustomize manager container differs from the chart's in securityContext or probes:\nkustomize %+v %+v %+v\nchart %+v %+v %+v",
			kc.SecurityContext, kc.ReadinessProbe, kc.LivenessProbe, chartC.SecurityContext, chartC.ReadinessProbe, chartC.LivenessProbe)
	}
	if m.find("PodDisruptionBudget", "retention-guard-manager") == nil {
		t.Error("kustomize has no PodDisruptionBudget")
	}
}
