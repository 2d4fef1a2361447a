package e2e

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/test/e2e/e2eutil"
)

// admin is the control plane's admin client: what a person with kubectl
// uses.
func admin() client.Client { return stk.Env.Client }

func bg(t *testing.T) context.Context {
	t.Helper()
	return e2eutil.Ctx(t)
}

func must(t *testing.T, err error) {
	t.Helper()
	e2eutil.Must(t, err)
}

func namespace(t *testing.T, name string) {
	t.Helper()
	e2eutil.Namespace(t, bg(t), admin(), name)
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
	d := e2eutil.NewDeployment(ns, name, app, replicas)
	must(t, admin().Create(bg(t), d))
	return d
}

// scale sets replicas through the scale subresource, as `kubectl scale`
// does; it returns the API server's answer.
func scale(t *testing.T, ns, name string, replicas int32) error {
	t.Helper()
	return e2eutil.Scale(bg(t), admin(), ns, name, replicas)
}

// rollout changes the pod template (a new image tag), as a release does;
// it returns the API server's answer.
func rollout(t *testing.T, ns, name, tag string) error {
	t.Helper()
	return e2eutil.Rollout(t, bg(t), admin(), ns, name, tag)
}

// waitPolicy is e2eutil.WaitPolicy as the admin.
func waitPolicy(t *testing.T, key client.ObjectKey, timeout time.Duration, what string, ok func(*rgv1.ConsumerRetentionPolicy) bool) *rgv1.ConsumerRetentionPolicy {
	t.Helper()
	return e2eutil.WaitPolicy(t, admin(), key, timeout, what, ok)
}

// waitEvent is e2eutil.WaitEvent as the admin.
func waitEvent(t *testing.T, p *rgv1.ConsumerRetentionPolicy, typ, reason string) string {
	t.Helper()
	return e2eutil.WaitEvent(t, admin(), p, typ, reason)
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

// rolloutWarned is rollout through e2eutil.WithWarnings, as the admin.
func rolloutWarned(t *testing.T, ns, name, tag string) ([]string, error) {
	t.Helper()
	return e2eutil.RolloutWarned(t, bg(t), stk.Env.Config, ns, name, tag)
}

// scaleWarned is scale through e2eutil.WithWarnings, as the admin.
func scaleWarned(t *testing.T, ns, name string, replicas int32) ([]string, error) {
	t.Helper()
	return e2eutil.ScaleWarned(t, bg(t), stk.Env.Config, ns, name, replicas)
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
