package controllers

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/kafka/kafkatest"
	"github.com/retentionguard/retention-guard/internal/proof"
	"github.com/retentionguard/retention-guard/internal/resolve"
)

// OAUTHBEARER end to end: a ClusterKafkaConnection whose client
// credentials live in the manager's namespace gets tokens from a real
// token endpoint on loopback; the broker checks each token; a policy that
// names the connection is proven; the client secret is in no status, event
// or log line.
func TestClusterKafkaConnectionOAuthBearer(t *testing.T) {
	const secret = "oauth-client-s3cret"
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "orders", 1, nil)
	c.Produce(t, "orders", 10)
	c.CommitOffsets(t, "billing", "orders", map[int32]int64{0: 5})
	te := kafkatest.NewTokenEndpoint(t, "retention-guard", secret)
	broker := c.RequireOAuthBearer(t, te, 0)

	system := labeledNamespace(t, "rg-system-", nil)
	h := startManager(t, harnessOptions{managerNamespace: system})
	createSecret(t, system, "idp-client", map[string]string{"clientID": "retention-guard", "clientSecret": secret})
	name := "oauth-" + strings.TrimPrefix(system, "rg-system-")
	createCKC(t, name, rgv1.ClusterKafkaConnectionSpec{
		KafkaConnectionSpec: rgv1.KafkaConnectionSpec{
			BootstrapServers: c.Addrs,
			SASL: &rgv1.KafkaSASL{Mechanism: rgv1.SASLOAuthBearer, SecretRef: &rgv1.SecretReference{Name: "idp-client"},
				OAuthBearer: &rgv1.OAuthBearer{TokenEndpoint: te.URL, Scopes: []string{"kafka"},
					Extensions: map[string]string{"logicalCluster": "lkc-abc123"}}},
		},
		AllowedNamespaces: rgv1.AllowedNamespaces{From: rgv1.NamespacesFromAll},
	})
	refPolicy(t, h.ns, "billing", "billing", []string{"orders"}, rgv1.KindClusterKafkaConnection, name)

	g := NewWithT(t)
	g.Eventually(verdictOf(h.ns, "billing"), 30*time.Second, 100*time.Millisecond).Should(Equal(rgv1.VerdictProven))
	g.Eventually(func(g Gomega) bool {
		return meta.IsStatusConditionTrue(getCKC(g, name).Status.Conditions, proof.ClauseReady)
	},
		30*time.Second, 100*time.Millisecond).Should(BeTrue())
	g.Expect(broker.Accepted()).To(BeNumerically(">", 0))
	g.Expect(broker.Rejected()).To(BeZero())
	g.Expect(broker.Principals()).To(HaveEach("retention-guard"))
	g.Expect(broker.Extensions()).To(HaveEach(HaveKeyWithValue("logicalCluster", "lkc-abc123")))

	p, _ := json.Marshal(getPolicy(g, h.ns, "billing").Status)
	ck, _ := json.Marshal(getCKC(g, name).Status)
	mustNotContain(t, secret, map[string]string{"logs": h.logs.String(), "policy status": string(p), "connection status": string(ck)})
}

// strimziCRD is Strimzi's Kafka CRD reduced to the fields a connection
// reads (status.listeners: name, bootstrapServers, certificates).
func strimziCRD() *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "kafkas.kafka.strimzi.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "kafka.strimzi.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "kafkas", Singular: "kafka", Kind: "Kafka", ListKind: "KafkaList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1beta2", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", XPreserveUnknownFields: &preserve},
						"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"listeners": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
								Type: "object",
								Properties: map[string]apiextensionsv1.JSONSchemaProps{
									"name":             str,
									"bootstrapServers": str,
									"certificates":     {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}},
								},
							}}},
						}},
					},
				}},
			}},
		},
	}
}

// installStrimziCRD installs the reduced CRD into the control plane (once
// per control plane) and waits until it is served.
func installStrimziCRD(t *testing.T) {
	t.Helper()
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{
		CRDs: []*apiextensionsv1.CustomResourceDefinition{strimziCRD()},
	}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("installing Strimzi's Kafka CRD: %v", err)
	}
}

