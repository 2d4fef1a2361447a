// Package e2eutil is what a person with kubectl does and sees, for the
// end-to-end suites that run the shared stack (test/e2e on kfake,
// test/realkafka/e2e on a real Apache Kafka broker) and the real-node
// tier (test/node waits for policies with WaitPolicy): waiting for a
// policy's status and describing it, scaling and rolling out Deployments
// (with the API server's warnings kept), and reading the webhook's
// denials. Every function takes the client, config or context it uses;
// Kubectl binds them to a stack's admin client, which the suites use
// directly (stack.Stack.Admin).
package e2eutil

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// Ctx is the context of one request of a test: 60s, cancelled when the
// test ends.
func Ctx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Must fails the test on err.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Namespace creates the namespace name unless it exists.
func Namespace(t testing.TB, ctx context.Context, c client.Client, name string) {
	t.Helper()
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// NewDeployment is a Deployment of the consumer app, selecting app=app
// (no kubelet runs it: admission is what is tested).
func NewDeployment(ns, name, app string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": app}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: app, Image: "registry.example/" + app + ":1.0",
					Env: []corev1.EnvVar{{Name: "KAFKA_AUTO_OFFSET_RESET", Value: "none"}},
				}}},
			},
		},
	}
}

// Scale sets replicas through the scale subresource, as `kubectl scale`
// does; it returns the API server's answer.
func Scale(ctx context.Context, c client.Client, ns, name string, replicas int32) error {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	s := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
	return c.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(s))
}

// Rollout changes the pod template (a new image tag), as a release does;
// it returns the API server's answer to the update (reading the
// Deployment must succeed).
func Rollout(t testing.TB, ctx context.Context, c client.Client, ns, name, tag string) error {
	t.Helper()
	d := &appsv1.Deployment{}
	Must(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d))
	retag(d, tag)
	return c.Update(ctx, d)
}

// retag sets the tag of the first container's image.
func retag(d *appsv1.Deployment, tag string) {
	d.Spec.Template.Spec.Containers[0].Image = strings.Split(d.Spec.Template.Spec.Containers[0].Image, ":")[0] + ":" + tag
}

// Denied asserts err is the webhook's denial and returns its message.
func Denied(t testing.TB, err error) string {
	t.Helper()
	if err == nil {
		t.Fatal("the API server allowed the request; want a denial by retention-guard's webhook")
	}
	msg := err.Error()
	if !apierrors.IsForbidden(err) || !strings.Contains(msg, `admission webhook "workloads.retentionguard.io" denied the request`) {
		t.Fatalf("want a denial by retention-guard's webhook, got: %v", err)
	}
	return msg
}

// Contains reports (t.Errorf) each of subs that what, s, does not say.
func Contains(t testing.TB, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s does not say %q:\n%s", what, sub, s)
		}
	}
}

// Poke annotates the policy: the reconciler reacts to annotation changes,
// so a check runs without waiting for the check interval (it still reuses
// an observation younger than 80% of the interval).
func Poke(t testing.TB, ctx context.Context, c client.Client, key client.ObjectKey) {
	t.Helper()
	p := &rgv1.ConsumerRetentionPolicy{}
	Must(t, c.Get(ctx, key, p))
	patch := client.MergeFrom(p.DeepCopy())
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations["e2e.retentionguard.io/poke"] = strconv.FormatInt(time.Now().UnixNano(), 10)
	if err := c.Patch(ctx, p, patch); err != nil && !apierrors.IsConflict(err) {
		t.Fatal(err)
	}
}

