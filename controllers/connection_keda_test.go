package controllers

import (
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
	"github.com/retentionguard/retention-guard/internal/testenv"
	"github.com/retentionguard/retention-guard/internal/workloadread"
	"github.com/retentionguard/retention-guard/internal/workloads"
)

// installKEDACRDs installs KEDA's real ScaledObject and ScaledJob CRDs
// (testenv.KEDACRDs) into the control plane, once per control plane.
func installKEDACRDs(t *testing.T) {
	t.Helper()
	crds, err := testenv.KEDACRDs()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: crds}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("installing KEDA's CRDs: %v", err)
	}
}

// createKEDAConsumer creates seed 003 in modern clothes: a Deployment
// parked at zero replicas, no variable naming its group, and the KEDA
// ScaledObject that scales it on the lag of group on servers.
func createKEDAConsumer(t *testing.T, ns, name, group string, servers []string) {
	t.Helper()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}, Template: podTemplate(name)}}
	d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	if err := env.Client.Create(testCtx(t), d); err != nil {
		t.Fatal(err)
	}
	so := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec": map[string]any{
			"scaleTargetRef":  map[string]any{"name": name},
			"minReplicaCount": int64(0),
			"triggers": []any{map[string]any{"type": "kafka", "metadata": map[string]any{
				"bootstrapServers": strings.Join(servers, ","), "consumerGroup": group, "topic": "settle-task", "lagThreshold": "50"}}},
		},
	}}
	if err := env.Client.Create(testCtx(t), so); err != nil {
		t.Fatal(err)
	}
}

// Seed 003 in modern clothes: a consumer KEDA parks at zero between
// batches, no live member, its offsets expired. Its ScaledObject's kafka
// trigger names the group: status.unguardedGroups lists the Deployment,
// Declared and parked, with the ScaledObject as evidence. A ScaledObject
// whose trigger names another cluster's servers maps nothing here.
func TestConnectionDiscoveryNamesKEDAConsumer(t *testing.T) {
	installKEDACRDs(t)
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "settle-task", 1, nil)
	c.Produce(t, "settle-task", 10)
	c.CommitOffsets(t, "keda-settle", "settle-task", map[int32]int64{0: 2})
	c.DeleteRecords(t, "settle-task", 0, 6)

	system := labeledNamespace(t, "rg-system-", nil)
	h := startManager(t, harnessOptions{managerNamespace: system, workloads: true})
	createKEDAConsumer(t, h.ns, "settle", "keda-settle", c.Addrs)
	createKEDAConsumer(t, h.ns, "settle-dr", "keda-settle", []string{"kafka.dr-region.example:9092"})
	// A third reads its group from a Secret (KEDA resolves
	// consumerGroupFromEnv from the container's environment; the guard
	// never reads Secrets): it maps nothing, and the status says so.
	secretGroup := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "settle-secret"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "settle-secret"}},
		Template: podTemplate("settle-secret", corev1.EnvVar{Name: "TASK_CONSUMER", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "settle-kafka"}, Key: "group"}}})}}
	secretGroup.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	if err := env.Client.Create(testCtx(t), secretGroup); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(testCtx(t), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
		"metadata": map[string]any{"namespace": h.ns, "name": "settle-secret"},
		"spec": map[string]any{"scaleTargetRef": map[string]any{"name": "settle-secret"}, "triggers": []any{map[string]any{
			"type": "kafka", "metadata": map[string]any{"bootstrapServers": strings.Join(c.Addrs, ","), "consumerGroupFromEnv": "TASK_CONSUMER", "topic": "settle-task"}}}},
	}}); err != nil {
		t.Fatal(err)
	}

	name := "keda-" + strings.TrimPrefix(system, "rg-system-")
	createCKC(t, name, rgv1.ClusterKafkaConnectionSpec{
		KafkaConnectionSpec: rgv1.KafkaConnectionSpec{
			BootstrapServers: c.Addrs,
			Discovery:        &rgv1.DiscoverySpec{Enabled: true, RecoveryWindow: &metav1.Duration{Duration: 72 * time.Hour}},
		},
		AllowedNamespaces: rgv1.AllowedNamespaces{From: rgv1.NamespacesFromAll},
	})
	want := []rgv1.GroupWorkload{{Kind: "Deployment", Namespace: h.ns, Name: "settle", Confidence: "Declared", Evidence: []string{"ScaledObject"},
		Message: "ScaledObject settle scales it on the group's lag (trigger kafka, topics settle-task)", Parked: true}}
	g := NewWithT(t)
	g.Eventually(func(g Gomega) []rgv1.GroupWorkload {
		for _, u := range getCKC(g, name).Status.UnguardedGroups {
			if u.Group == "keda-settle" {
				return u.Workloads
			}
		}
		return nil
	}, 30*time.Second, 100*time.Millisecond).Should(Equal(want))
	// The Secret-fed trigger is listed with why; the other cluster's
	// (settle-dr) is not: it resolves, elsewhere.
	unresolved := getCKC(g, name).Status.UnresolvedScalers
	g.Expect(unresolved).To(HaveLen(1))
	g.Expect(unresolved[0]).To(And(HaveField("Kind", "ScaledObject"), HaveField("Namespace", h.ns), HaveField("Name", "settle-secret"),
		HaveField("Trigger", "kafka"), HaveField("Message", ContainSubstring("consumerGroup unresolvable"))))
}

