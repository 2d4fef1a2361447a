package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/cli"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
	"github.com/retentionguard/retention-guard/internal/resolve"
)

// labeledNamespace creates a namespace with labels.
func labeledNamespace(t *testing.T, prefix string, labels map[string]string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix, Labels: labels}}
	if err := env.Client.Create(testCtx(t), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func createSecret(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
	if err := env.Client.Create(testCtx(t), s); err != nil {
		t.Fatal(err)
	}
}

func createCKC(t *testing.T, name string, spec rgv1.ClusterKafkaConnectionSpec) *rgv1.ClusterKafkaConnection {
	t.Helper()
	c := &rgv1.ClusterKafkaConnection{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	if err := env.Client.Create(testCtx(t), c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), c) })
	return c
}

// refPolicy is a policy that names a connection.
func refPolicy(t *testing.T, ns, name, group string, topics []string, kind, conn string) {
	t.Helper()
	p := &rgv1.ConsumerRetentionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: rgv1.ConsumerRetentionPolicySpec{
			GroupID: group, Topics: topics, RecoveryWindow: metav1.Duration{Duration: 72 * time.Hour},
			Selector:      metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			CheckInterval: &metav1.Duration{Duration: 10 * time.Second},
			Kafka:         rgv1.PolicyKafka{ConnectionRef: &rgv1.ConnectionReference{Kind: kind, Name: conn}},
		},
	}
	if err := env.Client.Create(testCtx(t), p); err != nil {
		t.Fatal(err)
	}
}

func getCKC(g Gomega, name string) *rgv1.ClusterKafkaConnection {
	c := &rgv1.ClusterKafkaConnection{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Name: name}, c)).To(Succeed())
	return c
}

func ckcReady(g Gomega, name string) metav1.Condition {
	c := getCKC(g, name)
	ready := meta.FindStatusCondition(c.Status.Conditions, proof.ClauseReady)
	g.Expect(ready).NotTo(BeNil())
	return *ready
}

func kstatusOfObject(g Gomega, obj client.Object, kind string) *status.Result {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	g.Expect(err).NotTo(HaveOccurred())
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(rgv1.GroupVersion.WithKind(kind))
	res, err := status.Compute(u)
	g.Expect(err).NotTo(HaveOccurred())
	return res
}

