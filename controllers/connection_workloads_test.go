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
	h := startManager(t, harnessOptions{managerNamespace: system})
	ctx := testCtx(t)
	spec := func(name string, env ...corev1.EnvVar) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure,
				Containers: []corev1.Container{{Name: name, Image: "registry.example/" + name, Env: env}}}}
	}
	deployment := func(name string) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name}, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}, Template: spec(name)}}
		d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		if err := env.Client.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		return d
	}
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
