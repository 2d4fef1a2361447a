package node

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/test/e2e/e2eutil"
)

// Scenario 7 — adoption in a day, on a real cluster: a platform team
// installs the guard where consumers already run and no policy exists.
// Two teams' workloads consume five groups: seed 000's fan-out shape (a
// Deployment, orders), a StatefulSet (ledger), seed 003's nightly batch (a
// suspended CronJob whose group ID sits in a ConfigMap: parked) and an Argo
// Rollout (payments: the real Argo Rollouts controller creates its
// ReplicaSet and pod); a writer Deployment beside them consumes nothing.
//
// The connection's discovery names each group's workload, from the
// consumer pods' addresses as the broker saw them (Certain) or the CronJob's
// configuration (Likely, parked). `retention-guard scan --emit-policies
// --kubeconfig` prints policies whose selectors select exactly the
// consumers' pods and templates; applied as printed, every policy is
// proven, no group is unguarded and no policy reports a consumer outside
// its selector. Then the Rollout's group loses records while it is scaled
// to zero, and scaling it up is refused with the numbers.
func TestAdoptionScanMapsGroupsToWorkloads(t *testing.T) {
	ctx := ctxFor(t, 15*time.Minute)
	installArgoRollouts(t)
	installed(t)
	// Argo Rollouts arrived after the guard: helm upgrade adds the
	// Rollout rule (argoRollouts.enabled: auto reads the CRD).
	out, err := helm(ctx, "upgrade", release, chartDir(), "--namespace", releaseNS, "--reuse-values", "--wait", "--timeout", "3m")
	must(t, err)
	t.Logf("helm upgrade after Argo Rollouts: %s", statusLine(out))
	waitManagerReady(t, 2)
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	must(t, admin().Get(ctx, client.ObjectKey{Name: fullname}, &vwc))
	if !slices.ContainsFunc(vwc.Webhooks[0].Rules, func(r admissionregistrationv1.RuleWithOperations) bool {
		return slices.Contains(r.APIGroups, "argoproj.io") && slices.Contains(r.Resources, "rollouts/scale")
	}) {
		t.Fatalf("after helm upgrade the webhook has no rule for argoproj.io rollouts: %+v", vwc.Webhooks[0].Rules)
	}

	const shop, ledger = "adopt-shop", "adopt-ledger"
	namespace(t, shop)
	namespace(t, ledger)
	topics := map[string]string{ // group → topic
		"adopt-orders": "adopt-orders", "adopt-payments": "adopt-payments", "adopt-ledger": "adopt-ledger", "adopt-settle": "adopt-settle",
	}
	for _, topic := range topics {
		must(t, kafka.CreateTopic(ctx, topic, 1, map[string]string{"retention.ms": strconv.FormatInt((7 * 24 * time.Hour).Milliseconds(), 10)}))
		must(t, kafka.Produce(ctx, topic, 1, 20))
	}
	// The nightly batch ran last night: its offsets are committed, its
	// CronJob is suspended until tonight.
	must(t, kafka.Commit(ctx, "adopt-settle", "adopt-settle", map[int32]int64{0: 20}))

	team := func(ns string, tpl *corev1.PodTemplateSpec) { tpl.Labels["team"] = ns }
	orders := consumerDeployment(shop, "orders", "adopt-orders", "adopt-orders", "earliest", true, 1)
	team(shop, &orders.Spec.Template)
	must(t, admin().Create(ctx, orders))
	writer := pauseDeployment(shop, "orders-writer", 1)
	team(shop, &writer.Spec.Template)
	must(t, admin().Create(ctx, writer))
	must(t, admin().Create(ctx, consumerRollout(t, shop, "payments", "adopt-payments", "adopt-payments")))

	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ledger, Name: "ledger"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To[int32](1),
			ServiceName: "ledger",
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ledger"}},
			Template:    consumerDeployment(ledger, "ledger", "adopt-ledger", "adopt-ledger", "earliest", true, 1).Spec.Template,
		},
	}
	team(ledger, &sts.Spec.Template)
	must(t, admin().Create(ctx, sts))
	must(t, admin().Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ledger, Name: "settle-config"},
		Data: map[string]string{"group": "adopt-settle"}}))
	settle := consumerContainer("adopt-settle", "adopt-settle", "none", false)
	for i, e := range settle.Env {
		if e.Name == "KAFKA_GROUP_ID" {
			settle.Env[i] = corev1.EnvVar{Name: "KAFKA_GROUP_ID", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "settle-config"}, Key: "group"}}}
		}
	}
	must(t, admin().Create(ctx, &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ledger, Name: "settle"},
		Spec: batchv1.CronJobSpec{Schedule: "0 2 * * *", Suspend: ptr.To(true), JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "settle", "team": ledger}},
				Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{settle}},
			},
		}}},
	}))

	// The three running consumers read their topic to the end.
	consumers := map[string]string{"adopt-orders": shop + "/orders", "adopt-payments": shop + "/payments", "adopt-ledger": ledger + "/ledger"}
	podOf := map[string]string{} // group → its consumer pod
	for group, w := range consumers {
		ns, app, _ := strings.Cut(w, "/")
		pod := runningPod(t, ns, app)
		waitLog(t, ns, pod, "consumed through offset 19", 2*time.Minute, func(c consumed) bool { return c.last[0] == 19 })
		podOf[group] = pod
	}
	var rs appsv1.ReplicaSetList
	must(t, admin().List(ctx, &rs, client.InNamespace(shop), client.MatchingLabels{"app": "payments"}))
	if len(rs.Items) != 1 || len(rs.Items[0].OwnerReferences) == 0 || rs.Items[0].OwnerReferences[0].Kind != "Rollout" {
		t.Fatalf("the Rollout's pods do not come from a ReplicaSet the Argo Rollouts controller owns: %+v", rs.Items)
	}

	// Discovery names the workloads.
	connection := &rgv1.ClusterKafkaConnection{
		ObjectMeta: metav1.ObjectMeta{Name: "adopt"},
		Spec: rgv1.ClusterKafkaConnectionSpec{
			KafkaConnectionSpec: rgv1.KafkaConnectionSpec{
				BootstrapServers: []string{brk.addr},
				CheckInterval:    &metav1.Duration{Duration: 10 * time.Second},
				Discovery: &rgv1.DiscoverySpec{Enabled: true, GroupPattern: "^adopt-",
					RecoveryWindow: &metav1.Duration{Duration: 72 * time.Hour}},
			},
			AllowedNamespaces: rgv1.AllowedNamespaces{From: rgv1.NamespacesFromAll},
		},
	}
	must(t, admin().Create(ctx, connection))
	t.Cleanup(func() { _ = admin().Delete(context.Background(), connection) })
	want := map[string]string{
		"adopt-orders":   "Deployment " + shop + "/orders Certain",
		"adopt-payments": "Rollout " + shop + "/payments Certain",
		"adopt-ledger":   "StatefulSet " + ledger + "/ledger Certain",
		"adopt-settle":   "CronJob " + ledger + "/settle Likely parked",
	}
	var unguarded []rgv1.UnguardedGroup
	waitFor(t, "status.unguardedGroups of ClusterKafkaConnection adopt names each group's workload", 2*time.Minute, func() error {
		var c rgv1.ClusterKafkaConnection
		if err := admin().Get(suite, client.ObjectKey{Name: "adopt"}, &c); err != nil {
			return err
		}
		unguarded = c.Status.UnguardedGroups
		got := map[string]string{}
		for _, u := range unguarded {
			var ws []string
			for _, w := range u.Workloads {
				s := w.Kind + " " + w.Namespace + "/" + w.Name + " " + w.Confidence
				if w.Parked {
					s += " parked"
				}
				ws = append(ws, s)
			}
			got[u.Group] = strings.Join(ws, ", ")
		}
		for g, w := range want {
			if got[g] != w {
				return fmt.Errorf("group %s: workloads %q, want %q (all: %v)", g, got[g], w, got)
			}
		}
		return nil
	})
	for _, u := range unguarded {
		for _, w := range u.Workloads {
			if w.Confidence == "Certain" && !slices.Contains(w.Evidence, "MemberHost") {
				t.Errorf("group %s: %s/%s is Certain without MemberHost evidence: %+v", u.Group, w.Kind, w.Name, w)
			}
			if w.Confidence == "Certain" && !strings.Contains(w.Message, podOf[u.Group]) {
				t.Errorf("group %s: the evidence does not name the consumer's pod %s: %s", u.Group, podOf[u.Group], w.Message)
			}
			t.Logf("unguarded group %s: %s %s/%s %s %v: %s", u.Group, w.Kind, w.Namespace, w.Name, w.Confidence, w.Evidence, w.Message)
		}
	}

	// scan --emit-policies, as a platform engineer runs it from a laptop.
	scanOut, err := command(ctx, tools.cli, "scan", "--bootstrap-server", brk.addr, "--group-pattern", "^adopt-",
		"--recovery-window", "72h", "--emit-policies", "--kubeconfig", nd.Kubeconfig)
	if err != nil {
		t.Fatalf("scan --emit-policies: %v", err)
	}
	t.Logf("scan --emit-policies printed:\n%s", scanOut)
	policies := decodePolicies(t, scanOut)
	wantTemplates := map[string][]string{ // group → the workloads its policy must select, exactly
		"adopt-orders": {"Deployment/orders"}, "adopt-payments": {"Rollout/payments"},
		"adopt-ledger": {"StatefulSet/ledger"}, "adopt-settle": {"CronJob/settle"},
	}
	var groups []string
	for _, p := range policies {
		groups = append(groups, p.Spec.GroupID)
		sel, err := metav1.LabelSelectorAsSelector(&p.Spec.Selector)
		must(t, err)
		if got := selectedTemplates(t, p.Namespace, sel); !slices.Equal(got, wantTemplates[p.Spec.GroupID]) {
			t.Errorf("the policy for %s (namespace %s, selector %s) selects the templates of %v, want exactly %v",
				p.Spec.GroupID, p.Namespace, sel, got, wantTemplates[p.Spec.GroupID])
		}
		var pods corev1.PodList
		must(t, admin().List(ctx, &pods, client.InNamespace(p.Namespace), client.MatchingLabelsSelector{Selector: sel}))
		var names []string
		for _, pod := range pods.Items {
			names = append(names, pod.Name)
		}
		var wantPods []string
		if pod, ok := podOf[p.Spec.GroupID]; ok {
			wantPods = []string{pod}
		}
		if !slices.Equal(names, wantPods) {
			t.Errorf("the policy for %s selects pods %v, want exactly the consumer's %v", p.Spec.GroupID, names, wantPods)
		}
	}
	slices.Sort(groups)
	if want := []string{"adopt-ledger", "adopt-orders", "adopt-payments", "adopt-settle"}; !slices.Equal(groups, want) {
		t.Fatalf("scan printed policies for %v, want one for each of %v", groups, want)
	}

	// Applied as printed.
	file := filepath.Join(tools.dir, "adopt-policies.yaml")
	must(t, os.WriteFile(file, []byte(scanOut), 0o600))
	out, err = kubectl(ctx, "apply", "-f", file)
	must(t, err)
	t.Logf("kubectl apply: %s", strings.TrimSpace(out))
	for _, p := range policies {
		key := client.ObjectKeyFromObject(&p)
		got := e2eutil.WaitPolicy(t, admin(), key, 2*time.Minute, "Proven with no consumer outside its selector", func(p *rgv1.ConsumerRetentionPolicy) bool {
			return proven(p) && p.Status.ObservedGeneration == p.Generation
		})
		for _, w := range got.Status.Proof.ConfigWarnings {
			if strings.Contains(w, "consumes the group") {
				t.Errorf("policy %s as printed misses a consumer: %s", key, w)
			}
		}
	}
	waitGuarded(t, shop)
	waitGuarded(t, ledger)
	waitFor(t, "no adopt- group unguarded", 2*time.Minute, func() error {
		var c rgv1.ClusterKafkaConnection
		if err := admin().Get(suite, client.ObjectKey{Name: "adopt"}, &c); err != nil {
			return err
		}
		for _, u := range c.Status.UnguardedGroups {
			if strings.HasPrefix(u.Group, "adopt-") {
				return fmt.Errorf("group %s still unguarded (%d unguarded)", u.Group, c.Status.UnguardedGroupCount)
			}
		}
		return nil
	})

	// The Rollout's group loses records while it is scaled to zero; scaling
	// it up is refused with the numbers.
	waitCommitted(t, "adopt-payments", "adopt-payments", map[int32]int64{0: 20})
	if _, err := kubectl(ctx, "scale", "rollout/payments", "--namespace", shop, "--replicas=0"); err != nil {
		t.Fatalf("a scale-down is never refused: %v", err)
	}
	noPods(t, shop, "payments")
	must(t, kafka.Produce(ctx, "adopt-payments", 1, 100))
	must(t, kafka.DeleteRecords(ctx, "adopt-payments", map[int32]int64{0: 70}))
	var payments rgv1.ConsumerRetentionPolicy
	for _, p := range policies {
		if p.Spec.GroupID == "adopt-payments" {
			payments = p
		}
	}
	e2eutil.WaitPolicy(t, admin(), client.ObjectKeyFromObject(&payments), time.Minute, "Violated with 50 expired records", func(p *rgv1.ConsumerRetentionPolicy) bool {
		return e2eutil.Verdict(p) == "Violated" && p.Status.Proof.ExpiredRecords == 50
	})
	out, err = kubectl(ctx, "scale", "rollout/payments", "--namespace", shop, "--replicas=1")
	deniedByWebhook(t, out, err)
	contains(t, "the denial", out, "policy "+payments.Name+" (group adopt-payments)",
		"CommittedOffsetExpired adopt-payments[0]: committed offset 20 is below log start 70: 50 records expired before this group read them")
	t.Logf("scaling the Rollout of a Violated group: %s", strings.TrimSpace(out))
	ro := &unstructured.Unstructured{}
	ro.SetAPIVersion("argoproj.io/v1alpha1")
	ro.SetKind("Rollout")
	must(t, admin().Get(ctx, client.ObjectKey{Namespace: shop, Name: "payments"}, ro))
	if r, _, _ := unstructured.NestedInt64(ro.Object, "spec", "replicas"); r != 0 {
		t.Errorf("the refused scale changed the Rollout's replicas to %d", r)
	}
}

