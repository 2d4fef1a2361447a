package chart_test

import (
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// shardLabel is the label a connection and its policies name their shard
// with (issue 34's contract; the manager's constant once merged).
const shardLabel = "retentionguard.io/shard"

// twoShards is issue 34's example: shards a and b, b with its own memory.
var twoShards = set("shards", []any{
	map[string]any{"name": "a"},
	map[string]any{"name": "b", "resources": map[string]any{"limits": map[string]any{"memory": "1Gi"}}},
})

func init() { combos["shards"] = twoShards }

// TestNoShardsRendersOneManager: without shards (the default, or an
// explicit empty list) the release is the one manager it always was: one
// Deployment reconciling everything, serving the webhook, no shard objects.
func TestNoShardsRendersOneManager(t *testing.T) {
	def := render(t, nil)
	empty := render(t, set("shards", []any{}))
	if !reflect.DeepEqual(def.objs, empty.objs) {
		t.Error("shards: [] renders other objects than the defaults")
	}
	if ds := def.all("Deployment"); len(ds) != 1 {
		t.Fatalf("%d Deployments by default, want 1", len(ds))
	}
	_, c := managerDeployment(t, def)
	for _, flag := range []string{"--watch-label-selector", "--enable-webhook"} {
		if v, ok := argValue(c.Args, flag); ok {
			t.Errorf("%s=%s by default: the one manager must reconcile every policy and serve the webhook", flag, v)
		}
	}
	if n := len(def.all("Lease")); n != 1 {
		t.Errorf("%d Leases by default, want the one leader election Lease", n)
	}
	if s := def.find("Service", fullname+"-shards"); s != nil {
		t.Error("a shards Service is rendered without shards")
	}
}

// selectorOf parses a manager's --watch-label-selector as the manager does
// (a Kubernetes label selector).
func selectorOf(t *testing.T, args []string) labels.Selector {
	t.Helper()
	s, err := labels.Parse(mustArg(t, args, "--watch-label-selector"))
	if err != nil {
		t.Fatalf("--watch-label-selector: %v", err)
	}
	return s
}

// TestTwoShards: shards [a, b] render three managers. Every policy is
// reconciled by exactly one of them whatever its label (seed 003's
// settlement policy, unlabelled or mislabelled, is still proven: no gap),
// each elects its own leader, only the main one serves the webhook, and
// the shards keep the pod's security, probes, identity and metrics.
func TestTwoShards(t *testing.T) {
	m := render(t, twoShards)
	if ds := m.all("Deployment"); len(ds) != 3 {
		t.Fatalf("%d Deployments, want the main one and one per shard", len(ds))
	}
	mainD, mainC := managerDeployment(t, m)
	shard := map[string]*appsv1.Deployment{}
	for _, name := range []string{"a", "b"} {
		d := into[appsv1.Deployment](t, m.get(t, "Deployment", fullname+"-shard-"+name))
		if n := len(d.Spec.Template.Spec.Containers); n != 1 {
			t.Fatalf("shard %s: %d containers", name, n)
		}
		shard[name] = d
	}

	// Exactly one owner per label value: none, each shard, an unknown one.
	owners := map[string]labels.Selector{"main": selectorOf(t, mainC.Args)}
	for name, d := range shard {
		owners[name] = selectorOf(t, d.Spec.Template.Spec.Containers[0].Args)
	}
	for _, tc := range []struct {
		what  string
		set   labels.Set
		owner string
	}{
		{"an unlabelled policy", labels.Set{}, "main"},
		{"shard a", labels.Set{shardLabel: "a"}, "a"},
		{"shard b", labels.Set{shardLabel: "b"}, "b"},
		{"a shard the release lacks", labels.Set{shardLabel: "c"}, "main"},
		{"an empty shard name", labels.Set{shardLabel: ""}, "main"},
	} {
		var got []string
		for name, s := range owners {
			if s.Matches(tc.set) {
				got = append(got, name)
			}
		}
		if len(got) != 1 || got[0] != tc.owner {
			t.Errorf("%s (%v) is reconciled by %v, want %s only", tc.what, tc.set, got, tc.owner)
		}
	}

	// Distinct leader election IDs, each a Lease the chart owns.
	ids := map[string]string{"main": mustArg(t, mainC.Args, "--leader-election-id")}
	for name, d := range shard {
		c := d.Spec.Template.Spec.Containers[0]
		mustArg(t, c.Args, "--leader-elect")
		ids[name] = mustArg(t, c.Args, "--leader-election-id")
	}
	seen := map[string]string{}
	for who, id := range ids {
		if other, dup := seen[id]; dup {
			t.Errorf("%s and %s elect with the same Lease %s", who, other, id)
		}
		seen[id] = who
		if m.find("Lease", id) == nil {
			t.Errorf("%s's leader election Lease %s is not rendered (helm uninstall would leave it)", who, id)
		}
	}

	// Only the main Deployment serves the webhook; shards need no certificate.
	if v, ok := argValue(mainC.Args, "--enable-webhook"); ok && v != "true" {
		t.Errorf("the main manager runs with --enable-webhook=%s", v)
	}
	mainPods := labels.Set(mainD.Spec.Template.Labels)
	svc := into[corev1.Service](t, m.get(t, "Service", mustArg(t, mainC.Args, "--webhook-service-name")))
	for name, d := range shard {
		pod := d.Spec.Template.Spec
		c := pod.Containers[0]
		if v := mustArg(t, c.Args, "--enable-webhook"); v != "false" {
			t.Errorf("shard %s: --enable-webhook=%s", name, v)
		}
		for _, flag := range []string{"--cert-rotation", "--cert-secret-name", "--webhook-cert-dir", "--webhook-service-name"} {
			if _, ok := argValue(c.Args, flag); ok {
				t.Errorf("shard %s passes %s: it serves no webhook and must not rotate the certificate Secret", name, flag)
			}
		}
		if len(pod.Volumes) != 0 || len(c.VolumeMounts) != 0 {
			t.Errorf("shard %s mounts %v", name, pod.Volumes)
		}
		ports := map[string]int32{}
		for _, p := range c.Ports {
			ports[p.Name] = p.ContainerPort
		}
		if !reflect.DeepEqual(ports, map[string]int32{"metrics": 8080, "probes": 8081}) {
			t.Errorf("shard %s ports %v, want metrics 8080 and probes 8081 only", name, ports)
		}
		for flag, want := range map[string]string{"--metrics-bind-address": ":8080", "--health-probe-bind-address": ":8081"} {
			if got := mustArg(t, c.Args, flag); got != want {
				t.Errorf("shard %s: %s=%s, want %s", name, flag, got, want)
			}
		}
		for probe, p := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
			if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != probe || p.HTTPGet.Port.StrVal != "probes" {
				t.Errorf("shard %s: probe %s is %+v", name, probe, p)
			}
		}
		if pod.ServiceAccountName != mainD.Spec.Template.Spec.ServiceAccountName {
			t.Errorf("shard %s runs as %s, the RBAC is %s's", name, pod.ServiceAccountName, mainD.Spec.Template.Spec.ServiceAccountName)
		}
		if !reflect.DeepEqual(pod.SecurityContext, mainD.Spec.Template.Spec.SecurityContext) ||
			!reflect.DeepEqual(c.SecurityContext, mainC.SecurityContext) || c.Image != mainC.Image {
			t.Errorf("shard %s: security context or image differ from the main pods'", name)
		}
		if env := c.Env; len(env) != 1 || env[0].Name != "POD_NAMESPACE" {
			t.Errorf("shard %s env %v, want POD_NAMESPACE (the heartbeat Leases' namespace)", name, env)
		}
		// Selected by their own Deployment only: the main Deployment, the
		// webhook Service and the PodDisruptionBudget keep to the
		// webhook-serving pods.
		pods := labels.Set(d.Spec.Template.Labels)
		if pods[shardLabel] != name || !selects(t, d.Spec.Selector, pods) {
			t.Errorf("shard %s: selector %v, pod labels %v", name, d.Spec.Selector, pods)
		}
		if selects(t, mainD.Spec.Selector, pods) || selects(t, d.Spec.Selector, mainPods) {
			t.Errorf("shard %s's pods and the main pods overlap in the Deployments' selectors", name)
		}
		if labels.SelectorFromSet(svc.Spec.Selector).Matches(pods) {
			t.Errorf("the webhook Service sends admission requests to shard %s", name)
		}
		for other, od := range shard {
			if other != name && selects(t, od.Spec.Selector, pods) {
				t.Errorf("shard %s's Deployment selects shard %s's pods", other, name)
			}
		}
	}
	pdb := into[policyv1.PodDisruptionBudget](t, m.get(t, "PodDisruptionBudget", fullname))
	for name, d := range shard {
		if selects(t, pdb.Spec.Selector, labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("the PodDisruptionBudget counts shard %s's pod", name)
		}
	}

	// NOTES.txt waits for every manager.
	for name := range shard {
		if want := "rollout status deployment/" + fullname + "-shard-" + name; !strings.Contains(m.notes, want) {
			t.Errorf("NOTES.txt lacks %q:\n%s", want, m.notes)
		}
	}

	// Resources: the main ones unless the shard sets its own.
	if a := shard["a"].Spec.Template.Spec.Containers[0].Resources; !reflect.DeepEqual(a, mainC.Resources) {
		t.Errorf("shard a resources %+v, want the main ones %+v", a, mainC.Resources)
	}
	if b := shard["b"].Spec.Template.Spec.Containers[0].Resources; b.Limits.Memory().String() != "1Gi" || b.Requests != nil {
		t.Errorf("shard b resources %+v, want its own (limits.memory 1Gi only)", b)
	}
	for name, d := range shard {
		if r := *d.Spec.Replicas; r != 1 {
			t.Errorf("shard %s: %d replicas, want 1 by default", name, r)
		}
	}
	if r := *into[appsv1.Deployment](t, render(t, set("shards", []any{map[string]any{"name": "a", "replicaCount": 2}})).
		get(t, "Deployment", fullname+"-shard-a")).Spec.Replicas; r != 2 {
		t.Errorf("shards[0].replicaCount 2 renders %d replicas", r)
	}
}

