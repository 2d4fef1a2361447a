package e2e

import (
	"context"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
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

// admin is the control plane's admin client: what a person with kubectl
// uses.
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

// policy creates a Deny policy with a 72h recovery window and the
// shortest check interval the CRD allows, pointing at the e2e broker.
func policy(t *testing.T, ns, name, group, topic, app string) *rgv1.ConsumerRetentionPolicy {
	t.Helper()
	return policyWithWindow(t, ns, name, group, topic, app, 72*time.Hour)
}

func policyWithWindow(t *testing.T, ns, name, group, topic, app string, window time.Duration) *rgv1.ConsumerRetentionPolicy {
	t.Helper()
	p := &rgv1.ConsumerRetentionPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: rgv1.ConsumerRetentionPolicySpec{
			GroupID:        group,
			Topics:         []string{topic},
			RecoveryWindow: metav1.Duration{Duration: window},
			Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			Enforcement:    rgv1.Enforcement("Deny"),
			CheckInterval:  &metav1.Duration{Duration: 10 * time.Second},
			Kafka:          rgv1.PolicyKafka{BootstrapServers: []string{stk.BrokerAddr}},
		},
	}
	must(t, admin().Create(bg(t), p))
	return p
}

// deployment creates a Deployment of the consumer app (no kubelet runs
// it: admission is what is tested).
func deployment(t *testing.T, ns, name, app string, replicas int32) *appsv1.Deployment {
	t.Helper()
	labels := map[string]string{"app": app}
	d := &appsv1.Deployment{
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
	must(t, admin().Create(bg(t), d))
	return d
}

// scale sets replicas through the scale subresource, as `kubectl scale`
// does; it returns the API server's answer.
func scale(t *testing.T, ns, name string, replicas int32) error {
	t.Helper()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	s := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
	return admin().SubResource("scale").Update(bg(t), d, client.WithSubResourceBody(s))
}

// rollout changes the pod template (a new image tag), as a release does;
// it returns the API server's answer.
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

// poke annotates the policy: the reconciler reacts to annotation changes,
// so a check runs without waiting for the 10s interval (it still reuses an
// observation younger than 8s: the interval's 80%).
func poke(t *testing.T, key client.ObjectKey) {
	t.Helper()
	p := &rgv1.ConsumerRetentionPolicy{}
	if err := admin().Get(bg(t), key, p); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(p.DeepCopy())
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations["e2e.retentionguard.io/poke"] = strconv.FormatInt(time.Now().UnixNano(), 10)
	if err := admin().Patch(bg(t), p, patch); err != nil && !apierrors.IsConflict(err) {
		t.Fatal(err)
	}
}

// waitPolicy polls the policy (poking it every 2s) until ok holds, and
// returns it.
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

// events returns "Type Reason: note" of the events regarding the policy.
func events(t *testing.T, p *rgv1.ConsumerRetentionPolicy) []string {
	t.Helper()
	var list eventsv1.EventList
	must(t, admin().List(bg(t), &list, client.InNamespace(p.Namespace)))
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].CreationTimestamp.Before(&list.Items[j].CreationTimestamp) })
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "ConsumerRetentionPolicy" && e.Regarding.Name == p.Name {
			out = append(out, e.Type+" "+e.Reason+": "+e.Note)
		}
	}
	return out
}

// waitEvent waits for an event regarding the policy with the given type
// and reason, and returns it.
func waitEvent(t *testing.T, p *rgv1.ConsumerRetentionPolicy, typ, reason string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		evs := events(t, p)
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

// metric returns the value of one sample of the manager's /metrics, e.g.
// metric(t, `retentionguard_policy_verdict`, `namespace="a"`, `verdict="Proven"`),
// and false when no sample has every label.
func metric(t *testing.T, name string, labels ...string) (float64, bool) {
	t.Helper()
	body, err := stk.Metrics(bg(t))
	must(t, err)
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(\{[^}]*\})? (\S+)$`)
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		all := true
		for _, l := range labels {
			all = all && strings.Contains(m[1], l)
		}
		if all {
			v, err := strconv.ParseFloat(m[2], 64)
			must(t, err)
			return v, true
		}
	}
	return 0, false
}

// waitMetric polls /metrics until the sample has value want.
func waitMetric(t *testing.T, want float64, name string, labels ...string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		v, ok := metric(t, name, labels...)
		if ok && v == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("metric %s{%s} = %v (present %v), want %v", name, strings.Join(labels, ","), v, ok, want)
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

// scaleWarned is scale through withWarnings.
func scaleWarned(t *testing.T, ns, name string, replicas int32) ([]string, error) {
	t.Helper()
	return withWarnings(t, func(cs kubernetes.Interface) error {
		s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
		_, err := cs.AppsV1().Deployments(ns).UpdateScale(bg(t), name, s, metav1.UpdateOptions{})
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

// renewedAfter reports whether the heartbeat Lease hb was renewed after
// since: the manager confirmed the unchanged proofs it names since then.
func renewedAfter(t *testing.T, hb *rgv1.HeartbeatReference, since time.Time) bool {
	t.Helper()
	var l coordinationv1.Lease
	if err := admin().Get(bg(t), client.ObjectKey{Namespace: hb.Namespace, Name: hb.Name}, &l); err != nil {
		return false
	}
	return l.Spec.RenewTime != nil && l.Spec.RenewTime.After(since)
}
