package cli

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/testenv"
)

// --emit-policies with a kubeconfig, on the real control plane and a
// Kafka cluster with live consumers: seed 000's fan-out consumer runs in
// namespace qim (its pod's IP is the consumer's address) and a second
// region's copy sits in qim-eu, configured with the group ID but not
// running; seed 003's nightly batch (a suspended CronJob in ledger, its
// group ID in a ConfigMap) has lost its offsets; an Argo Rollout (the real
// CRD) in shop runs a consumer from another address. The printed
// policies, applied as printed, select exactly the consumers: the two
// pods and the four workloads' templates, never the writer beside them;
// each says its evidence and how sure it is.
func TestScanEmitPoliciesSelectTheConsumers(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "outbox", 1, nil)
	c.CreateTopic(t, "settle-task", 1, nil)
	c.Produce(t, "outbox", 10)
	c.Produce(t, "settle-task", 10)
	c.RunConsumer(t, "qim-fanout", "outbox", map[int32]int64{0: 5})
	// The Rollout's consumer connects from 127.0.0.2: its pod's IP, not
	// the fan-out's.
	c.CreateTopic(t, "orders", 1, nil)
	c.Produce(t, "orders", 10)
	from2 := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 5 * time.Second}
	shop := c.JoinGroupWith(t, "shop-orders", kafkatest.Classic, []kgo.Opt{kgo.Dialer(from2.DialContext)}, "orders")
	if err := kafkatest.CommitSync(t.Context(), shop, "orders", map[int32]int64{0: 10}); err != nil {
		t.Fatal(err)
	}
	c.CommitOffsets(t, "ledger-settle-consumer", "settle-task", map[int32]int64{0: 2})
	c.DeleteRecords(t, "settle-task", 0, 6)

	rolloutCRD, err := testenv.ArgoRolloutsCRD()
	if err != nil {
		t.Fatal(err)
	}
	env, err := testenv.Start(func(e *envtest.Environment) { e.CRDDirectoryPaths = append(e.CRDDirectoryPaths, rolloutCRD) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx, k := t.Context(), env.Client
	create := func(obj client.Object) {
		t.Helper()
		if err := k.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	for _, ns := range []string{"qim", "qim-eu", "ledger", "shop"} {
		create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	app := func(name string, env ...corev1.EnvVar) corev1.PodSpec {
		return corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "registry.example/" + name, Env: env}}}
	}
	deployment := func(ns, name string, replicas int32, spec corev1.PodSpec) *appsv1.Deployment {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(replicas),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name, "tier": "qim"}},
					Spec:       spec,
				},
			},
		}
		create(d)
		return d
	}
	runPod := func(d *appsv1.Deployment, hash, ip string) {
		t.Helper()
		if _, err := testenv.RunDeploymentPod(ctx, k, d, hash, ip); err != nil {
			t.Fatal(err)
		}
	}
	// The consumer connects to kfake from 127.0.0.1: that is its pod's IP.
	runPod(deployment("qim", "fanout", 1, app("fanout")), "7d9f", "127.0.0.1")
	runPod(deployment("qim", "writer", 1, app("writer", corev1.EnvVar{Name: "OUTBOX_TOPIC", Value: "outbox"})), "55c4", "10.9.9.9")
	deployment("qim-eu", "fanout", 0, app("fanout", corev1.EnvVar{Name: "KAFKA_GROUP_ID", Value: "qim-fanout"}))
	create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ledger", Name: "settle-config"},
		Data: map[string]string{"group": "ledger-settle-consumer"}})
	settleSpec := app("settle", corev1.EnvVar{Name: "SPRING_KAFKA_CONSUMER_GROUP_ID", ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "settle-config"}, Key: "group"}}})
	settleSpec.RestartPolicy = corev1.RestartPolicyOnFailure
	create(&batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ledger", Name: "settle"},
		Spec: batchv1.CronJobSpec{Schedule: "0 2 * * *", Suspend: ptr.To(true), JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "settle"}}, Spec: settleSpec}}}},
	})
	create(&batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ledger", Name: "report"},
		Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "report"}},
				Spec: func() corev1.PodSpec { s := app("report"); s.RestartPolicy = corev1.RestartPolicyNever; return s }()}}}},
	})

	rollout := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
		"metadata": map[string]any{"namespace": "shop", "name": "orders"},
		"spec": map[string]any{
			"replicas": int64(1),
			"selector": map[string]any{"matchLabels": map[string]any{"app": "orders"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "orders", "tier": "qim"}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "orders", "image": "registry.example/orders"}}},
			},
			"strategy": map[string]any{"canary": map[string]any{}},
		},
	}}
	create(rollout)
	if _, err := testenv.RunPod(ctx, k, "shop", metav1.OwnerReference{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "orders",
		UID: rollout.GetUID(), Controller: ptr.To(true)}, map[string]string{"app": "orders"},
		corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "orders", "tier": "qim"}}, Spec: app("orders")},
		"6b8", "127.0.0.2"); err != nil {
		t.Fatal(err)
	}

	kubeconfig := writeKubeconfig(t, env)
	code, stdout, stderr := runScan(t, "--bootstrap-server", c.Addrs[0], "--recovery-window", "72h", "--emit-policies",
		"--kubeconfig", kubeconfig, "--namespace", "qim", "--namespace", "qim-eu", "--namespace", "ledger", "--namespace", "shop")
	if code != ExitViolated {
		t.Fatalf("exit %d, want %d (seed 003's group lost records); stderr: %s\n%s", code, ExitViolated, stderr, stdout)
	}
	for _, want := range []string{
		"# Consumed by Rollout/orders (Certain):\n#   member client kgo at 127.0.0.2 is pod orders-6b8-x1 [MemberHost, Certain]",
		"# Consumed by Deployment/fanout (Certain):\n#   member client kgo at 127.0.0.1 is pod fanout-7d9f-x1 [MemberHost, Certain]",
		"# Consumed by Deployment/fanout (Likely):\n#   container fanout sets KAFKA_GROUP_ID to the group ID [Environment, Likely]\n" +
			"#   parked (no pods by its spec): matched by its configuration only",
		"# Consumed by CronJob/settle (Likely):\n#   container settle sets SPRING_KAFKA_CONSUMER_GROUP_ID to the group ID (ConfigMap settle-config key group) [Environment, Likely]\n" +
			"#   parked (no pods by its spec): matched by its configuration only\n# No live member of the group was seen in the workload's pods: check the match before applying.",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the policies do not say\n%s\n---\n%s", want, stdout)
		}
	}

	// Applied as printed, each policy goes to its workload's namespace;
	// the selectors select exactly the consumers.
	got, selectedPods, selectedTemplates := applyEmitted(t, k, stdout)
	slices.Sort(got)
	slices.Sort(selectedTemplates)
	if want := []string{"ledger/ledger-settle-consumer ledger-settle-consumer", "qim-eu/qim-fanout qim-fanout", "qim/qim-fanout qim-fanout",
		"shop/shop-orders shop-orders"}; !slices.Equal(got, want) {
		t.Errorf("policies %v, want %v", got, want)
	}
	slices.Sort(selectedPods)
	if want := []string{"qim/fanout-7d9f-x1", "shop/orders-6b8-x1"}; !slices.Equal(selectedPods, want) {
		t.Errorf("the policies select pods %v, want exactly the consumer's %v", selectedPods, want)
	}
	if want := []string{
		"ledger-settle-consumer ledger/CronJob/settle", "qim-fanout qim-eu/Deployment/fanout", "qim-fanout qim/Deployment/fanout",
		"shop-orders shop/Rollout/orders",
	}; !slices.Equal(selectedTemplates, want) {
		t.Errorf("the policies select workloads %v, want exactly %v", selectedTemplates, want)
	}

	// Every namespace read: the same policies (nothing else consumes).
	code, all, stderr := runScan(t, "--bootstrap-server", c.Addrs[0], "--recovery-window", "72h", "--emit-policies", "--kubeconfig", kubeconfig)
	if code != ExitViolated || all != stdout {
		t.Errorf("every namespace: exit %d (%s), output differs from the three namespaces':\n%s", code, stderr, all)
	}

	// The table and the JSON name the same workloads, with the fields of a
	// connection's status.unguardedGroups[].workloads.
	ns := []string{"--namespace", "qim", "--namespace", "qim-eu", "--namespace", "ledger", "--namespace", "shop"}
	code, js, stderr := runScan(t, append([]string{"--bootstrap-server", c.Addrs[0], "--recovery-window", "72h", "--output", "json",
		"--kubeconfig", kubeconfig}, ns...)...)
	if code != ExitViolated {
		t.Fatalf("--output json with a kubeconfig: exit %d: %s", code, stderr)
	}
	var doc struct {
		Groups []struct {
			Group     string
			Workloads *[]rgv1.GroupWorkload
		}
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	gotWorkloads := map[string][]string{}
	for _, g := range doc.Groups {
		if g.Workloads == nil {
			t.Errorf("group %s has no workloads field although the cluster was read", g.Group)
			continue
		}
		for _, w := range *g.Workloads {
			gotWorkloads[g.Group] = append(gotWorkloads[g.Group], fmt.Sprintf("%s %s/%s %s %v parked=%v",
				w.Kind, w.Namespace, w.Name, w.Confidence, w.Evidence, w.Parked))
		}
	}
	wantWorkloads := map[string][]string{
		"qim-fanout": {"Deployment qim/fanout Certain [MemberHost] parked=false",
			"Deployment qim-eu/fanout Likely [Environment] parked=true"},
		"shop-orders":            {"Rollout shop/orders Certain [MemberHost] parked=false"},
		"ledger-settle-consumer": {"CronJob ledger/settle Likely [Environment] parked=true"},
	}
	if !reflect.DeepEqual(gotWorkloads, wantWorkloads) {
		t.Errorf("--output json workloads:\n got %v\nwant %v", gotWorkloads, wantWorkloads)
	}
	_, table, _ := runScan(t, append([]string{"--bootstrap-server", c.Addrs[0], "--recovery-window", "72h", "--kubeconfig", kubeconfig}, ns...)...)
	for _, want := range []string{"WORKLOADS", "Deployment/qim/fanout (Certain), Deployment/qim-eu/fanout (Likely, parked)",
		"CronJob/ledger/settle (Likely, parked)", "Rollout/shop/orders (Certain)"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table does not say %q:\n%s", want, table)
		}
	}
	// Without a kubeconfig flag the table is Kafka's alone, KUBECONFIG set
	// or not.
	t.Setenv("KUBECONFIG", kubeconfig)
	if _, plain, _ := runScan(t, "--bootstrap-server", c.Addrs[0], "--recovery-window", "72h"); strings.Contains(plain, "WORKLOADS") {
		t.Errorf("KUBECONFIG alone made the table read the cluster:\n%s", plain)
	}
	t.Setenv("KUBECONFIG", "")

	// Only qim read: the seed 003 group has no workload there, and keeps
	// the placeholder and the instruction.
	_, some, _ := runScan(t, "--bootstrap-server", c.Addrs[0], "--recovery-window", "72h", "--emit-policies", "--kubeconfig", kubeconfig, "--namespace", "qim")
	if !strings.Contains(some, "# No workload in the namespaces read has a pod that is a live member of the group or configuration that names it.\n"+
		"# Set spec.selector to the pod labels of the group's consumers before applying.") {
		t.Errorf("a group without workloads is not explained:\n%s", some)
	}
}

