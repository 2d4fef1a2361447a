package chart_test

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/cli"
	"github.com/retentionguard/retention-guard/test/chartrender"
)

// hooks are the rendered objects of the helm test hook.
func hooks(m manifests) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range m.objs {
		if chartrender.IsTestHook(o) {
			out = append(out, o)
		}
	}
	return out
}

// TestHelmTestHook: `helm test` runs the product's own binary
// (retention-guard helm-test) in the chart's image, against a probe policy
// that refuses whatever the cluster's Kafka, with RBAC that only reads the
// Service and the webhook configuration by name and creates (dry-runs)
// Deployments in the probe's namespace; every object of the hook is
// deleted when the test ends, passed or failed.
func TestHelmTestHook(t *testing.T) {
	for _, tc := range []struct {
		name    string
		vals    map[string]any
		probeNS string
		ownNS   bool // the hook creates the probe namespace
	}{
		{"defaults", nil, fullname + "-test", true},
		{"watchNamespaces", combos["watchNamespaces"], "orders", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := render(t, tc.vals)
			hs := hooks(m)
			if len(hs) == 0 {
				t.Fatal("no helm test hook rendered")
			}
			installed, err := chartrender.Render(chartDir, tc.vals)
			if err != nil {
				t.Fatal(err)
			}
			if len(installed) != len(m.objs)-len(hs) || slices.ContainsFunc(installed, chartrender.IsTestHook) {
				t.Errorf("what helm install creates (%d objects) is not the chart without its %d test hooks (%d objects)", len(installed), len(hs), len(m.objs))
			}
			weight := map[string]int{}
			for _, h := range hs {
				a := h.GetAnnotations()
				policies := strings.Split(a["helm.sh/hook-delete-policy"], ",")
				for _, p := range []string{"before-hook-creation", "hook-succeeded", "hook-failed"} {
					if !slices.Contains(policies, p) {
						t.Errorf("%s %s: hook-delete-policy %q lacks %s: it would stay behind", h.GetKind(), h.GetName(), a["helm.sh/hook-delete-policy"], p)
					}
				}
				w, err := strconv.Atoi(a["helm.sh/hook-weight"])
				if err != nil {
					t.Errorf("%s %s: hook-weight %q", h.GetKind(), h.GetName(), a["helm.sh/hook-weight"])
				}
				weight[h.GetKind()+"/"+h.GetNamespace()+"/"+h.GetName()] = w
			}

			// The probe namespace: created first by the hook, or the first
			// watched namespace (the only ones the webhook is called for).
			nsObj := m.find("Namespace", tc.probeNS)
			if (nsObj != nil) != tc.ownNS {
				t.Errorf("Namespace %s rendered: %v, want %v", tc.probeNS, nsObj != nil, tc.ownNS)
			}
			if nsObj != nil && nsObj.GetLabels()["retentionguard.io/ignore"] == "true" {
				t.Errorf("the probe namespace is ignored by the webhook")
			}

			// The probe policy refuses: Deny, a connection that never
			// exists, a selector of its own label.
			var probe *rgv1.ConsumerRetentionPolicy
			for _, h := range hs {
				if h.GetKind() == "ConsumerRetentionPolicy" {
					probe = into[rgv1.ConsumerRetentionPolicy](t, h)
				}
			}
			if probe == nil {
				t.Fatal("no probe ConsumerRetentionPolicy")
			}
			if probe.Namespace != tc.probeNS || probe.Spec.Enforcement != "Deny" || probe.Spec.Kafka.ConnectionRef == nil || len(probe.Spec.Kafka.BootstrapServers) != 0 {
				t.Errorf("probe policy %s/%s: enforcement %q, kafka %+v; want Deny in %s on a connectionRef (no broker dialed)",
					probe.Namespace, probe.Name, probe.Spec.Enforcement, probe.Spec.Kafka, tc.probeNS)
			}
			if nsObj != nil {
				for k, w := range weight {
					if strings.Contains(k, "/"+tc.probeNS+"/") && w <= weight["Namespace//"+tc.probeNS] {
						t.Errorf("%s (weight %d) is not created after its Namespace (weight %d)", k, w, weight["Namespace//"+tc.probeNS])
					}
				}
			}
			for k, w := range weight {
				if !strings.HasPrefix(k, "Pod/") && w >= weight["Pod/"+releaseNS+"/"+fullname+"-test"] {
					t.Errorf("%s (weight %d) is not created before the test pod", k, w)
				}
			}

			// The pod: the chart's image, the product's subcommand, the
			// test ServiceAccount, the flags the command knows.
			var pod *corev1.Pod
			for _, h := range hs {
				if h.GetKind() == "Pod" {
					pod = into[corev1.Pod](t, h)
				}
			}
			if pod == nil {
				t.Fatal("no test Pod")
			}
			d, manager := managerDeployment(t, m)
			c := pod.Spec.Containers[0]
			if c.Image != manager.Image || len(c.Command) != 0 || len(c.Args) == 0 || c.Args[0] != "helm-test" {
				t.Errorf("test container image %s command %v args %v; want the manager's image %s running helm-test", c.Image, c.Command, c.Args, manager.Image)
			}
			if pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
				t.Errorf("restartPolicy %s", pod.Spec.RestartPolicy)
			}
			if !slices.Contains(c.Args, "--probe-namespace="+tc.probeNS) || !slices.Contains(c.Args, "--probe-policy="+probe.Name) {
				t.Errorf("args %v do not name the probe %s/%s", c.Args, tc.probeNS, probe.Name)
			}
			for k, v := range probe.Spec.Selector.MatchLabels {
				if !slices.Contains(c.Args, "--probe-label="+k+"="+v) {
					t.Errorf("args %v do not dry-run pods labelled %s=%s, which the probe selects", c.Args, k, v)
				}
			}
			var out, errOut bytes.Buffer
			if code := cli.Execute(append(slices.Clone(c.Args), "--help"), &out, &errOut); code != 0 {
				t.Errorf("retention-guard %v: exit %d: %s", c.Args, code, errOut.String())
			}

			// RBAC: what the test's ServiceAccount may do, in all.
			sa := pod.Spec.ServiceAccountName
			if sa == "" || sa == d.Spec.Template.Spec.ServiceAccountName || m.find("ServiceAccount", sa) == nil {
				t.Fatalf("the test pod runs as %q: want a ServiceAccount of its own, rendered by the hook", sa)
			}
			type grant struct{ ns, rule string }
			var grants []grant
			for _, h := range hs {
				var roleRef rbacv1.RoleRef
				var subjects []rbacv1.Subject
				switch h.GetKind() {
				case "RoleBinding":
					b := into[rbacv1.RoleBinding](t, h)
					roleRef, subjects = b.RoleRef, b.Subjects
				case "ClusterRoleBinding":
					b := into[rbacv1.ClusterRoleBinding](t, h)
					roleRef, subjects = b.RoleRef, b.Subjects
				default:
					continue
				}
				if len(subjects) != 1 || subjects[0].Name != sa || subjects[0].Namespace != releaseNS {
					t.Errorf("%s %s binds %v, want only the test ServiceAccount", h.GetKind(), h.GetName(), subjects)
				}
				role := m.find(roleRef.Kind, roleRef.Name)
				if roleRef.Kind == "Role" {
					role = nil
					for _, r := range m.all("Role") {
						if r.GetName() == roleRef.Name && r.GetNamespace() == h.GetNamespace() {
							role = r
						}
					}
				}
				if role == nil || role.GetAnnotations()["helm.sh/hook"] != "test" {
					t.Fatalf("%s %s/%s binds %s %s, not a role of the hook", h.GetKind(), h.GetNamespace(), h.GetName(), roleRef.Kind, roleRef.Name)
				}
				for _, r := range into[rbacv1.ClusterRole](t, role).Rules {
					grants = append(grants, grant{h.GetNamespace(), strings.Join(r.APIGroups, ",") + " " + strings.Join(r.Resources, ",") + " " +
						strings.Join(r.Verbs, ",") + " " + strings.Join(r.ResourceNames, ",")})
				}
			}
			want := []grant{
				{releaseNS, " services get " + fullname + "-webhook"},
				{"", "admissionregistration.k8s.io validatingwebhookconfigurations get " + fullname},
				{tc.probeNS, "apps deployments create "},
			}
			slices.SortFunc(grants, func(a, b grant) int { return strings.Compare(a.ns+a.rule, b.ns+b.rule) })
			slices.SortFunc(want, func(a, b grant) int { return strings.Compare(a.ns+a.rule, b.ns+b.rule) })
			if !slices.Equal(grants, want) {
				t.Errorf("the test's RBAC:\n  %v\nwant exactly:\n  %v", grants, want)
			}
		})
	}
}
