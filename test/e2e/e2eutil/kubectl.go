package e2eutil

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// Kubectl is what a person with kubectl holds on a stack's control plane:
// its admin client and config (stack.Stack.Admin). Both end-to-end
// suites call its methods, each request with its own Ctx(t).
type Kubectl struct {
	Client client.Client
	Config *rest.Config
}

// Namespace creates the namespace name unless it exists.
func (k Kubectl) Namespace(t testing.TB, name string) {
	t.Helper()
	Namespace(t, Ctx(t), k.Client, name)
}

// Create creates obj and returns the API server's answer.
func (k Kubectl) Create(t testing.TB, obj client.Object) error {
	t.Helper()
	return k.Client.Create(Ctx(t), obj)
}

// Scale is Scale as the admin.
func (k Kubectl) Scale(t testing.TB, ns, name string, replicas int32) error {
	t.Helper()
	return Scale(Ctx(t), k.Client, ns, name, replicas)
}

// Rollout is Rollout as the admin.
func (k Kubectl) Rollout(t testing.TB, ns, name, tag string) error {
	t.Helper()
	return Rollout(t, Ctx(t), k.Client, ns, name, tag)
}

// WaitPolicy is WaitPolicy as the admin.
func (k Kubectl) WaitPolicy(t testing.TB, key client.ObjectKey, timeout time.Duration, what string, ok func(*rgv1.ConsumerRetentionPolicy) bool) *rgv1.ConsumerRetentionPolicy {
	t.Helper()
	return WaitPolicy(t, k.Client, key, timeout, what, ok)
}

// WaitEvent is WaitEvent as the admin.
func (k Kubectl) WaitEvent(t testing.TB, p *rgv1.ConsumerRetentionPolicy, typ, reason string) string {
	t.Helper()
	return WaitEvent(t, k.Client, p, typ, reason)
}

// WithWarnings is WithWarnings as the admin.
func (k Kubectl) WithWarnings(t testing.TB, do func(cs kubernetes.Interface) error) ([]string, error) {
	t.Helper()
	return WithWarnings(t, k.Config, do)
}

// RolloutWarned is RolloutWarned as the admin.
func (k Kubectl) RolloutWarned(t testing.TB, ns, name, tag string) ([]string, error) {
	t.Helper()
	return RolloutWarned(t, Ctx(t), k.Config, ns, name, tag)
}

// ScaleWarned is ScaleWarned as the admin.
func (k Kubectl) ScaleWarned(t testing.TB, ns, name string, replicas int32) ([]string, error) {
	t.Helper()
	return ScaleWarned(t, Ctx(t), k.Config, ns, name, replicas)
}

// NewPolicy is a Deny policy named name on group and topic, selecting the
// pods labelled app=app, with the shortest check interval the CRD allows
// (10s), on the brokers at bootstrap.
func NewPolicy(ns, name, group, topic, app, bootstrap string, window time.Duration) *rgv1.ConsumerRetentionPolicy {
	return &rgv1.ConsumerRetentionPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: rgv1.ConsumerRetentionPolicySpec{
			GroupID:        group,
			Topics:         []string{topic},
			RecoveryWindow: metav1.Duration{Duration: window},
			Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			Enforcement:    rgv1.EnforcementDeny,
			CheckInterval:  &metav1.Duration{Duration: 10 * time.Second},
			Kafka:          rgv1.PolicyKafka{BootstrapServers: []string{bootstrap}},
		},
	}
}