// Seed 003 in modern clothes: a batch consumer KEDA parks at zero
// between runs, no live member, its offsets expired. Its ScaledObject
// (KEDA's real CRDs) declares the group: --emit-policies prints a policy
// selecting exactly that Deployment's pod template, naming the
// ScaledObject as evidence, Declared; the JSON and the table say the
// same. A ScaledObject whose consumerGroupFromEnv is a Secret's variable
// maps nothing and says so; the Secret is not read.
func TestScanEmitPoliciesKEDAParkedConsumer(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "settle-task", 1, nil)
	c.Produce(t, "settle-task", 10)
	c.CommitOffsets(t, "ledger-settle", "settle-task", map[int32]int64{0: 2})
	c.DeleteRecords(t, "settle-task", 0, 6)

	kedaCRDs, err := testenv.KEDACRDs()
	if err != nil {
		t.Fatal(err)
	}
	env, err := testenv.Start(func(e *envtest.Environment) { e.CRDDirectoryPaths = append(e.CRDDirectoryPaths, kedaCRDs...) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx, k := t.Context(), env.Client
	create := func(obj client.Object) {
		t.Helper()
		if err := k.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ledger"}})
	deployment := func(name string, replicas int32, env ...corev1.EnvVar) *appsv1.Deployment {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ledger", Name: name},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(replicas),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name, "tier": "batch"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "registry.example/" + name, Env: env}}},
				},
			},
		}
		create(d)
		return d
	}
	scaledObject := func(name string, metadata map[string]any) {
		create(&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
			"metadata": map[string]any{"namespace": "ledger", "name": name},
			"spec": map[string]any{"scaleTargetRef": map[string]any{"name": name}, "minReplicaCount": int64(0),
				"triggers": []any{map[string]any{"type": "kafka", "metadata": metadata}}},
		}})
	}
	deployment("settle", 0, corev1.EnvVar{Name: "APP_MODE", Value: "batch"})
	scaledObject("settle", map[string]any{"bootstrapServers": c.Addrs[0], "consumerGroup": "ledger-settle", "topic": "settle-task"})
	// A writer beside it shares the tier label and runs a pod.
	if _, err := testenv.RunDeploymentPod(ctx, k, deployment("writer", 1), "55c4", "10.9.9.9"); err != nil {
		t.Fatal(err)
	}
	deployment("payout", 0, corev1.EnvVar{Name: "PAYOUT_GROUP", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "payout-kafka"}, Key: "group"}}})
	scaledObject("payout", map[string]any{"bootstrapServers": c.Addrs[0], "consumerGroupFromEnv": "PAYOUT_GROUP"})

	kubeconfig := writeKubeconfig(t, env)
	code, stdout, stderr := runScan(t, "--bootstrap-server", c.Addrs[0], "--recovery-window", "72h", "--emit-policies",
		"--kubeconfig", kubeconfig, "--namespace", "ledger")
	if code != ExitViolated {
		t.Fatalf("exit %d, want %d (seed 003's group lost records); stderr: %s\n%s", code, ExitViolated, stderr, stdout)
	}
	want := "# Consumed by Deployment/settle (Declared):\n" +
		"#   ScaledObject settle scales it on the group's lag (trigger kafka, topics settle-task) [ScaledObject, Declared]\n" +
		"#   parked (no pods by its spec): matched by its configuration only\n"
	if !strings.Contains(stdout, want) {
		t.Errorf("the policy does not say\n%s\n---\n%s", want, stdout)
	}
	if want := "KEDA trigger maps no group: ScaledObject/payout (namespace ledger) trigger kafka: consumerGroup unresolvable: " +
		"consumerGroupFromEnv PAYOUT_GROUP comes from Secret payout-kafka key group, and Secrets are never read"; !strings.Contains(stderr, want) {
		t.Errorf("stderr does not say %q:\n%s", want, stderr)
	}

	policies, selectedPods, selectedTemplates := applyEmitted(t, k, stdout)
	if want := []string{"ledger/ledger-settle ledger-settle"}; !slices.Equal(policies, want) {
		t.Errorf("policies %v, want %v", policies, want)
	}
	if len(selectedPods) != 0 {
		t.Errorf("the policy selects pods %v; the consumer is parked and the writer's pod is not its", selectedPods)
	}
	if want := []string{"ledger-settle ledger/Deployment/settle"}; !slices.Equal(selectedTemplates, want) {
		t.Errorf("the policy selects workloads %v, want exactly %v", selectedTemplates, want)
	}

	code, js, stderr := runScan(t, "--bootstrap-server", c.Addrs[0], "--recovery-window", "72h", "--output", "json",
		"--kubeconfig", kubeconfig, "--namespace", "ledger")
	if code != ExitViolated {
		t.Fatalf("--output json: exit %d: %s", code, stderr)
	}
	var doc struct {
		Groups []struct {
			Group     string
			Workloads []rgv1.GroupWorkload
		}
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	var got []string
	for _, g := range doc.Groups {
		for _, w := range g.Workloads {
			got = append(got, fmt.Sprintf("%s %s %s/%s %s %v parked=%v", g.Group, w.Kind, w.Namespace, w.Name, w.Confidence, w.Evidence, w.Parked))
		}
	}
	if want := []string{"ledger-settle Deployment ledger/settle Declared [ScaledObject] parked=true"}; !slices.Equal(got, want) {
		t.Errorf("--output json workloads %v, want %v", got, want)
	}
	_, table, _ := runScan(t, "--bootstrap-server", c.Addrs[0], "--recovery-window", "72h", "--kubeconfig", kubeconfig, "--namespace", "ledger")
	if want := "Deployment/ledger/settle (Declared, parked)"; !strings.Contains(table, want) {
		t.Errorf("the table does not say %q:\n%s", want, table)
	}
}