// A platform on Strimzi declares a connection in two lines: the Kafka
// resource and a listener. The bootstrap address and the cluster CA come
// from the resource's status (a TLS listener, verified with that CA);
// a listener the status does not have is Stalled, naming the listeners
// it has.
func TestClusterKafkaConnectionFromStrimzi(t *testing.T) {
	ca := kafkatest.NewCA(t, "strimzi-cluster-ca")
	c := kafkatest.NewCluster(t, kafkatest.WithTLS(ca.ServerTLS(t), ca.ClientTLS()))
	c.CreateTopic(t, "orders", 1, nil)
	c.Produce(t, "orders", 10)
	c.CommitOffsets(t, "billing", "orders", map[int32]int64{0: 5})
	installStrimziCRD(t)

	kafkaNS := labeledNamespace(t, "kafka-", nil)
	system := labeledNamespace(t, "rg-system-", nil)
	h := startManager(t, harnessOptions{managerNamespace: system})
	k := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kafka.strimzi.io/v1beta2", "kind": "Kafka",
		"metadata": map[string]any{"name": "prod", "namespace": kafkaNS},
		"spec":     map[string]any{"kafka": map[string]any{"replicas": int64(1)}},
		"status": map[string]any{"listeners": []any{
			map[string]any{"name": "plain", "bootstrapServers": "prod-kafka-bootstrap." + kafkaNS + ".svc:9092"},
			map[string]any{"name": "tls", "bootstrapServers": strings.Join(c.Addrs, ","), "certificates": []any{string(ca.PEM)}},
		}},
	}}
	g := NewWithT(t)
	g.Expect(env.Client.Create(testCtx(t), k)).To(Succeed())

	name := "strimzi-" + strings.TrimPrefix(system, "rg-system-")
	createCKC(t, name, rgv1.ClusterKafkaConnectionSpec{
		KafkaConnectionSpec: rgv1.KafkaConnectionSpec{
			Strimzi: &rgv1.StrimziSource{KafkaRef: rgv1.StrimziKafkaReference{Namespace: kafkaNS, Name: "prod"}, Listener: "tls"},
		},
		AllowedNamespaces: rgv1.AllowedNamespaces{From: rgv1.NamespacesFromAll},
	})
	refPolicy(t, h.ns, "billing", "billing", []string{"orders"}, rgv1.KindClusterKafkaConnection, name)
	g.Eventually(verdictOf(h.ns, "billing"), 30*time.Second, 100*time.Millisecond).Should(Equal(rgv1.VerdictProven))
	g.Eventually(func(g Gomega) []string {
		ckc := getCKC(g, name)
		g.Expect(meta.IsStatusConditionTrue(ckc.Status.Conditions, proof.ClauseReady)).To(BeTrue())
		return ckc.Status.BootstrapServers
	}, 30*time.Second, 100*time.Millisecond).Should(Equal(c.Addrs))

	wrong := name + "-external"
	createCKC(t, wrong, rgv1.ClusterKafkaConnectionSpec{
		KafkaConnectionSpec: rgv1.KafkaConnectionSpec{
			Strimzi: &rgv1.StrimziSource{KafkaRef: rgv1.StrimziKafkaReference{Namespace: kafkaNS, Name: "prod"}, Listener: "external"},
		},
	})
	g.Eventually(func(g Gomega) string {
		ready := ckcReady(g, wrong)
		g.Expect(meta.IsStatusConditionTrue(getCKC(g, wrong).Status.Conditions, ConditionStalled)).To(BeTrue())
		return ready.Reason + ": " + ready.Message
	}, 30*time.Second, 100*time.Millisecond).Should(And(
		HavePrefix(resolve.ReasonStrimziListenerNotReady), ContainSubstring(`no listener "external"`), ContainSubstring("plain, tls")))
}

// retentionguard.io/requestedAt asks for a fresh observation now: with a
// check interval of an hour, a commit made after the last proof shows only
// once the annotation is set, and status.lastHandledRequestedAt answers it
// (policies and connections alike).
func TestRequestedAtObservesNow(t *testing.T) {
	c := kafkatest.NewCluster(t)
	c.CreateTopic(t, "orders", 1, nil)
	c.Produce(t, "orders", 10)
	c.CommitOffsets(t, "billing", "orders", map[int32]int64{0: 5})
	system := labeledNamespace(t, "rg-system-", nil)
	h := startManager(t, harnessOptions{managerNamespace: system, interval: time.Hour})
	name := "recheck-" + strings.TrimPrefix(system, "rg-system-")
	createCKC(t, name, rgv1.ClusterKafkaConnectionSpec{
		KafkaConnectionSpec: rgv1.KafkaConnectionSpec{BootstrapServers: c.Addrs},
		AllowedNamespaces:   rgv1.AllowedNamespaces{From: rgv1.NamespacesFromAll},
	})
	refPolicy(t, h.ns, "billing", "billing", []string{"orders"}, rgv1.KindClusterKafkaConnection, name)

	g := NewWithT(t)
	g.Eventually(verdictOf(h.ns, "billing"), 30*time.Second, 100*time.Millisecond).Should(Equal(rgv1.VerdictProven))
	g.Expect(getPolicy(g, h.ns, "billing").Status.Proof.PartitionSummary.InRange).To(Equal(int32(1)))

	// Records before 7 expire: the group's offset 5 is now behind the log
	// start, but the cached proof (an hour's interval) still says Proven.
	c.DeleteRecords(t, "orders", 0, 7)
	g.Consistently(verdictOf(h.ns, "billing"), 2*time.Second, 200*time.Millisecond).Should(Equal(rgv1.VerdictProven))

	annotate := func(obj client.Object, value string) {
		g.Expect(env.Client.Get(testCtx(t), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		a := obj.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[rgv1.RequestedAtAnnotation] = value
		obj.SetAnnotations(a)
		g.Expect(env.Client.Update(testCtx(t), obj)).To(Succeed())
	}
	annotate(&rgv1.ConsumerRetentionPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "billing"}}, "2026-11-30T03:00:00Z")
	g.Eventually(func(g Gomega) string {
		p := getPolicy(g, h.ns, "billing")
		g.Expect(p.Status.Proof.Verdict).To(Equal(rgv1.VerdictViolated))
		return p.Status.LastHandledRequestedAt
	}, 30*time.Second, 100*time.Millisecond).Should(Equal("2026-11-30T03:00:00Z"))
	g.Expect(getPolicy(g, h.ns, "billing").Status.Proof.ExpiredRecords).To(Equal(int64(2)))

	before := getCKC(g, name).Status.LastObservedAt
	g.Expect(before).NotTo(BeNil())
	time.Sleep(1100 * time.Millisecond) // lastObservedAt has a resolution of one second
	annotate(&rgv1.ClusterKafkaConnection{ObjectMeta: metav1.ObjectMeta{Name: name}}, "again")
	g.Eventually(func(g Gomega) string {
		ckc := getCKC(g, name)
		g.Expect(ckc.Status.LastObservedAt.After(before.Time)).To(BeTrue())
		return ckc.Status.LastHandledRequestedAt
	}, 30*time.Second, 100*time.Millisecond).Should(Equal("again"))
}