// consumerRollout is an Argo Rollout (canary, no steps) of test/consumer
// for group on topic, in pods labelled app=name.
func consumerRollout(t *testing.T, ns, name, group, topic string) *unstructured.Unstructured {
	t.Helper()
	tpl := consumerDeployment(ns, name, group, topic, "earliest", true, 1).Spec.Template
	tpl.Labels["team"] = ns
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&tpl)
	must(t, err)
	unstructured.RemoveNestedField(raw, "metadata", "creationTimestamp")
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec": map[string]any{
			"replicas": int64(1),
			"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
			"template": raw,
			"strategy": map[string]any{"canary": map[string]any{}},
		},
	}}
}

// decodePolicies reads the policies scan --emit-policies printed.
func decodePolicies(t *testing.T, out string) []rgv1.ConsumerRetentionPolicy {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	var ps []rgv1.ConsumerRetentionPolicy
	for {
		var p rgv1.ConsumerRetentionPolicy
		if err := dec.Decode(&p); err != nil {
			break
		}
		if p.Name != "" {
			ps = append(ps, p)
		}
	}
	return ps
}

// selectedTemplates lists Kind/name of the workloads in ns whose pod
// template sel selects: Deployments, StatefulSets, CronJobs and Rollouts.
func selectedTemplates(t *testing.T, ns string, sel labels.Selector) []string {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	var out []string
	add := func(kind, name string, l map[string]string) {
		if sel.Matches(labels.Set(l)) {
			out = append(out, kind+"/"+name)
		}
	}
	var ds appsv1.DeploymentList
	must(t, admin().List(ctx, &ds, client.InNamespace(ns)))
	for _, d := range ds.Items {
		add("Deployment", d.Name, d.Spec.Template.Labels)
	}
	var ss appsv1.StatefulSetList
	must(t, admin().List(ctx, &ss, client.InNamespace(ns)))
	for _, s := range ss.Items {
		add("StatefulSet", s.Name, s.Spec.Template.Labels)
	}
	var cjs batchv1.CronJobList
	must(t, admin().List(ctx, &cjs, client.InNamespace(ns)))
	for _, c := range cjs.Items {
		add("CronJob", c.Name, c.Spec.JobTemplate.Spec.Template.Labels)
	}
	ros := &unstructured.UnstructuredList{}
	ros.SetAPIVersion("argoproj.io/v1alpha1")
	ros.SetKind("RolloutList")
	must(t, admin().List(ctx, ros, client.InNamespace(ns)))
	for _, r := range ros.Items {
		l, _, _ := unstructured.NestedStringMap(r.Object, "spec", "template", "metadata", "labels")
		add("Rollout", r.GetName(), l)
	}
	slices.Sort(out)
	return out
}