// writeKubeconfig writes a kubeconfig for a user of env's API server.
func writeKubeconfig(t *testing.T, env *testenv.Env) string {
	t.Helper()
	user, err := env.AddUser(envtest.User{Name: "platform", Groups: []string{"system:masters"}}, &rest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// An API server that cannot be reached stops the scan with an error that
// says so (exit 2), and prints no policy: never placeholder selectors in
// silence.
func TestScanEmitPoliciesAPIServerUnreachable(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: not-a-secret}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runScan(t, "--bootstrap-server", "127.0.0.1:1", "--recovery-window", "72h", "--emit-policies",
		"--kubeconfig", kubeconfig, "--timeout", "5s")
	if code != ExitUnknown || stdout != "" || !strings.Contains(stderr, "cannot read the workloads that consume the groups") ||
		!strings.Contains(stderr, "https://127.0.0.1:1") || strings.Contains(stderr, "not-a-secret") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2, nothing printed, the API server named, no token", code, stdout, stderr)
	}

	// A context the kubeconfig does not have is the same kind of error.
	code, _, stderr = runScan(t, "--bootstrap-server", "127.0.0.1:1", "--recovery-window", "72h", "--emit-policies",
		"--kubeconfig", kubeconfig, "--context", "prod")
	if code != ExitUnknown || !strings.Contains(stderr, `context "prod" does not exist`) {
		t.Errorf("missing context: exit %d, stderr %q", code, stderr)
	}
}