// TestShardsAreScrapedAndMayReachKafka: the ServiceMonitor scrapes every
// shard pod's metrics (their policies' series come only from them), and
// the egress NetworkPolicy applies to shard pods too.
func TestShardsAreScrapedAndMayReachKafka(t *testing.T) {
	vals := set("serviceMonitor.enabled", true, "networkPolicy.enabled", true, "shards", twoShards["shards"])
	m := render(t, vals)
	sm := m.get(t, "ServiceMonitor", fullname)
	smSel := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for k, v := range sm.Object["spec"].(map[string]any)["selector"].(map[string]any)["matchLabels"].(map[string]any) {
		smSel.MatchLabels[k] = v.(string)
	}
	port := str(slice(sm.Object, "spec", "endpoints")[0].(map[string]any), "port")
	np := into[networkingv1.NetworkPolicy](t, m.get(t, "NetworkPolicy", fullname))
	npSel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	services := m.all("Service")
	for _, name := range []string{"a", "b"} {
		d := into[appsv1.Deployment](t, m.get(t, "Deployment", fullname+"-shard-"+name))
		pods := labels.Set(d.Spec.Template.Labels)
		var scraped []string
		for _, o := range services {
			svc := into[corev1.Service](t, o)
			if !selects(t, smSel, labels.Set(svc.Labels)) || !labels.SelectorFromSet(svc.Spec.Selector).Matches(pods) {
				continue
			}
			for _, p := range svc.Spec.Ports {
				if p.Name == port && p.TargetPort.StrVal == "metrics" {
					scraped = append(scraped, svc.Name)
				}
			}
		}
		if len(scraped) != 1 {
			t.Errorf("shard %s's pods are scraped through %v, want one Service", name, scraped)
		}
		if !npSel.Matches(pods) {
			t.Errorf("the NetworkPolicy %v does not apply to shard %s's pods", np.Spec.PodSelector, name)
		}
	}
	mainD, _ := managerDeployment(t, m)
	if !npSel.Matches(labels.Set(mainD.Spec.Template.Labels)) {
		t.Error("with shards, the NetworkPolicy no longer applies to the main pods")
	}
}