// A policy whose selector misses the consumer a KEDA trigger declares for
// its group warns of that unselected consumer although no member runs
// (seed 003: parked at zero); a policy that selects it has no such
// warning.
func TestPolicyWarnsOfUnselectedKEDAConsumer(t *testing.T) {
	installKEDACRDs(t)
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "settle-task", 1, nil)
	c.Produce(t, "settle-task", 10)
	c.CommitOffsets(t, "keda-gap", "settle-task", map[int32]int64{0: 10})
	h := startManager(t, harnessOptions{workloads: true})
	createKEDAConsumer(t, h.ns, "settle", "keda-gap", c.Addrs)
	createPolicy(t, h.ns, "settle-old", "keda-gap", []string{"settle-task"}, policyOptions{servers: c.Addrs})
	createPolicy(t, h.ns, "settle", "keda-gap", []string{"settle-task"}, policyOptions{servers: c.Addrs})

	unselected := "Deployment/settle consumes the group (ScaledObject settle scales it on the group's lag (trigger kafka, topics settle-task)) " +
		"but spec.selector does not select its pod template: its rollouts are not guarded; widen the selector"
	g := NewWithT(t)
	g.Eventually(func(g Gomega) []string {
		p := getPolicy(g, h.ns, "settle-old")
		g.Expect(p.Status.Proof).NotTo(BeNil())
		return p.Status.Proof.ConfigWarnings
	}, 30*time.Second, 100*time.Millisecond).Should(ContainElement(unselected))
	g.Eventually(func(g Gomega) *rgv1.ProofStatus {
		return getPolicy(g, h.ns, "settle").Status.Proof
	}, 30*time.Second, 100*time.Millisecond).ShouldNot(BeNil())
	for _, w := range getPolicy(g, h.ns, "settle").Status.Proof.ConfigWarnings {
		g.Expect(w).NotTo(ContainSubstring("consumes the group"), "the policy selects its consumer")
	}
}

// Every policy's unselected-consumer check reads KEDA's objects cluster-wide; the
// manager's reader shares one listing for ScalersTTL, so the number of
// policies does not multiply the lists (issue 34's 20,000 policies would
// otherwise list twice each per recheck). A ScaledObject created within
// the TTL is seen once it has passed; a reader without a TTL (scan)
// lists every time.
func TestDeclaredConsumersShareOneListing(t *testing.T) {
	installKEDACRDs(t)
	ns := labeledNamespace(t, "keda-ttl-", nil)
	servers := []string{"kafka-0.kafka:9092"}
	createKEDAConsumer(t, ns, "settle", "keda-ttl", servers)
	declared := func(r *workloadread.Reader) []string {
		t.Helper()
		var snap workloads.Snapshot
		if err := r.DeclaredConsumers(testCtx(t), &snap); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range snap.Scalers {
			if s.Ref.Namespace == ns {
				names = append(names, s.Ref.Name)
			}
		}
		slices.Sort(names)
		return names
	}
	shared := &workloadread.Reader{Reader: env.Client, ScalersTTL: time.Hour}
	uncached := &workloadread.Reader{Reader: env.Client}
	if got := declared(shared); !slices.Equal(got, []string{"settle"}) {
		t.Fatalf("first listing: %v, want [settle]", got)
	}
	createKEDAConsumer(t, ns, "refund", "keda-ttl-refund", servers)
	if got := declared(shared); !slices.Equal(got, []string{"settle"}) {
		t.Errorf("within the TTL: %v, want the shared listing [settle]", got)
	}
	if got := declared(uncached); !slices.Equal(got, []string{"refund", "settle"}) {
		t.Errorf("without a TTL: %v, want [refund settle]", got)
	}
}

