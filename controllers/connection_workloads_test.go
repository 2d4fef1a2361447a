package controllers

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/testenv"
)

// status.unguardedGroups names the workloads that consume each group:
// seed 000's fan-out consumer, running (its pod's IP is the member's
// host: Certain, found by the pod lookup by IP), and seed 003's nightly
// batch, a suspended CronJob whose offsets expired (its group ID in a
// ConfigMap: Likely, parked). A Deployment beside them that consumes
// neither is named by neither.
func TestConnectionDiscoveryNamesWorkloads(t *testing.T) {
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "outbox", 1, nil)
	c.CreateTopic(t, "settle-task", 1, nil)
	c.Produce(t, "outbox", 10)
	c.Produce(t, "settle-task", 10)
	c.RunConsumer(t, "fanout-workloads", "outbox", map[int32]int64{0: 5})
	c.CommitOffsets(t, "settle-workloads", "settle-task", map[int32]int64{0: 2})
	c.DeleteRecords(t, "settle-task", 0, 6)

	system := labeledNamespace(t, "rg-system-", nil)
	h := startManager(t, harnessOptions{managerNamespace: system, workloads: true})
	ctx := testCtx(t)
	spec := podTemplate
	deployment := func(name string) *appsv1.Deployment { return createDeployment(t, h.ns, name) }
	// kfake sees the consumer at 127.0.0.1: that is its pod's IP.
	if _, err := testenv.RunDeploymentPod(ctx, env.Client, deployment("fanout"), "7d9f", "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	if _, err := testenv.RunDeploymentPod(ctx, env.Client, deployment("writer"), "55c4", "10.9.9.9"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "settle-config"},
		Data: map[string]string{"group": "settle-workloads"}}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "settle"},
		Spec: batchv1.CronJobSpec{Schedule: "0 2 * * *", Suspend: ptr.To(true), JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			Template: spec("settle", corev1.EnvVar{Name: "SPRING_KAFKA_CONSUMER_GROUP_ID", ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "settle-config"}, Key: "group"}}})}}},
	}); err != nil {
		t.Fatal(err)
	}

	name := "workloads-" + strings.TrimPrefix(system, "rg-system-")
	createCKC(t, name, rgv1.ClusterKafkaConnectionSpec{
		KafkaConnectionSpec: rgv1.KafkaConnectionSpec{
			BootstrapServers: c.Addrs,
			Discovery:        &rgv1.DiscoverySpec{Enabled: true, RecoveryWindow: &metav1.Duration{Duration: 72 * time.Hour}},
		},
		AllowedNamespaces: rgv1.AllowedNamespaces{From: rgv1.NamespacesFromAll},
	})
	want := map[string][]rgv1.GroupWorkload{
		"fanout-workloads": {{Kind: "Deployment", Namespace: h.ns, Name: "fanout", Confidence: "Certain", Evidence: []string{"MemberHost"},
			Message: "member client kgo at 127.0.0.1 is pod fanout-7d9f-x1"}},
		"settle-workloads": {{Kind: "CronJob", Namespace: h.ns, Name: "settle", Confidence: "Likely", Evidence: []string{"Environment"},
			Message: "container settle sets SPRING_KAFKA_CONSUMER_GROUP_ID to the group ID (ConfigMap settle-config key group)", Parked: true}},
	}
	g := NewWithT(t)
	g.Eventually(func(g Gomega) map[string][]rgv1.GroupWorkload {
		got := map[string][]rgv1.GroupWorkload{}
		for _, u := range getCKC(g, name).Status.UnguardedGroups {
			got[u.Group] = u.Workloads
		}
		return got
	}, 30*time.Second, 100*time.Millisecond).Should(Equal(want))
}

// podTemplate is a one-container pod template labelled app: name.
func podTemplate(name string, env ...corev1.EnvVar) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure,
			Containers: []corev1.Container{{Name: name, Image: "registry.example/" + name, Env: env}}}}
}

// createDeployment creates a one-replica Deployment selecting app: name.
func createDeployment(t *testing.T, ns, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}, Template: podTemplate(name)}}
	d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	if err := env.Client.Create(testCtx(t), d); err != nil {
		t.Fatal(err)
	}
	return d
}

// A policy whose selector misses a workload that a live member of its
// group runs in warns of that unselected consumer
// (status.proof.configWarnings): seed 000's fan-out shipped a canary
// Deployment under another app label, and the policy written for
// app=fanout does not guard it. A policy that selects the canary has no
// such warning.
func TestPolicyWarnsOfUnselectedConsumer(t *testing.T) {
	c, h := startFanoutWithCanary(t, "fanout-gap")
	createPolicy(t, h.ns, "fanout", "fanout-gap", []string{"outbox"}, policyOptions{servers: c.Addrs})
	createPolicy(t, h.ns, "fanout-canary", "fanout-gap", []string{"outbox"}, policyOptions{servers: c.Addrs})

	unselected := "Deployment/fanout-canary consumes the group (member client kgo at 127.0.0.1 is pod fanout-canary-55c4-x1) " +
		"but spec.selector does not select its pod template: its rollouts are not guarded; widen the selector"
	g := NewWithT(t)
	g.Eventually(func(g Gomega) []string {
		p := getPolicy(g, h.ns, "fanout")
		g.Expect(p.Status.Proof).NotTo(BeNil())
		return p.Status.Proof.ConfigWarnings
	}, 30*time.Second, 100*time.Millisecond).Should(ContainElement(unselected))
	g.Eventually(func(g Gomega) *rgv1.ProofStatus {
		return getPolicy(g, h.ns, "fanout-canary").Status.Proof
	}, 30*time.Second, 100*time.Millisecond).ShouldNot(BeNil())
	p := getPolicy(g, h.ns, "fanout-canary")
	for _, w := range p.Status.Proof.ConfigWarnings {
		g.Expect(w).NotTo(ContainSubstring("consumes the group"), "the policy selects its consumer")
	}
	g.Expect(p.Status.Proof.Verdict).To(Equal(rgv1.Verdict("Proven")))
}

// startFanoutWithCanary is seed 000's fan-out: a live member of group on
// outbox runs in the pod of Deployment fanout-canary (at 127.0.0.1), beside
// Deployment fanout, with a manager that maps members to workloads.
func startFanoutWithCanary(t *testing.T, group string) (*kafkatest.Cluster, *harness) {
	t.Helper()
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "outbox", 1, nil)
	c.Produce(t, "outbox", 10)
	c.RunConsumer(t, group, "outbox", map[int32]int64{0: 5})
	h := startManager(t, harnessOptions{workloads: true})
	createDeployment(t, h.ns, "fanout")
	if _, err := testenv.RunDeploymentPod(testCtx(t), env.Client, createDeployment(t, h.ns, "fanout-canary"), "55c4", "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	return c, h
}
