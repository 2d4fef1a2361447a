package v1alpha1_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// crdSpecDefault is the default the generated CRD of file gives
// spec.<field> in v1alpha1 (generated from the +kubebuilder:default
// markers by make manifests; hack/verify.sh fails on drift).
func crdSpecDefault(t *testing.T, file, field string) (any, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", file))
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string
				Schema struct {
					OpenAPIV3Schema struct {
						Properties map[string]struct {
							Properties map[string]struct {
								Default any
							}
						}
					} `json:"openAPIV3Schema"`
				}
			}
		}
	}
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == "v1alpha1" {
			f, ok := v.Schema.OpenAPIV3Schema.Properties["spec"].Properties[field]
			return f.Default, ok && f.Default != nil
		}
	}
	t.Fatalf("%s has no version v1alpha1", file)
	return nil, false
}

// The CRDs' default markers and the Go constants the manager and the
// webhook fall back to say the same: a marker changed alone fails here.
func TestCRDDefaultsAreTheGoDefaults(t *testing.T) {
	for _, file := range []string{
		"retentionguard.io_consumerretentionpolicies.yaml",
		"retentionguard.io_kafkaconnections.yaml",
		"retentionguard.io_clusterkafkaconnections.yaml",
	} {
		d, ok := crdSpecDefault(t, file, "checkInterval")
		if !ok {
			t.Errorf("%s: spec.checkInterval has no default", file)
			continue
		}
		s, _ := d.(string)
		got, err := time.ParseDuration(s)
		if err != nil || got != rgv1.DefaultCheckInterval {
			t.Errorf("%s: spec.checkInterval defaults to %v, rgv1.DefaultCheckInterval is %s", file, d, rgv1.DefaultCheckInterval)
		}
	}
	d, ok := crdSpecDefault(t, "retentionguard.io_consumerretentionpolicies.yaml", "enforcement")
	if !ok || d != string(rgv1.DefaultEnforcement) {
		t.Errorf("spec.enforcement defaults to %v, rgv1.DefaultEnforcement is %s", d, rgv1.DefaultEnforcement)
	}
}

// What the Go code applies to an object that lacks the defaults (written
// before they existed): the same values.
func TestOrDefault(t *testing.T) {
	var p rgv1.ConsumerRetentionPolicySpec
	if got := p.CheckIntervalOrDefault(); got != rgv1.DefaultCheckInterval {
		t.Errorf("unset checkInterval: %s, want %s", got, rgv1.DefaultCheckInterval)
	}
	if got := p.EnforcementOrDefault(); got != rgv1.DefaultEnforcement {
		t.Errorf("unset enforcement: %s, want %s", got, rgv1.DefaultEnforcement)
	}
	p.CheckInterval, p.Enforcement = &metav1.Duration{Duration: 0}, rgv1.EnforcementAudit
	if got := p.CheckIntervalOrDefault(); got != rgv1.DefaultCheckInterval {
		t.Errorf("zero checkInterval: %s, want %s", got, rgv1.DefaultCheckInterval)
	}
	if got := p.EnforcementOrDefault(); got != rgv1.EnforcementAudit {
		t.Errorf("enforcement Audit: %s", got)
	}
	p.CheckInterval = &metav1.Duration{Duration: 5 * time.Minute}
	if got := p.CheckIntervalOrDefault(); got != 5*time.Minute {
		t.Errorf("checkInterval 5m: %s", got)
	}
	c := rgv1.ClusterKafkaConnectionSpec{}
	if got := c.CheckIntervalOrDefault(); got != rgv1.DefaultCheckInterval {
		t.Errorf("a ClusterKafkaConnection's unset checkInterval: %s, want %s", got, rgv1.DefaultCheckInterval)
	}
	c.CheckInterval = &metav1.Duration{Duration: 30 * time.Second}
	if got := c.CheckIntervalOrDefault(); got != 30*time.Second {
		t.Errorf("a ClusterKafkaConnection's checkInterval 30s: %s", got)
	}
}
