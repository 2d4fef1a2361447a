package workloadread

import (
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/retentionguard/retention-guard/internal/testenv"
	"github.com/retentionguard/retention-guard/internal/workloads"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &env)) }

// seed000 creates seed 000's consumer as a cluster runs it: namespace ns,
// the fanout Deployment reading its offset reset from the ConfigMap
// fanout-kafka, its ReplicaSet and a running pod at 10.0.0.7; beside it a
// writer Deployment whose pod is at 10.0.0.8.
func seed000(t *testing.T, ns string) {
	t.Helper()
	c, ctx := env.Client, t.Context()
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	must(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fanout-kafka"},
		Data: map[string]string{"AUTO_OFFSET_RESET": "earliest"}}))
	for _, w := range []struct{ name, ip string }{{"fanout", "10.0.0.7"}, {"writer", "10.0.0.8"}} {
		labels := map[string]string{"app": w.name}
		container := corev1.Container{Name: w.name, Image: w.name + ":1"}
		if w.name == "fanout" {
			container.Env = []corev1.EnvVar{{Name: "AUTO_OFFSET_RESET", ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "fanout-kafka"}, Key: "AUTO_OFFSET_RESET"}}}}
		}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: w.name},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{container}}},
			},
		}
		must(t, c.Create(ctx, d))
		if _, err := testenv.RunDeploymentPod(ctx, c, d, "5d8f", w.ip); err != nil {
			t.Fatal(err)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func refs(ws []workloads.Workload) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Ref.Namespace+"/"+w.Ref.String())
	}
	slices.Sort(out)
	return out
}

// Seed 000, the discovery path: the fanout group's member connects from
// 10.0.0.7. PodsAt finds the pod at that address only (once, however often
// the address is named; an address no pod has adds nothing), with the
// ReplicaSet that owns it; OwningWorkloads climbs to the fanout Deployment
// and no other; DeclaredConsumers, where KEDA is not installed, adds no
// scaler and reads the ConfigMap fanout's offset reset comes from.
func TestSeed000MemberAddressLeadsToTheFanoutDeployment(t *testing.T) {
	const ns = "shop-members"
	seed000(t, ns)
	r := &Reader{Reader: env.Client, Namespaces: []string{ns}}
	var snap workloads.Snapshot
	member := netip.MustParseAddr("10.0.0.7")
	must(t, r.PodsAt(t.Context(), []netip.Addr{member, netip.MustParseAddr("10.0.0.99"), member}, &snap))
	if len(snap.Pods) != 1 || snap.Pods[0].Name != "fanout-5d8f-x1" || !slices.Contains(snap.Pods[0].IPs, member) {
		t.Fatalf("pods at 10.0.0.7: %+v, want fanout-5d8f-x1 only", snap.Pods)
	}
	if len(snap.Owned) != 1 || snap.Owned[0].Ref.Name != "fanout-5d8f" || snap.Owned[0].Owner == nil ||
		snap.Owned[0].Owner.Kind != workloads.Deployment || snap.Owned[0].Owner.Name != "fanout" {
		t.Fatalf("owners read: %+v, want ReplicaSet fanout-5d8f owned by Deployment fanout", snap.Owned)
	}
	must(t, r.OwningWorkloads(t.Context(), &snap))
	if got := refs(snap.Workloads); !slices.Equal(got, []string{ns + "/Deployment/fanout"}) {
		t.Fatalf("owning workloads %v, want the fanout Deployment only", got)
	}
	must(t, r.DeclaredConsumers(t.Context(), &snap))
	if len(snap.Scalers) != 0 {
		t.Errorf("scalers %+v without KEDA installed", snap.Scalers)
	}
	if len(snap.ConfigMaps) != 1 || snap.ConfigMaps[0].Name != "fanout-kafka" || snap.ConfigMaps[0].Data["AUTO_OFFSET_RESET"] != "earliest" {
		t.Errorf("ConfigMaps %+v, want fanout-kafka with AUTO_OFFSET_RESET=earliest", snap.ConfigMaps)
	}
}

// Seed 000, the scan path (`retention-guard scan` with a kubeconfig):
// AllPods and Workloads read every running pod, ReplicaSet and workload of
// the namespaces, Argo Rollouts and KEDA left out where they are not
// installed, and the ConfigMaps the workloads read.
func TestSeed000ScanReadsEveryWorkload(t *testing.T) {
	const ns = "shop-scan"
	seed000(t, ns)
	r := &Reader{Reader: env.Client, Namespaces: []string{ns}}
	var snap workloads.Snapshot
	must(t, r.AllPods(t.Context(), &snap))
	must(t, r.Workloads(t.Context(), &snap))
	var pods []string
	for _, p := range snap.Pods {
		pods = append(pods, p.Name)
	}
	slices.Sort(pods)
	if !slices.Equal(pods, []string{"fanout-5d8f-x1", "writer-5d8f-x1"}) {
		t.Errorf("pods %v", pods)
	}
	if len(snap.Owned) != 2 {
		t.Errorf("owned %+v, want the two ReplicaSets", snap.Owned)
	}
	if got := refs(snap.Workloads); !slices.Equal(got, []string{ns + "/Deployment/fanout", ns + "/Deployment/writer"}) {
		t.Errorf("workloads %v", got)
	}
	if len(snap.ConfigMaps) != 1 || snap.ConfigMaps[0].Name != "fanout-kafka" {
		t.Errorf("ConfigMaps %+v, want fanout-kafka", snap.ConfigMaps)
	}
}

// A reader refused the lists (a scan run with a kubeconfig lacking the
// grants) fails naming the resource and every permission mapping needs.
func TestForbiddenListNamesThePermissions(t *testing.T) {
	const ns = "shop-forbidden"
	seed000(t, ns)
	user, err := env.AddUser(envtest.User{Name: "scan-without-grants"}, nil)
	must(t, err)
	c, err := client.New(user.Config(), client.Options{Scheme: env.Scheme})
	must(t, err)
	r := &Reader{Reader: c, Namespaces: []string{ns}}
	var snap workloads.Snapshot
	err = r.AllPods(t.Context(), &snap)
	if err == nil {
		t.Fatal("listing pods without grants succeeded")
	}
	for _, want := range []string{"listing pods in namespace " + ns + " is forbidden", "needs get and list on pods, replicasets"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