// WaitPolicy polls the policy (poking it every 2s) until ok holds, and
// returns it; it fails the test, describing the status, after timeout.
// Each request has its own Ctx(t): the wait may outlast one.
func WaitPolicy(t testing.TB, c client.Client, key client.ObjectKey, timeout time.Duration, what string, ok func(*rgv1.ConsumerRetentionPolicy) bool) *rgv1.ConsumerRetentionPolicy {
	t.Helper()
	deadline := time.Now().Add(timeout)
	lastPoke := time.Time{}
	p := &rgv1.ConsumerRetentionPolicy{}
	for {
		Must(t, c.Get(Ctx(t), key, p))
		if ok(p) {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("policy %s: %s not reached within %s; status: %s", key, what, timeout, Describe(p))
		}
		if time.Since(lastPoke) > 2*time.Second {
			Poke(t, Ctx(t), c, key)
			lastPoke = time.Now()
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Verdict is the policy's proof's verdict, "" before the first proof.
func Verdict(p *rgv1.ConsumerRetentionPolicy) string {
	if p.Status.Proof == nil {
		return ""
	}
	return string(p.Status.Proof.Verdict)
}

// Ready is the policy's Ready condition, the zero condition without one.
func Ready(p *rgv1.ConsumerRetentionPolicy) metav1.Condition {
	if c := meta.FindStatusCondition(p.Status.Conditions, "Ready"); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// Describe is the policy's verdict, conditions and violations, one a line.
func Describe(p *rgv1.ConsumerRetentionPolicy) string {
	var b strings.Builder
	b.WriteString("verdict=" + Verdict(p))
	for _, c := range p.Status.Conditions {
		b.WriteString("\n  " + c.Type + "=" + string(c.Status) + " " + c.Reason + ": " + c.Message)
	}
	if p.Status.Proof != nil {
		for _, v := range p.Status.Proof.Violations {
			b.WriteString("\n  violation " + v.Reason + ": " + v.Message)
		}
	}
	return b.String()
}

// Proven reports whether the policy's current generation is Proven and
// Ready.
func Proven(p *rgv1.ConsumerRetentionPolicy) bool {
	return Verdict(p) == "Proven" && Ready(p).Status == metav1.ConditionTrue && p.Status.ObservedGeneration == p.Generation
}

// Events returns "Type Reason: note" of the events regarding the policy,
// oldest first.
func Events(t testing.TB, ctx context.Context, c client.Client, p *rgv1.ConsumerRetentionPolicy) []string {
	t.Helper()
	var list eventsv1.EventList
	Must(t, c.List(ctx, &list, client.InNamespace(p.Namespace)))
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].CreationTimestamp.Before(&list.Items[j].CreationTimestamp) })
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "ConsumerRetentionPolicy" && e.Regarding.Name == p.Name {
			out = append(out, e.Type+" "+e.Reason+": "+e.Note)
		}
	}
	return out
}

// WaitEvent waits (20s) for an event regarding the policy with the given
// type and reason, and returns it. Each request has its own Ctx(t).
func WaitEvent(t testing.TB, c client.Client, p *rgv1.ConsumerRetentionPolicy, typ, reason string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		evs := Events(t, Ctx(t), c, p)
		for _, e := range evs {
			if strings.HasPrefix(e, typ+" "+reason+":") {
				return e
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s event %s on policy %s/%s; have %q", typ, reason, p.Namespace, p.Name, evs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// warningsSeen collects the warnings the API server returns (admission
// warnings among them), as kubectl prints them.
type warningsSeen struct {
	mu sync.Mutex
	ws []string
}

func (w *warningsSeen) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ws = append(w.ws, text)
}

// WithWarnings runs a request through a client of cfg that keeps the API
// server's warnings, and returns them with its answer.
func WithWarnings(t testing.TB, cfg *rest.Config, do func(cs kubernetes.Interface) error) ([]string, error) {
	t.Helper()
	seen := &warningsSeen{}
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = seen
	cs, err := kubernetes.NewForConfig(cfg)
	Must(t, err)
	err = do(cs)
	seen.mu.Lock()
	defer seen.mu.Unlock()
	return slices.Clone(seen.ws), err
}

// RolloutWarned is Rollout through WithWarnings (a failed read is
// returned, not fatal).
func RolloutWarned(t testing.TB, ctx context.Context, cfg *rest.Config, ns, name, tag string) ([]string, error) {
	t.Helper()
	return WithWarnings(t, cfg, func(cs kubernetes.Interface) error {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		retag(d, tag)
		_, err = cs.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
}

// ScaleWarned is Scale through WithWarnings.
func ScaleWarned(t testing.TB, ctx context.Context, cfg *rest.Config, ns, name string, replicas int32) ([]string, error) {
	t.Helper()
	return WithWarnings(t, cfg, func(cs kubernetes.Interface) error {
		s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
		_, err := cs.AppsV1().Deployments(ns).UpdateScale(ctx, name, s, metav1.UpdateOptions{})
		return err
	})
}

// AllowedAtRisk asserts that a rollout was allowed with the warning of a
// proof Violated by risks only (nothing lost yet), naming the risk.
func AllowedAtRisk(t testing.TB, what string, ws []string, err error, policy, proofID, risk string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: the API server refused it, want it allowed with a warning (Violated by risks only): %v", what, err)
	}
	all := strings.Join(ws, "\n")
	t.Logf("%s: warnings:\n%s", what, all)
	Contains(t, what+"'s warnings", all,
		"retention-guard: "+policy+" is Violated (proof "+proofID+") by risks only, nothing lost yet: allowed",
		"retention-guard: "+policy+": "+risk)
}