// installArgoRollouts installs Argo Rollouts' CRDs and runs its controller
// (hack/build-argo-rollouts.sh) on this machine against the node's API
// server, as kube-controller-manager runs, until the test ends.
func installArgoRollouts(t *testing.T) {
	t.Helper()
	ctx := ctxFor(t, 2*time.Minute)
	out, err := kubectl(ctx, "apply", "--server-side", "-f", filepath.Join(tools.argoRollouts, "crds"))
	must(t, err)
	t.Logf("Argo Rollouts CRDs: %s", strings.TrimSpace(out))
	// Polled: kubectl wait errs on a CRD that has no conditions yet.
	waitFor(t, "the Rollout CRD Established", time.Minute, func() error {
		crd := &unstructured.Unstructured{}
		crd.SetAPIVersion("apiextensions.k8s.io/v1")
		crd.SetKind("CustomResourceDefinition")
		if err := admin().Get(suite, client.ObjectKey{Name: "rollouts.argoproj.io"}, crd); err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
				return nil
			}
		}
		return fmt.Errorf("conditions %v", conds)
	})
	port := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		must(t, err)
		defer l.Close()
		return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	}
	logPath := filepath.Join(tools.dir, "rollouts-controller.log")
	logf, err := os.Create(logPath)
	must(t, err)
	cmd := exec.Command(filepath.Join(tools.argoRollouts, "rollouts-controller"), "--kubeconfig", nd.Kubeconfig,
		"--leader-elect=false", "--metricsport", port(), "--healthzPort", port(), "--loglevel", "warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	must(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("rollouts-controller log:\n%s", tailString(string(data), 3000))
		}
	})
}