// Seed 003 in modern clothes, before the loss: KEDA scales the policy's
// consumer in once its lag is gone, the group empties, and its offsets
// count down until KEDA sees new lag. The status says who holds it at
// zero and when the offsets may expire (warningFacts type scaledToZero,
// in ≈ offsets.retention.minutes from when the manager saw it empty),
// with what keeps them. While the consumer runs (a member), nothing is
// said. The broker serves classic groups only (the Empty clock alone; one
// that may convert the group dates its commit too, by the record before it
// less an hour of producer skew).
func TestPolicySaysKEDAHoldsItsConsumerAtZero(t *testing.T) {
	installKEDACRDs(t)
	c := kafkatest.NewCluster(t, kafkatest.WithBrokerConfigs(map[string]string{"group.coordinator.rebalance.protocols": "classic"}))
	c.CreateTopic(t, "settle-task", 1, nil)
	c.Produce(t, "settle-task", 10)
	consumer := c.RunConsumer(t, "keda-parked", "settle-task", map[int32]int64{0: 10})
	h := startManager(t, harnessOptions{workloads: true})
	createKEDAConsumer(t, h.ns, "settle", "keda-parked", c.Addrs)
	createPolicy(t, h.ns, "settle", "keda-parked", []string{"settle-task"}, policyOptions{servers: c.Addrs})

	g := NewWithT(t)
	g.Eventually(func(g Gomega) *rgv1.ProofStatus { return getPolicy(g, h.ns, "settle").Status.Proof }, eventually, poll).
		Should(HaveField("GroupState", "Stable"))
	for _, f := range getPolicy(g, h.ns, "settle").Status.Proof.WarningFacts {
		g.Expect(f.Type).NotTo(Equal(proof.WarningScaledToZero), "the group has a member")
	}

	// KEDA scales it in (the Deployment is at 0 replicas already: the
	// member was the last one) cooldownPeriod after it last saw lag, and
	// has written that time; the group empties.
	lastActive := time.Now().Add(-5 * time.Minute).UTC().Truncate(time.Second)
	setLastActiveTime(t, h.ns, "ScaledObject", "settle", lastActive)
	consumer.Close()
	c.WaitGroupState(t, "keda-parked", "Empty")
	var fact rgv1.WarningFact
	var message string
	g.Eventually(func(g Gomega) string {
		ps := getPolicy(g, h.ns, "settle").Status.Proof
		g.Expect(ps).NotTo(BeNil())
		for i, f := range ps.WarningFacts {
			if f.Type == proof.WarningScaledToZero {
				fact, message = f, ps.Warnings[i]
				return f.Reason
			}
		}
		return ""
	}, eventually, poll).Should(Equal(proof.WarningReasonHeldByKEDA))
	g.Expect(fact.Subject).To(Equal("Deployment/settle (ScaledObject settle)"))
	g.Expect(fact.Limit).To(Equal(&metav1.Duration{Duration: 72 * time.Hour}))
	// kfake's offsets.retention.minutes is 7 days, counted from when the
	// manager saw the group empty (a bound that errs early).
	g.Expect(fact.In).NotTo(BeNil())
	g.Expect(fact.In.Duration).To(And(BeNumerically(">", 7*24*time.Hour-5*time.Minute), BeNumerically("<=", 7*24*time.Hour)))
	g.Expect(message).To(MatchRegexp(`^Deployment/settle: KEDA's ScaledObject settle holds it at zero; the group has no members ` +
		`and its offsets may expire in 6d23h \(20\d\d-\d\d-\d\dT\d\d:\d\d:\d\dZ\)\. ` +
		`Keep a member \(minReplicaCount: 1\) or add a cron trigger$`))

	// status.proof.scaledToZero says the same as data: the Deployment,
	// its ScaledObject, KEDA's lastActiveTime, and the expiry the proof
	// computed (offsetExpiry.soonestAt); the GroupOffsetsRetained
	// condition says it in words.
	p := getPolicy(g, h.ns, "settle")
	ps := p.Status.Proof
	g.Expect(ps.OffsetExpiry).NotTo(BeNil())
	g.Expect(ps.OffsetExpiry.SoonestAt).NotTo(BeNil())
	g.Expect(ps.ScaledToZero).To(HaveLen(1))
	parked := ps.ScaledToZero[0]
	g.Expect(parked.Workload).To(Equal(rgv1.KindName{Kind: "Deployment", Name: "settle"}))
	g.Expect(parked.Scaler).To(Equal(rgv1.KindName{Kind: "ScaledObject", Name: "settle"}))
	g.Expect(parked.LastActiveTime).NotTo(BeNil())
	g.Expect(parked.LastActiveTime.Time.Equal(lastActive)).To(BeTrue(), "lastActiveTime %s, KEDA wrote %s", parked.LastActiveTime, lastActive)
	g.Expect(parked.OffsetsExpireAt).To(Equal(ps.OffsetExpiry.SoonestAt))
	// One clock: the warning's in is the same expiry from checkedAt
	// (both times are written in whole seconds).
	g.Expect(parked.OffsetsExpireAt.Sub(ps.CheckedAt.Time)).To(BeNumerically("~", fact.In.Duration, time.Second))
	cond := meta.FindStatusCondition(p.Status.Conditions, proof.ClauseGroupOffsetsRetained)
	g.Expect(cond).NotTo(BeNil())
	g.Expect(cond.Message).To(HaveSuffix("Deployment/settle is held at zero by KEDA's ScaledObject settle (last active " + lastActive.Format(time.RFC3339) +
		"), which starts it only on new lag: the group's offsets may expire at " + parked.OffsetsExpireAt.UTC().Format(time.RFC3339) +
		" (status.proof.scaledToZero)"))
}