// TestShardNamesRejected: a shard name must be a label value the manager's
// selector and the objects' names can carry, and name one shard.
func TestShardNamesRejected(t *testing.T) {
	for _, tc := range []struct {
		what   string
		shards []any
	}{
		{"uppercase", []any{map[string]any{"name": "A"}}},
		{"an underscore", []any{map[string]any{"name": "a_b"}}},
		{"a leading dash", []any{map[string]any{"name": "-a"}}},
		{"a selector in the name", []any{map[string]any{"name": "a,b"}}},
		{"longer than a label value", []any{map[string]any{"name": strings.Repeat("a", 64)}}},
		{"no name", []any{map[string]any{"resources": map[string]any{}}}},
		{"a bare string", []any{"a"}},
		{"an unknown key", []any{map[string]any{"name": "a", "selector": "x"}}},
		{"the same name twice", []any{map[string]any{"name": "a"}, map[string]any{"name": "a", "replicaCount": 2}}},
		{"no replica", []any{map[string]any{"name": "a", "replicaCount": 0}}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			_, err := renderErr(t, set("shards", tc.shards))
			if err == nil {
				t.Fatalf("shards %v accepted", tc.shards)
			}
			if !strings.Contains(err.Error(), "shards") {
				t.Errorf("error does not name shards: %v", err)
			}
		})
	}
	if _, err := renderErr(t, set("shards", []any{map[string]any{"name": "orders-eu1"}, map[string]any{"name": "0"}})); err != nil {
		t.Errorf("valid shard names refused: %v", err)
	}
}
