package e2e

// What a person with kubectl does and sees is test/e2e/e2eutil's, shared
// with test/e2e; here are thin wrappers over this package's stack.

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/test/e2e/e2eutil"
)

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
	return admin().Create(bg(t), e2eutil.NewDeployment(ns, name, app, replicas))
}

// scale sets replicas through the scale subresource, as `kubectl scale`
// does; it returns the API server's answer.
func scale(t *testing.T, ns, name string, replicas int32) error {
	t.Helper()
	return e2eutil.Scale(bg(t), admin(), ns, name, replicas)
}

// rollout changes the pod template (a new image tag), as a release does.
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

// withWarnings is e2eutil.WithWarnings as the admin.
func withWarnings(t *testing.T, do func(cs kubernetes.Interface) error) ([]string, error) {
	t.Helper()
	return e2eutil.WithWarnings(t, stk.Env.Config, do)
}

// rolloutWarned is rollout through withWarnings.
func rolloutWarned(t *testing.T, ns, name, tag string) ([]string, error) {
	t.Helper()
	return e2eutil.RolloutWarned(t, bg(t), stk.Env.Config, ns, name, tag)
}
