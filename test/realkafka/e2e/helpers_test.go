package e2e

// What a person with kubectl does and sees, as test/e2e's helpers do (that
// package's are test files, not importable): kept to what these scenarios
// use.

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

func admin() client.Client { return stk.Env.Client }

func bg(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func namespace(t *testing.T, name string) {
	t.Helper()
	err := admin().Create(bg(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// policy creates a Deny policy with the shortest check interval the CRD
// allows, on the broker at bootstrap.
func policy(t *testing.T, ns, group, topic, app, bootstrap string, window time.Duration) *rgv1.ConsumerRetentionPolicy {
	t.Helper()
	return policyWith(t, ns, group, topic, app, bootstrap, window, nil)
}

// policyWith is policy, with edit applied to the spec before it is
// created.
func policyWith(t *testing.T, ns, group, topic, app, bootstrap string, window time.Duration,
	edit func(*rgv1.ConsumerRetentionPolicySpec)) *rgv1.ConsumerRetentionPolicy {
	t.Helper()
	p := &rgv1.ConsumerRetentionPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: group},
		Spec: rgv1.ConsumerRetentionPolicySpec{
			GroupID:        group,
			Topics:         []string{topic},
			RecoveryWindow: metav1.Duration{Duration: window},
			Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			Enforcement:    rgv1.Enforcement("Deny"),
			CheckInterval:  &metav1.Duration{Duration: 10 * time.Second},
			Kafka:          rgv1.PolicyKafka{BootstrapServers: []string{bootstrap}},
		},
	}
	if edit != nil {
		edit(&p.Spec)
	}
	must(t, admin().Create(bg(t), p))
	return p
}

// deployment creates a Deployment of the consumer app (no kubelet runs
// it: admission is what is tested) and returns the API server's answer.
func deployment(t *testing.T, ns, name, app string, replicas int32) error {
	t.Helper()
	return admin().Create(bg(t), newDeployment(ns, name, app, replicas))
}

func newDeployment(ns, name, app string, replicas int32) *appsv1.Deployment {
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

// scale sets replicas through the scale subresource, as `kubectl scale`
// does; it returns the API server's answer.
func scale(t *testing.T, ns, name string, replicas int32) error {
	t.Helper()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	s := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
	return admin().SubResource("scale").Update(bg(t), d, client.WithSubResourceBody(s))
}

// rollout changes the pod template (a new image tag), as a release does.
func rollout(t *testing.T, ns, name, tag string) error {
	t.Helper()
	d := &appsv1.Deployment{}
	must(t, admin().Get(bg(t), client.ObjectKey{Namespace: ns, Name: name}, d))
	d.Spec.Template.Spec.Containers[0].Image = strings.Split(d.Spec.Template.Spec.Containers[0].Image, ":")[0] + ":" + tag
	return admin().Update(bg(t), d)
}

// denied asserts err is the webhook's denial and returns its message.
func denied(t *testing.T, err error) string {
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

func contains(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s does not say %q:\n%s", what, sub, s)
		}
	}
}

// poke annotates the policy: the reconciler reacts, so a check runs
// without waiting for the interval.
func poke(t *testing.T, key client.ObjectKey) {
	t.Helper()
	p := &rgv1.ConsumerRetentionPolicy{}
	must(t, admin().Get(bg(t), key, p))
	patch := client.MergeFrom(p.DeepCopy())
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations["e2e.retentionguard.io/poke"] = strconv.FormatInt(time.Now().UnixNano(), 10)
	if err := admin().Patch(bg(t), p, patch); err != nil && !apierrors.IsConflict(err) {
		t.Fatal(err)
	}
}

// waitPolicy polls the policy (poking it every 2s) until ok holds.
func waitPolicy(t *testing.T, key client.ObjectKey, timeout time.Duration, what string, ok func(*rgv1.ConsumerRetentionPolicy) bool) *rgv1.ConsumerRetentionPolicy {
	t.Helper()
	deadline := time.Now().Add(timeout)
	lastPoke := time.Time{}
	p := &rgv1.ConsumerRetentionPolicy{}
	for {
		must(t, admin().Get(bg(t), key, p))
		if ok(p) {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("policy %s: %s not reached within %s; status: %s", key, what, timeout, describe(p))
		}
		if time.Since(lastPoke) > 2*time.Second {
			poke(t, key)
			lastPoke = time.Now()
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func verdict(p *rgv1.ConsumerRetentionPolicy) string {
	if p.Status.Proof == nil {
		return ""
	}
	return string(p.Status.Proof.Verdict)
}

func ready(p *rgv1.ConsumerRetentionPolicy) metav1.Condition {
	if c := meta.FindStatusCondition(p.Status.Conditions, "Ready"); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func describe(p *rgv1.ConsumerRetentionPolicy) string {
	var b strings.Builder
	b.WriteString("verdict=" + verdict(p))
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

func proven(p *rgv1.ConsumerRetentionPolicy) bool {
	return verdict(p) == "Proven" && ready(p).Status == metav1.ConditionTrue && p.Status.ObservedGeneration == p.Generation
}

// waitEvent waits for an event regarding the policy with the given type
// and reason, and returns it.
func waitEvent(t *testing.T, p *rgv1.ConsumerRetentionPolicy, typ, reason string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var list eventsv1.EventList
		must(t, admin().List(bg(t), &list, client.InNamespace(p.Namespace)))
		sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].CreationTimestamp.Before(&list.Items[j].CreationTimestamp) })
		var evs []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "ConsumerRetentionPolicy" && e.Regarding.Name == p.Name {
				s := e.Type + " " + e.Reason + ": " + e.Note
				if strings.HasPrefix(s, typ+" "+reason+":") {
					return s
				}
				evs = append(evs, s)
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

// withWarnings runs a request as the admin, through a client that keeps
// the API server's warnings, and returns them with its answer.
func withWarnings(t *testing.T, do func(cs kubernetes.Interface) error) ([]string, error) {
	t.Helper()
	seen := &warningsSeen{}
	cfg := rest.CopyConfig(stk.Env.Config)
	cfg.WarningHandler = seen
	cs, err := kubernetes.NewForConfig(cfg)
	must(t, err)
	err = do(cs)
	seen.mu.Lock()
	defer seen.mu.Unlock()
	return slices.Clone(seen.ws), err
}

// rolloutWarned is rollout through withWarnings.
func rolloutWarned(t *testing.T, ns, name, tag string) ([]string, error) {
	t.Helper()
	return withWarnings(t, func(cs kubernetes.Interface) error {
		d, err := cs.AppsV1().Deployments(ns).Get(bg(t), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = strings.Split(d.Spec.Template.Spec.Containers[0].Image, ":")[0] + ":" + tag
		_, err = cs.AppsV1().Deployments(ns).Update(bg(t), d, metav1.UpdateOptions{})
		return err
	})
}

// allowedAtRisk asserts that a rollout was allowed with the warning of a
// proof Violated by risks only (nothing lost yet), naming the risk.
func allowedAtRisk(t *testing.T, what string, ws []string, err error, policy, proofID, risk string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: the API server refused it, want it allowed with a warning (Violated by risks only): %v", what, err)
	}
	all := strings.Join(ws, "\n")
	t.Logf("%s: warnings:\n%s", what, all)
	contains(t, what+"'s warnings", all,
		"retention-guard: "+policy+" is Violated (proof "+proofID+") by risks only, nothing lost yet: allowed",
		"retention-guard: "+policy+": "+risk)
}