// applyEmitted creates the policies `scan --emit-policies` printed, as a
// user applies them, and returns them ("namespace/name group", sorted),
// the pods their selectors select ("namespace/name") and the workload
// templates they select ("group namespace/Kind/name", sorted): the
// Deployments, CronJobs and, where their CRD is served, Argo Rollouts of
// each policy's namespace.
func applyEmitted(t *testing.T, k client.Client, stdout string) (policies, pods, templates []string) {
	t.Helper()
	ctx := t.Context()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(stdout), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			break
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := k.Create(ctx, u); err != nil {
			t.Fatalf("the API server refused an emitted policy: %v\n%s", err, stdout)
		}
		var p rgv1.ConsumerRetentionPolicy
		if err := k.Get(ctx, client.ObjectKeyFromObject(u), &p); err != nil {
			t.Fatal(err)
		}
		policies = append(policies, p.Namespace+"/"+p.Name+" "+p.Spec.GroupID)
		sel, err := metav1.LabelSelectorAsSelector(&p.Spec.Selector)
		if err != nil {
			t.Fatal(err)
		}
		var podList corev1.PodList
		if err := k.List(ctx, &podList, client.InNamespace(p.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			t.Fatal(err)
		}
		for _, pod := range podList.Items {
			pods = append(pods, pod.Namespace+"/"+pod.Name)
		}
		selects := func(kind, ns, name string, l map[string]string) {
			if sel.Matches(labels.Set(l)) {
				templates = append(templates, p.Spec.GroupID+" "+ns+"/"+kind+"/"+name)
			}
		}
		var ros unstructured.UnstructuredList
		ros.SetAPIVersion("argoproj.io/v1alpha1")
		ros.SetKind("RolloutList")
		switch err := k.List(ctx, &ros, client.InNamespace(p.Namespace)); {
		case meta.IsNoMatchError(err): // no Rollout CRD in this control plane
		case err != nil:
			t.Fatal(err)
		}
		for _, ro := range ros.Items {
			tl, _, _ := unstructured.NestedStringMap(ro.Object, "spec", "template", "metadata", "labels")
			selects("Rollout", ro.GetNamespace(), ro.GetName(), tl)
		}
		var ds appsv1.DeploymentList
		if err := k.List(ctx, &ds, client.InNamespace(p.Namespace)); err != nil {
			t.Fatal(err)
		}
		for _, d := range ds.Items {
			selects("Deployment", d.Namespace, d.Name, d.Spec.Template.Labels)
		}
		var cjs batchv1.CronJobList
		if err := k.List(ctx, &cjs, client.InNamespace(p.Namespace)); err != nil {
			t.Fatal(err)
		}
		for _, cj := range cjs.Items {
			selects("CronJob", cj.Namespace, cj.Name, cj.Spec.JobTemplate.Spec.Template.Labels)
		}
	}
	slices.Sort(policies)
	slices.Sort(templates)
	return policies, pods, templates
}
