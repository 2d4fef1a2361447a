package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// workload is what admission needs of a Deployment or StatefulSet: the same
// fields exist in both (paused only in Deployments).
type workload struct {
	Name        string
	Annotations map[string]string
	// Replicas is spec.replicas; nil means the API default, 1.
	Replicas *int32
	// Paused is a Deployment's spec.paused.
	Paused bool
	// RawTemplate is spec.template as the request carries it; Template is
	// decoded from it on first use (see template), so requests that are
	// not rollouts never pay for decoding pod templates.
	RawTemplate []byte
	Template    corev1.PodTemplateSpec
	decoded     bool
}

// template returns the decoded pod template.
func (w *workload) template() (*corev1.PodTemplateSpec, error) {
	if !w.decoded {
		if len(w.RawTemplate) > 0 {
			if err := json.Unmarshal(w.RawTemplate, &w.Template); err != nil {
				return nil, fmt.Errorf("decoding the pod template: %w", err)
			}
		}
		w.decoded = true
	}
	return &w.Template, nil
}

// templatesDiffer compares two pod templates semantically
// (equality.Semantic: 1000m equals 1). Identical bytes are equal without
// decoding. A template that does not decode counts as changed (the caller
// then fails closed on it).
func templatesDiffer(old, cur *workload) bool {
	if old.RawTemplate != nil && bytes.Equal(old.RawTemplate, cur.RawTemplate) {
		return false
	}
	o, err := old.template()
	if err != nil {
		return true
	}
	c, err := cur.template()
	if err != nil {
		return true
	}
	return !equality.Semantic.DeepEqual(o, c)
}

// replicas is spec.replicas with the API default applied.
func (w *workload) replicas() int32 {
	if w.Replicas == nil {
		return 1
	}
	return *w.Replicas
}

// rollout says why a request would start consumers; rolloutNone when it
// would not.
type rollout string

const (
	rolloutNone            rollout = ""
	rolloutCreate          rollout = "create"
	rolloutScaleFromZero   rollout = "scale from zero"
	rolloutUnpause         rollout = "unpause"
	rolloutTemplateChanged rollout = "pod template change"
)

// detectRollout implements the admission contract's definition of a
// rollout:
//
//   - CREATE with replicas ≠ 0 (nil replicas is 1);
//   - UPDATE that scales from 0 to more;
//   - UPDATE that unpauses a Deployment whose replicas > 0;
//   - UPDATE that changes the pod template (semantically) while the new
//     replicas > 0.
//
// Everything else — scale down, scale within > 0, metadata, status — is not
// a rollout and is always allowed. For a scale subresource request old and
// new carry only replicas, so only the scale rule can fire.
func detectRollout(op admissionv1.Operation, old, cur *workload) rollout {
	switch op {
	case admissionv1.Create:
		if cur.replicas() != 0 {
			return rolloutCreate
		}
		return rolloutNone
	case admissionv1.Update:
		if old == nil || cur.replicas() <= 0 {
			return rolloutNone
		}
		switch {
		case old.replicas() == 0:
			return rolloutScaleFromZero
		case old.Paused && !cur.Paused:
			return rolloutUnpause
		case templatesDiffer(old, cur):
			return rolloutTemplateChanged
		}
	}
	return rolloutNone
}
