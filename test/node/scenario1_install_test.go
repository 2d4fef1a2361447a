package node

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/retentionguard/retention-guard/internal/webhookscope"
)

// Scenario 1: helm install with the chart's defaults (the allowed broker aside):
// both replicas Ready, one leader, the built-in rotation fills the webhook
// Secret and the caBundle, the webhook guards no namespace yet, and no
// manager log line is an error or a permission problem.
func TestInstall(t *testing.T) {
	ctx := ctxFor(t, 5*time.Minute)
	if out, err := helm(ctx, "status", release, "--namespace", releaseNS); err == nil {
		t.Fatalf("release %s exists before the install test:\n%s", release, out)
	}
	start := time.Now()
	out, err := helmInstall(ctx, release, releaseNS)
	must(t, err)
	pods := waitManagerReady(t, 2)
	report.add("helm install (chart defaults) → both manager replicas Ready", time.Since(start))
	contains(t, "NOTES.txt", out, "kubectl get crp -A", "only in namespaces that hold a ConsumerRetentionPolicy")

	// One leader, among the two replicas.
	var holder string
	waitFor(t, "a leader", time.Minute, func() (err error) {
		holder, err = leader(ctx, releaseNS, fullname+"-leader")
		return err
	})
	if !slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Name == holder }) {
		t.Errorf("the Lease is held by %q, not by one of the replicas %v", holder, podNames(pods))
	}

	// The built-in rotation: the Secret the chart created empty is filled,
	// and the CA it holds is the webhook's caBundle.
	var secret corev1.Secret
	must(t, admin().Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: fullname + "-webhook-cert"}, &secret))
	for _, k := range []string{"ca.crt", "tls.crt", "tls.key"} {
		if len(secret.Data[k]) == 0 {
			t.Errorf("the webhook Secret has no %s", k)
		}
	}
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	must(t, admin().Get(ctx, client.ObjectKey{Name: fullname}, &vwc))
	if ca := vwc.Webhooks[0].ClientConfig.CABundle; len(ca) == 0 || !bytes.Equal(ca, secret.Data["ca.crt"]) {
		t.Errorf("the caBundle (%d bytes) is not the Secret's ca.crt (%d bytes)", len(ca), len(secret.Data["ca.crt"]))
	}
	if got := guardedExpression(t); got != webhookscope.Expression(nil) {
		t.Errorf("guarded-namespaces = %s before any policy, want %s", got, webhookscope.Expression(nil))
	}

	// Logs a platform team alerts on: no error line (the replicas' race on
	// the empty Secret included), no RBAC refusal. And the Go runtime's
	// soft memory limit is 90% of the container's (setMemoryLimit): read
	// from the pod's cgroup, it keeps the heap under the chart's limit.
	for _, p := range pods {
		logs, err := kubectl(ctx, "logs", "--namespace", releaseNS, p.Name)
		must(t, err)
		limit := p.Spec.Containers[0].Resources.Limits.Memory().Value()
		want := fmt.Sprintf(`"GOMEMLIMIT":%d`, limit*9/10)
		if !slices.ContainsFunc(strings.Split(logs, "\n"), func(l string) bool {
			return strings.Contains(l, "Go memory limit") && strings.Contains(l, want)
		}) {
			t.Errorf("manager %s did not log its Go memory limit as %s (90%% of its %d-byte limit):\n%s", p.Name, want, limit, tailString(logs, 2000))
		}
		for _, line := range strings.Split(logs, "\n") {
			if strings.Contains(line, `"level":"error"`) || strings.Contains(strings.ToLower(line), "forbidden") {
				t.Errorf("manager %s logged: %s", p.Name, line)
			}
		}
	}
	t.Logf("installed in %s; leader %s; caBundle %d bytes (%s…)", time.Since(start).Round(100*time.Millisecond), holder,
		len(secret.Data["ca.crt"]), base64.StdEncoding.EncodeToString(secret.Data["ca.crt"])[:16])
}

func podNames(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// guardedExpression is the live guarded-namespaces matchCondition.
func guardedExpression(t *testing.T) string {
	t.Helper()
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	must(t, admin().Get(suite, client.ObjectKey{Name: fullname}, &vwc))
	for _, c := range vwc.Webhooks[0].MatchConditions {
		if c.Name == webhookscope.ConditionName {
			return c.Expression
		}
	}
	return ""
}

// waitGuarded waits until the webhook is called for namespace ns.
func waitGuarded(t *testing.T, ns string) {
	t.Helper()
	waitFor(t, "the webhook called for namespace "+ns, time.Minute, func() error {
		if e := guardedExpression(t); !strings.Contains(e, `"`+ns+`"`) {
			return errString("guarded-namespaces is " + e)
		}
		return nil
	})
}

type errString string

func (e errString) Error() string { return string(e) }

// Scenario 1b: helm test on the installed release passes — the chart's
// test hook (retention-guard helm-test in the manager's image) saw the
// webhook refuse a dry-run rollout its probe policy selects, answer an
// AdmissionReview through the Service over TLS checked against the
// caBundle, and the metrics answer — and leaves nothing behind: the probe
// namespace and policy, the pod, its ServiceAccount and RBAC are gone, and
// the webhook is again called for no namespace the probe added.
func TestHelmTest(t *testing.T) {
	installed(t)
	ctx := ctxFor(t, 5*time.Minute)
	start := time.Now()
	out, err := helm(ctx, "test", release, "--namespace", releaseNS, "--logs", "--timeout", "3m")
	must(t, err)
	report.add("helm test (probe policy created, dry-run refused by the webhook, Service and metrics checked, hook objects deleted)", time.Since(start))
	contains(t, "helm test", out, "Phase:          Succeeded",
		"ok: a dry-run rollout of Deployment "+fullname+"-test/"+fullname+"-test-probe-consumer",
		"is refused by the webhook, naming the probe policy",
		"retention-guard refused this rollout",
		"ok: the webhook answers through Service "+releaseNS+"/"+fullname+"-webhook",
		"TLS verified for "+fullname+"-webhook."+releaseNS+".svc",
		"ok: the manager's metrics answer through Service",
		"helm test: the guard works")
	t.Logf("helm test in %s:\n%s", time.Since(start).Round(100*time.Millisecond), out)

	noHelmTestLeftovers(t)
	waitFor(t, "the webhook no longer called for the probe namespace", time.Minute, func() error {
		if e := guardedExpression(t); strings.Contains(e, `"`+fullname+`-test"`) {
			return errString("guarded-namespaces is " + e)
		}
		return nil
	})
}

// noHelmTestLeftovers asserts that no object of the chart's helm test hook
// is left (Helm waits for each one's deletion before it returns).
func noHelmTestLeftovers(t *testing.T) {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	const test = fullname + "-test"
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: test}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNS, Name: test}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNS, Name: test}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNS, Name: test}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNS, Name: test}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: test}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: test}},
	} {
		err := admin().Get(ctx, client.ObjectKeyFromObject(o), o)
		if !apierrors.IsNotFound(err) {
			t.Errorf("%T %s left behind after helm test (get: %v)", o, client.ObjectKeyFromObject(o), err)
		}
	}
}
