package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The defaults the CRDs apply, for the Go code that meets objects written
// before a default existed (or built without an API server). A
// +kubebuilder:default marker cannot name a Go constant: the marker keeps
// its literal, and defaults_test.go fails when the generated CRDs and
// these constants disagree.
const (
	// DefaultCheckInterval is spec.checkInterval's default on policies,
	// KafkaConnections and ClusterKafkaConnections
	// (+kubebuilder:default="1m").
	DefaultCheckInterval = time.Minute
	// DefaultEnforcement is a policy's spec.enforcement default
	// (+kubebuilder:default=Deny).
	DefaultEnforcement = EnforcementDeny
)

// CheckIntervalOrDefault is spec.checkInterval, or DefaultCheckInterval
// when it is unset or not positive.
func (s *ConsumerRetentionPolicySpec) CheckIntervalOrDefault() time.Duration {
	return checkIntervalOrDefault(s.CheckInterval)
}

// CheckIntervalOrDefault is spec.checkInterval, or DefaultCheckInterval
// when it is unset or not positive.
func (s *KafkaConnectionSpec) CheckIntervalOrDefault() time.Duration {
	return checkIntervalOrDefault(s.CheckInterval)
}

// EnforcementOrDefault is spec.enforcement, or DefaultEnforcement when it
// is unset.
func (s *ConsumerRetentionPolicySpec) EnforcementOrDefault() Enforcement {
	if s.Enforcement == "" {
		return DefaultEnforcement
	}
	return s.Enforcement
}

func checkIntervalOrDefault(d *metav1.Duration) time.Duration {
	if d != nil && d.Duration > 0 {
		return d.Duration
	}
	return DefaultCheckInterval
}