// Seed 003 under KEDA, at its end: a batch consumer parked at zero by
// its ScaledObject on a quiet topic, its group Empty for longer than its
// offsets are kept (kfake's offset.retention.ms knob stands for
// offsets.retention.minutes), so the coordinator deleted them. The
// policy still names the Deployment and its ScaledObject in
// status.proof.scaledToZero, and its GroupOffsetsRetained condition says
// KEDA's next activation has no committed offset to resume from; the
// proof fails with NoCommittedOffset (the activation the webhook then
// refuses is webhook/keda_test.go's).
func TestPolicySaysKEDAParkedConsumerLostItsOffsets(t *testing.T) {
	installKEDACRDs(t)
	c := kafkatest.NewCluster(t, kafkatest.WithOffsetExpiry(2*time.Second, 50*time.Millisecond),
		kafkatest.WithBrokerConfigs(map[string]string{"group.coordinator.rebalance.protocols": "classic"}))
	c.CreateTopic(t, "settle-task", 1, nil)
	c.Produce(t, "settle-task", 10)
	h := startManager(t, harnessOptions{workloads: true})
	createKEDAConsumer(t, h.ns, "settle", "keda-expired", c.Addrs)
	lastActive := time.Now().Add(-8 * 24 * time.Hour).UTC().Truncate(time.Second)
	setLastActiveTime(t, h.ns, "ScaledObject", "settle", lastActive)
	// The batch ran, committed, and KEDA scaled it in: Empty, then the
	// offsets expire.
	c.CommitAsMember(t, "keda-expired", "settle-task", map[int32]int64{0: 10})
	createPolicy(t, h.ns, "settle", "keda-expired", []string{"settle-task"}, policyOptions{servers: c.Addrs})

	g := NewWithT(t)
	g.Eventually(func(g Gomega) []rgv1.ScaledToZeroStatus {
		ps := getPolicy(g, h.ns, "settle").Status.Proof
		g.Expect(ps).NotTo(BeNil())
		g.Expect(ps.Violations).To(ContainElement(HaveField("Reason", proof.ReasonNoCommittedOffset)))
		return ps.ScaledToZero
	}, eventually, poll).Should(HaveLen(1))
	p := getPolicy(g, h.ns, "settle")
	g.Expect(p.Status.Proof.Verdict).To(Equal(rgv1.VerdictViolated))
	parked := p.Status.Proof.ScaledToZero[0]
	g.Expect(parked.Workload).To(Equal(rgv1.KindName{Kind: "Deployment", Name: "settle"}))
	g.Expect(parked.Scaler).To(Equal(rgv1.KindName{Kind: "ScaledObject", Name: "settle"}))
	g.Expect(parked.LastActiveTime).NotTo(BeNil())
	g.Expect(parked.LastActiveTime.Time.Equal(lastActive)).To(BeTrue())
	cond := meta.FindStatusCondition(p.Status.Conditions, proof.ClauseGroupOffsetsRetained)
	g.Expect(cond).NotTo(BeNil())
	g.Expect(cond.Message).To(ContainSubstring("Deployment/settle is held at zero by KEDA's ScaledObject settle (last active " +
		lastActive.Format(time.RFC3339) + "), which starts it only on new lag: the group has no committed offset to resume from " +
		"(NoCommittedOffset), so KEDA's next activation resumes where auto.offset.reset says (status.proof.scaledToZero)"))
}

// setLastActiveTime writes a KEDA object's status.lastActiveTime, as
// KEDA's operator does while a trigger is active.
func setLastActiveTime(t *testing.T, ns, kind, name string, at time.Time) {
	t.Helper()
	o := &unstructured.Unstructured{}
	o.SetAPIVersion("keda.sh/v1alpha1")
	o.SetKind(kind)
	if err := env.Client.Get(testCtx(t), client.ObjectKey{Namespace: ns, Name: name}, o); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(o.Object, at.UTC().Format(time.RFC3339), "status", "lastActiveTime"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Status().Update(testCtx(t), o); err != nil {
		t.Fatalf("writing %s %s's status: %v", kind, name, err)
	}
}
