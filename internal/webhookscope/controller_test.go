package webhookscope_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/testenv"
	"github.com/retentionguard/retention-guard/internal/webhookscope"
	"github.com/retentionguard/retention-guard/test/chartrender"
	"github.com/retentionguard/retention-guard/webhook"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &env)) }

// chartWebhook is the ValidatingWebhookConfiguration the chart renders with
// its defaults, pointed at an address where nothing answers: every call
// fails, and failurePolicy Fail refuses what is called for — the manager
// down.
func chartWebhook(t *testing.T) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	objs, err := chartrender.Render(filepath.Join(testenv.RepoRoot(), "charts", "retention-guard"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() != "ValidatingWebhookConfiguration" {
			continue
		}
		var vwc admissionregistrationv1.ValidatingWebhookConfiguration
		if err := env.Scheme.Convert(o, &vwc, nil); err != nil {
			t.Fatal(err)
		}
		vwc.TypeMeta = metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"}
		vwc.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1" + webhook.Path)}
		vwc.Webhooks[0].TimeoutSeconds = ptr.To[int32](2)
		return &vwc
	}
	t.Fatal("the chart rendered no ValidatingWebhookConfiguration")
	return nil
}

// helmApply applies the configuration as Helm 4 does (server-side apply,
// field manager "helm", no force).
func helmApply(ctx context.Context, vwc *admissionregistrationv1.ValidatingWebhookConfiguration) error {
	u := vwc.DeepCopy()
	u.ResourceVersion, u.ManagedFields = "", nil
	//lint:ignore SA1019 Helm sends the whole object as an apply patch, which the typed Apply cannot.
	return env.Client.Patch(ctx, u, client.Apply, client.FieldOwner("helm"))
}

func guarded(ctx context.Context, name string) (string, error) {
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &vwc); err != nil {
		return "", err
	}
	for _, c := range vwc.Webhooks[0].MatchConditions {
		if c.Name == webhookscope.ConditionName {
			return c.Expression, nil
		}
	}
	return "", nil
}

func deployment(ns, name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "consumer:1"}}},
			},
		},
	}
}

func policy(ns string) *rgv1.ConsumerRetentionPolicy {
	return &rgv1.ConsumerRetentionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns},
		Spec: rgv1.ConsumerRetentionPolicySpec{
			GroupID:        "orders",
			Topics:         []string{"orders"},
			RecoveryWindow: metav1.Duration{Duration: time.Hour},
			Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"app": "orders"}},
			Kafka:          rgv1.PolicyKafka{BootstrapServers: []string{"kafka:9092"}},
		},
	}
}

// The issue on a real node: with the manager down (failurePolicy Fail),
// every Deployment rollout in every namespace was refused ("no endpoints
// available"), ingress and monitoring included. With guarded-namespaces
// kept by the leader, only the namespaces that hold policies are refused;
// Helm's own apply of the chart (on upgrade, with the live value the chart
// looks up) does not conflict with the manager; and a deleted
// configuration is never re-created by the manager.
func TestOnlyNamespacesWithPoliciesDependOnTheWebhook(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	vwc := chartWebhook(t)
	g.Expect(helmApply(ctx, vwc)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), vwc) })
	g.Expect(guarded(ctx, vwc.Name)).To(Equal(webhookscope.Expression(nil)), "a fresh install guards no namespace")

	for _, ns := range []string{"orders", "monitoring"} {
		g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	// Nothing answers the webhook, and no policy exists: nothing is refused.
	g.Expect(env.Client.Create(ctx, deployment("orders", "before-any-policy"))).To(Succeed())

	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect((&webhookscope.Reconciler{ConfigurationName: vwc.Name, WebhookName: webhook.Name}).SetupWithManager(mgr)).To(Succeed())
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() { stop(); <-done })

	g.Expect(env.Client.Create(ctx, policy("orders"))).To(Succeed())
	g.Eventually(func() (string, error) { return guarded(ctx, vwc.Name) }).WithTimeout(30 * time.Second).
		Should(Equal(`request.namespace in ["orders"]`))

	// The manager is "down" (nothing answers): the guarded namespace is
	// refused, the unguarded one rolls out.
	err = env.Client.Create(ctx, deployment("orders", "consumer"))
	g.Expect(err).To(HaveOccurred(), "a rollout in a namespace holding a policy must depend on the webhook")
	g.Expect(err.Error()).To(ContainSubstring("failed calling webhook"))
	g.Expect(env.Client.Create(ctx, deployment("monitoring", "prometheus"))).To(Succeed(),
		"a namespace without policies must not depend on the webhook")

	// helm upgrade: the chart renders the live expression (lookup), so
	// Helm's apply agrees with the manager's field and does not conflict.
	live := vwc.DeepCopy()
	for i, c := range live.Webhooks[0].MatchConditions {
		if c.Name == webhookscope.ConditionName {
			live.Webhooks[0].MatchConditions[i].Expression = `request.namespace in ["orders"]`
		}
	}
	g.Expect(helmApply(ctx, live)).To(Succeed())
	// Without the lookup the chart would render the initial value, which
	// the manager owns now: Helm would fail with a conflict — the reason
	// the chart reads it back.
	err = helmApply(ctx, vwc)
	g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "want a conflict, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(webhookscope.FieldOwner))

	// The last policy of the namespace goes: so does its dependency.
	g.Expect(env.Client.Delete(ctx, policy("orders"))).To(Succeed())
	g.Eventually(func() (string, error) { return guarded(ctx, vwc.Name) }).WithTimeout(30 * time.Second).
		Should(Equal(webhookscope.Expression(nil)))
	g.Expect(env.Client.Create(ctx, deployment("orders", "consumer"))).To(Succeed())

	// Deleted (helm uninstall, or the emergency procedure): the manager
	// does not bring it back, a policy created meanwhile included.
	g.Expect(env.Client.Delete(ctx, vwc)).To(Succeed())
	g.Expect(env.Client.Create(ctx, policy("monitoring"))).To(Succeed())
	g.Consistently(func() bool {
		_, err := guarded(ctx, vwc.Name)
		return apierrors.IsNotFound(err)
	}).WithTimeout(3 * time.Second).Should(BeTrue())
}
