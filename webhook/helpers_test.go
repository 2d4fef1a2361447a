package webhook

import (
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// testNow is the fixed "now" of the pure tests.
var testNow = time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)

// settlePolicy is seed 003's settlement consumer policy: group
// ledger-settle-consumer, topic settle-task (24 partitions), a 240h window,
// selecting app=settle, consumer container "settle".
func settlePolicy(mut ...func(*rgv1.ConsumerRetentionPolicy)) *rgv1.ConsumerRetentionPolicy {
	p := &rgv1.ConsumerRetentionPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name: "ledger-settle-consumer", Namespace: "settlement",
			UID: types.UID("9b6a7c3e-0000-4000-8000-000000000003"), Generation: 1, ResourceVersion: "1",
		},
		Spec: rgv1.ConsumerRetentionPolicySpec{
			GroupID:        "ledger-settle-consumer",
			Topics:         []string{"settle-task"},
			RecoveryWindow: metav1.Duration{Duration: 240 * time.Hour},
			Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"app": "settle"}},
			Enforcement:    rgv1.EnforcementDeny,
			CheckInterval:  &metav1.Duration{Duration: time.Minute},
			Kafka:          rgv1.PolicyKafka{BootstrapServers: []string{"kafka-0.kafka.kafka.svc:9093"}},
		},
	}
	for _, m := range mut {
		m(p)
	}
	return p
}

func withConsumer(container, reset, autoCommit string) func(*rgv1.ConsumerRetentionPolicy) {
	return func(p *rgv1.ConsumerRetentionPolicy) {
		p.Spec.Consumer = &rgv1.ConsumerClientSpec{Container: container, OffsetResetEnv: reset, AutoCommitEnv: autoCommit}
	}
}

func withEnforcement(e rgv1.Enforcement) func(*rgv1.ConsumerRetentionPolicy) {
	return func(p *rgv1.ConsumerRetentionPolicy) { p.Spec.Enforcement = e }
}

// withProof sets a status proof checked age before testNow, for the
// policy's current generation.
func withProof(proof *rgv1.ProofStatus, age time.Duration) func(*rgv1.ConsumerRetentionPolicy) {
	return func(p *rgv1.ConsumerRetentionPolicy) {
		proof = proof.DeepCopy()
		proof.CheckedAt = metav1.NewTime(testNow.Add(-age))
		p.Status.ObservedGeneration = p.Generation
		p.Status.Proof = proof
	}
}

func proven() *rgv1.ProofStatus {
	return &rgv1.ProofStatus{Verdict: rgv1.VerdictProven, GroupState: "Empty",
		PartitionSummary: rgv1.PartitionSummary{Total: 24, InRange: 24}}
}

func ptr[T any](v T) *T { return &v }

// noCommittedOffset is seed 003 after 8 days down: the group's offsets
// expired, every one of the 24 partitions has no committed offset while its
// log no longer starts at 0.
func noCommittedOffset() *rgv1.ProofStatus {
	p := &rgv1.ProofStatus{
		Verdict: rgv1.VerdictViolated, ProofID: "7f3a9c21", GroupState: "Empty",
		OffsetsRetentionMinutes: ptr[int64](10080),
		PartitionSummary:        rgv1.PartitionSummary{Total: 24, Missing: 24},
		ExpiredRecords:          0,
	}
	for i := int32(0); i < 20; i++ {
		p.Violations = append(p.Violations, rgv1.ViolationStatus{
			Reason: "NoCommittedOffset", Topic: "settle-task", Partition: ptr(i), LogStart: ptr(int64(193927 + i)), LogEnd: ptr(int64(200000)),
			Message: fmt.Sprintf("settle-task[%d]: no committed offset while log start is %d: nothing proves the group read "+
				"offsets below %d before they expired (expired group offsets look exactly like this)", i, 193927+i, 193927+i),
		})
	}
	p.ViolationsOmitted = 4
	return p
}

// container builds a container with env entries given as name=value pairs.
func container(name string, env ...string) corev1.Container {
	c := corev1.Container{Name: name, Image: "settle:1"}
	for i := 0; i+1 < len(env); i += 2 {
		c.Env = append(c.Env, corev1.EnvVar{Name: env[i], Value: env[i+1]})
	}
	return c
}

func template(labels map[string]string, cs ...corev1.Container) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: cs}}
}

func conditionReady(reason, message string) metav1.Condition {
	return metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: reason, Message: message,
		LastTransitionTime: metav1.NewTime(testNow)}
}

func readAll(r io.Reader) string {
	b, _ := io.ReadAll(r)
	return string(b)
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