// The platform team declares the cluster once: a ClusterKafkaConnection
// (observed with the default, empty --allowed-bootstrap-servers) whose
// SCRAM Secret lives in the manager's namespace, allowed to
// namespaces labelled kafka=prod. App teams in two such namespaces write
// only policies (no Secret in their namespaces) and are proven; a policy
// in an unlabelled namespace is Stalled, NamespaceNotAllowed, until the
// namespace is labelled; deleting the connection makes its policies
// Unknown, never Proven. The connection's status tells Ready, brokers,
// offsets.retention.minutes per broker, how many policies name it, the
// last observation; kstatus reads it as Current; the password appears in
// no status, event or log line.
func TestClusterKafkaConnectionSharedByNamespaces(t *testing.T) {
	const password = "guard-s3cret-password"
	c := kafkatest.NewCluster(t, kafkatest.WithSASL("SCRAM-SHA-512", "guard", password))
	c.CreateTopic(t, "orders", 2, nil)
	c.Produce(t, "orders", 20)
	c.CommitOffsets(t, "billing", "orders", map[int32]int64{0: 5, 1: 5})
	c.CommitOffsets(t, "shipping", "orders", map[int32]int64{0: 7, 1: 7})
	c.CommitOffsets(t, "audit", "orders", map[int32]int64{0: 9, 1: 9})

	system := labeledNamespace(t, "rg-system-", nil)
	teamA := labeledNamespace(t, "team-a-", map[string]string{"kafka": "prod"})
	teamB := labeledNamespace(t, "team-b-", map[string]string{"kafka": "prod"})
	teamC := labeledNamespace(t, "team-c-", nil)
	// The chart's default: no server allowed to policies and
	// KafkaConnections; a ClusterKafkaConnection is the platform team's and
	// is never restricted.
	h := startManager(t, harnessOptions{namespace: teamA, managerNamespace: system, extra: []string{teamB, teamC}, allow: []string{}})
	createSecret(t, system, "prod-monitor", map[string]string{"username": "guard", "password": password})

	name := "prod-" + strings.TrimPrefix(system, "rg-system-")
	createCKC(t, name, rgv1.ClusterKafkaConnectionSpec{
		KafkaConnectionSpec: rgv1.KafkaConnectionSpec{
			BootstrapServers: c.Addrs,
			SASL:             &rgv1.KafkaSASL{Mechanism: rgv1.SASLScramSHA512, SecretRef: &rgv1.SecretReference{Name: "prod-monitor"}},
		},
		AllowedNamespaces: rgv1.AllowedNamespaces{From: rgv1.NamespacesFromSelector,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"kafka": "prod"}}},
	})
	refPolicy(t, teamA, "billing", "billing", []string{"orders"}, rgv1.KindClusterKafkaConnection, name)
	refPolicy(t, teamB, "shipping", "shipping", []string{"orders"}, rgv1.KindClusterKafkaConnection, name)
	refPolicy(t, teamC, "audit", "audit", []string{"orders"}, rgv1.KindClusterKafkaConnection, name)

	g := NewWithT(t)
	g.Eventually(verdictOf(teamA, "billing"), 30*time.Second, 100*time.Millisecond).Should(Equal(rgv1.VerdictProven))
	g.Eventually(verdictOf(teamB, "shipping"), 30*time.Second, 100*time.Millisecond).Should(Equal(rgv1.VerdictProven))
	g.Eventually(func(g Gomega) string { return readyReason(g, getPolicy(g, teamC, "audit")) }, 30*time.Second, 100*time.Millisecond).
		Should(Equal(resolve.ReasonNamespaceNotAllowed))
	audit := getPolicy(g, teamC, "audit")
	stalled := meta.FindStatusCondition(audit.Status.Conditions, ConditionStalled)
	g.Expect(stalled).NotTo(BeNil())
	g.Expect(stalled.Message).To(And(ContainSubstring(teamC), ContainSubstring("kafka=prod"), ContainSubstring("label")))
	g.Expect(audit.Status.Proof.Verdict).To(Equal(rgv1.VerdictUnknown))

	// The connection's own status.
	g.Eventually(func(g Gomega) {
		ready := ckcReady(g, name)
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
		ckc := getCKC(g, name)
		g.Expect(ckc.Status.Brokers).To(Equal(int32(1)))
		g.Expect(ckc.Status.OffsetsRetentionMinutes).To(HaveValue(Equal(int64(10080))))
		g.Expect(ckc.Status.BrokerOffsetsRetention).To(HaveLen(1))
		g.Expect(ckc.Status.BrokerOffsetsRetention[0].Minutes).To(HaveValue(Equal(int64(10080))))
		g.Expect(ckc.Status.Policies).To(Equal(int32(3)))
		g.Expect(ckc.Status.LastObservedAt).NotTo(BeNil())
		g.Expect(ckc.Status.BootstrapServers).To(Equal(c.Addrs))
		g.Expect(kstatusOfObject(g, ckc, "ClusterKafkaConnection").Status).To(Equal(status.CurrentStatus))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(gauge(g, "retentionguard_connection_ready", map[string]string{"kind": rgv1.KindClusterKafkaConnection, "namespace": "", "connection": name})).To(Equal(1.0))
	g.Expect(gauge(g, "retentionguard_connection_policies", map[string]string{"kind": rgv1.KindClusterKafkaConnection, "namespace": "", "connection": name})).To(Equal(3.0))

	// Labelling the namespace lets its policy use the connection.
	ns := &corev1.Namespace{}
	g.Expect(env.Client.Get(testCtx(t), client.ObjectKey{Name: teamC}, ns)).To(Succeed())
	ns.Labels = map[string]string{"kafka": "prod"}
	g.Expect(env.Client.Update(testCtx(t), ns)).To(Succeed())
	g.Eventually(verdictOf(teamC, "audit"), 30*time.Second, 100*time.Millisecond).Should(Equal(rgv1.VerdictProven))

	// A Connected event on the connection.
	g.Eventually(func(g Gomega) []string {
		var list eventsv1.EventList
		g.Expect(env.Client.List(context.Background(), &list)).To(Succeed())
		var reasons []string
		for _, e := range list.Items {
			if e.Regarding.Kind == rgv1.KindClusterKafkaConnection && e.Regarding.Name == name {
				reasons = append(reasons, e.Reason)
			}
		}
		return reasons
	}, 30*time.Second, 100*time.Millisecond).Should(ContainElement(EventReasonConnected))

	// Deleting the connection: its policies are Unknown, never Proven.
	g.Expect(env.Client.Delete(testCtx(t), &rgv1.ClusterKafkaConnection{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	for _, p := range [][2]string{{teamA, "billing"}, {teamB, "shipping"}} {
		g.Eventually(func(g Gomega) string { return readyReason(g, getPolicy(g, p[0], p[1])) }, 30*time.Second, 100*time.Millisecond).
			Should(Equal(resolve.ReasonConnectionNotFound))
		g.Expect(getPolicy(g, p[0], p[1]).Status.Proof.Verdict).To(Equal(rgv1.VerdictUnknown))
	}
	g.Consistently(verdictOf(teamA, "billing"), 2*time.Second, 200*time.Millisecond).Should(Equal(rgv1.VerdictUnknown))

	// The password is nowhere.
	texts := map[string]string{"logs": h.logs.String()}
	for _, p := range [][2]string{{teamA, "billing"}, {teamC, "audit"}} {
		b, _ := json.Marshal(getPolicy(g, p[0], p[1]).Status)
		texts["status of "+p[1]] = string(b)
	}
	var evs eventsv1.EventList
	g.Expect(env.Client.List(context.Background(), &evs)).To(Succeed())
	var notes bytes.Buffer
	for _, e := range evs.Items {
		notes.WriteString(e.Note + "\n")
	}
	texts["events"] = notes.String()
	mustNotContain(t, password, texts)
}

// A KafkaConnection serves the policies of its own namespace only, with
// its Secrets there.
func TestKafkaConnectionServesItsNamespace(t *testing.T) {
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "orders", 1, nil)
	c.Produce(t, "orders", 10)
	c.CommitOffsets(t, "billing", "orders", map[int32]int64{0: 5})
	other := labeledNamespace(t, "other-", nil)
	h := startManager(t, harnessOptions{extra: []string{other}})
	kc := &rgv1.KafkaConnection{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "kafka"},
		Spec: rgv1.KafkaConnectionSpec{BootstrapServers: c.Addrs}}
	g := NewWithT(t)
	g.Expect(env.Client.Create(testCtx(t), kc)).To(Succeed())
	refPolicy(t, h.ns, "billing", "billing", []string{"orders"}, rgv1.KindKafkaConnection, "kafka")
	refPolicy(t, other, "billing", "billing", []string{"orders"}, rgv1.KindKafkaConnection, "kafka")

	g.Eventually(verdictOf(h.ns, "billing"), 30*time.Second, 100*time.Millisecond).Should(Equal(rgv1.VerdictProven))
	g.Eventually(func(g Gomega) string { return readyReason(g, getPolicy(g, other, "billing")) }, 30*time.Second, 100*time.Millisecond).
		Should(Equal(resolve.ReasonConnectionNotFound))
	g.Eventually(func(g Gomega) {
		got := &rgv1.KafkaConnection{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(kc), got)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, proof.ClauseReady)).To(BeTrue())
		g.Expect(got.Status.Policies).To(Equal(int32(1)))
		g.Expect(kstatusOfObject(g, got, "KafkaConnection").Status).To(Equal(status.CurrentStatus))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
}

// scanGroup is one group of `retention-guard scan --output json`.
type scanGroup struct {
	Group          string   `json:"group"`
	Verdict        string   `json:"verdict"`
	Reasons        []string `json:"reasons"`
	ExpiredRecords int64    `json:"expiredRecords"`
}

// Discovery on a connection judges every group in its own pass, and
// status.unguardedGroups agrees with `retention-guard scan` on the same
// cluster: the same groups (but the one a policy guards), verdicts,
// deciding reasons and expired records, worst first; the metric counts
// them per verdict.
func TestConnectionDiscoveryAgreesWithScan(t *testing.T) {
	c := kafkatest.NewCluster(t)
	c.SeedGroupKinds(t)
	system := labeledNamespace(t, "rg-system-", nil)
	h := startManager(t, harnessOptions{managerNamespace: system})
	name := "discover-" + strings.TrimPrefix(system, "rg-system-")
	createCKC(t, name, rgv1.ClusterKafkaConnectionSpec{
		KafkaConnectionSpec: rgv1.KafkaConnectionSpec{
			BootstrapServers: c.Addrs,
			Discovery:        &rgv1.DiscoverySpec{Enabled: true, RecoveryWindow: &metav1.Duration{Duration: 72 * time.Hour}},
		},
		AllowedNamespaces: rgv1.AllowedNamespaces{From: rgv1.NamespacesFromAll},
	})
	refPolicy(t, h.ns, "healthy", "healthy", []string{"orders"}, rgv1.KindClusterKafkaConnection, name)

	var out, errOut bytes.Buffer
	code := cli.Execute([]string{"scan", "--bootstrap-server", c.Addrs[0], "--recovery-window", "72h", "--output", "json"}, &out, &errOut)
	if code != cli.ExitViolated {
		t.Fatalf("scan exit %d: %s", code, errOut.String())
	}
	var scanned struct{ Groups []scanGroup }
	if err := json.Unmarshal(out.Bytes(), &scanned); err != nil {
		t.Fatal(err)
	}
	var want []scanGroup
	for _, sg := range scanned.Groups {
		if sg.Group != "healthy" { // guarded by the policy
			want = append(want, sg)
		}
	}

	g := NewWithT(t)
	g.Eventually(func(g Gomega) []scanGroup {
		ckc := getCKC(g, name)
		g.Expect(ckc.Status.UnguardedGroupCount).To(Equal(int32(len(want))))
		var got []scanGroup
		for _, u := range ckc.Status.UnguardedGroups {
			sg := scanGroup{Group: u.Group, Verdict: string(u.Verdict), ExpiredRecords: u.ExpiredRecords}
			if u.Reason != "" {
				sg.Reasons = []string{u.Reason}
			}
			got = append(got, sg)
		}
		return got
	}, 30*time.Second, 100*time.Millisecond).Should(Equal(firstReasons(want)))
	ckc := getCKC(g, name)
	g.Expect(ckc.Status.DiscoveredGroups).To(Equal(int32(4)))
	g.Expect(ckc.Status.UnguardedVerdicts).To(Equal(&rgv1.GroupVerdictCounts{Proven: 1, Violated: 1, Unknown: 1}))
	labels := map[string]string{"kind": rgv1.KindClusterKafkaConnection, "namespace": "", "connection": name, "verdict": "Violated"}
	g.Expect(gauge(g, "retentionguard_connection_unguarded_groups", labels)).To(Equal(1.0))
}

// A group is guarded by any policy on the same Kafka cluster, whatever
// it names: scan --emit-policies prints policies with the bootstrap
// servers, and a team applies them beside a ClusterKafkaConnection that
// discovers the cluster (seed 003's batch group, adopted that way). The
// connection matched policies by connectionRef only and kept listing the
// adopted group as unguarded; it now matches them by the cluster ID of
// their proof (status.proof.clusterID), and a policy on another cluster
// with the same group id guards nothing here.
func TestConnectionDiscoveryCountsPoliciesByAddress(t *testing.T) {
	c := kafkatest.NewCluster(t)
	c.SeedGroupKinds(t)
	other := kafkatest.NewCluster(t)
	other.CreateTopic(t, "payments", 1, nil)
	system := labeledNamespace(t, "rg-system-", nil)
	h := startManager(t, harnessOptions{managerNamespace: system})
	name := "byaddr-" + strings.TrimPrefix(system, "rg-system-")
	createCKC(t, name, rgv1.ClusterKafkaConnectionSpec{
		KafkaConnectionSpec: rgv1.KafkaConnectionSpec{
			BootstrapServers: c.Addrs,
			CheckInterval:    &metav1.Duration{Duration: 10 * time.Second},
			Discovery:        &rgv1.DiscoverySpec{Enabled: true, RecoveryWindow: &metav1.Duration{Duration: 72 * time.Hour}},
		},
		AllowedNamespaces: rgv1.AllowedNamespaces{From: rgv1.NamespacesFromAll},
	})
	g := NewWithT(t)
	unguarded := func(g Gomega) []string {
		var got []string
		for _, u := range getCKC(g, name).Status.UnguardedGroups {
			got = append(got, u.Group)
		}
		return got
	}
	g.Eventually(unguarded, 30*time.Second, 100*time.Millisecond).Should(ConsistOf("healthy", "expired", "simple", "offsetless"))

	proved := func(policy string) *rgv1.ProofStatus {
		t.Helper()
		var st *rgv1.ProofStatus
		g.Eventually(func(g Gomega) string {
			st = getPolicy(g, h.ns, policy).Status.Proof
			g.Expect(st).NotTo(BeNil())
			return st.ClusterID
		}, 30*time.Second, 100*time.Millisecond).ShouldNot(BeEmpty())
		return st
	}
	// The same group id on another cluster guards nothing here: the
	// connection's first check after that policy's proof still lists it.
	createPolicy(t, h.ns, "expired-elsewhere", "expired", []string{"payments"}, policyOptions{servers: other.Addrs})
	proved("expired-elsewhere")
	seen := time.Now().Add(time.Second) // lastObservedAt is in whole seconds
	g.Eventually(func(g Gomega) bool {
		at := getCKC(g, name).Status.LastObservedAt
		return at != nil && at.After(seen)
	}, 45*time.Second, 100*time.Millisecond).Should(BeTrue(), "a check of the connection after the other cluster's proof was written")
	g.Expect(unguarded(g)).To(ContainElement("expired"), "a policy on another cluster guards nothing here")

	// By the cluster's own addresses: guarded, from the connection's next
	// check (every 10s).
	createPolicy(t, h.ns, "expired", "expired", []string{"payments"}, policyOptions{servers: c.Addrs})
	proved("expired")
	g.Eventually(unguarded, 45*time.Second, 100*time.Millisecond).Should(ConsistOf("healthy", "simple", "offsetless"))
	g.Expect(getCKC(g, name).Status.Policies).To(BeZero(), "status.policies counts the policies naming the connection")
}

// firstReasons keeps the deciding reason only (status lists one), and
// none for Proven groups.
func firstReasons(gs []scanGroup) []scanGroup {
	out := make([]scanGroup, 0, len(gs))
	for _, g := range gs {
		if g.Verdict == "Proven" || len(g.Reasons) == 0 {
			g.Reasons = nil
		} else {
			g.Reasons = g.Reasons[:1]
		}
		out = append(out, g)
	}
	return out
}
