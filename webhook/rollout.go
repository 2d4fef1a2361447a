package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// workload is what admission needs of a Deployment, StatefulSet, Job,
// CronJob or Argo Rollout: a pod template (a CronJob's
// spec.jobTemplate.spec.template, the Deployment a Rollout's
// spec.workloadRef names) and what says whether pods run (replicas and
// paused for the apps kinds and Rollouts, suspend for the batch kinds).
type workload struct {
	// Kind is Deployment, StatefulSet, Job, CronJob or Rollout.
	Kind string
	Name string
	// Annotations carry the override annotation: the object's own, except
	// for a CronJob, whose spec.jobTemplate.metadata.annotations count (the
	// annotations its Jobs are created with, so one annotation covers the
	// CronJob's edit and the runs it then starts).
	Annotations map[string]string
	// Replicas is spec.replicas; nil means the API default, 1.
	Replicas *int32
	// Paused is a Deployment's or Rollout's spec.paused.
	Paused bool
	// WorkloadRef is a Rollout's spec.workloadRef (nil without one).
	WorkloadRef *workloadRef
	// Suspended is a Job's or CronJob's spec.suspend.
	Suspended bool
	// CronJob names the CronJob that owns a Job (its controller
	// ownerReference), empty otherwise; CronJobUID is that reference's UID.
	CronJob    string
	CronJobUID string
	// ScaledJob names the KEDA ScaledJob that owns a Job (its controller
	// ownerReference, keda.sh), empty otherwise; ScaledJobUID is its UID.
	ScaledJob    string
	ScaledJobUID string
	// RawJobTemplate is a CronJob's spec.jobTemplate as the request
	// carries it.
	RawJobTemplate []byte
	// RawTemplate is spec.template as the request carries it; Template is
	// decoded from it on first use (see template), so requests that are
	// not rollouts never pay for decoding pod templates. Decoded from
	// RawTemplate, Template holds only what admission reads: the pod
	// labels and the containers' names and environment.
	RawTemplate []byte
	Template    corev1.PodTemplateSpec
	decoded     bool
}

// template returns the pod template (see Template), decoded on first use
// from RawTemplate to what admission reads: the labels policies select on
// and each container's name and environment (the consumer clause). Probes,
// resources, volumes and security contexts are validated and skipped, in
// one pass, on the path every guarded rollout takes.
func (w *workload) template() (*corev1.PodTemplateSpec, error) {
	if !w.decoded {
		w.Template = corev1.PodTemplateSpec{}
		if len(w.RawTemplate) > 0 {
			if err := decodePodTemplate(w.RawTemplate, &w.Template, false); err != nil {
				return nil, fmt.Errorf("decoding the pod template: %w", err)
			}
		}
		w.decoded = true
	}
	return &w.Template, nil
}

// labels returns the pod template's labels. An undecoded template is read
// for its labels alone (the old object's template: what a policy may have
// selected it by; its containers are never judged).
func (w *workload) labels() (map[string]string, error) {
	if w.decoded || len(w.RawTemplate) == 0 {
		t, err := w.template()
		if err != nil {
			return nil, err
		}
		return t.Labels, nil
	}
	var t corev1.PodTemplateSpec
	if err := decodePodTemplate(w.RawTemplate, &t, true); err != nil {
		return nil, fmt.Errorf("decoding the pod template: %w", err)
	}
	return t.Labels, nil
}

// decodePodTemplate reads a pod template's metadata.labels and, unless
// labelsOnly, spec.containers[].name, env and envFrom into t.
func decodePodTemplate(raw []byte, t *corev1.PodTemplateSpec, labelsOnly bool) error {
	s := &jsonScanner{data: raw}
	metadata := func(key []byte) error {
		if string(key) != "labels" {
			return s.skip()
		}
		return s.stringMap("metadata.labels", "a label in metadata.labels", &t.Labels)
	}
	var c *corev1.Container
	container := func(key []byte) error {
		switch string(key) {
		case "name":
			name, isNull, err := s.str("name")
			if !isNull {
				c.Name = name
			}
			return err
		case "env":
			return s.env(&c.Env)
		case "envFrom":
			return s.decode("envFrom", &c.EnvFrom)
		}
		return s.skip()
	}
	spec := func(key []byte) error {
		if labelsOnly || string(key) != "containers" {
			return s.skip()
		}
		cs := t.Spec.Containers
		n, isNull, err := s.array("spec.containers", func(i int) error {
			cs = growTo(cs, i)
			c = &cs[i]
			return s.object("spec.containers[]", container)
		})
		t.Spec.Containers = endSlice(cs, n, isNull)
		return err
	}
	return s.document(func() error {
		return s.object("the pod template", func(key []byte) error {
			switch string(key) {
			case "metadata":
				return s.object("metadata", metadata)
			case "spec":
				return s.object("spec", spec)
			}
			return s.skip()
		})
	})
}

// env reads a container's env into *env: each variable's name and value;
// valueFrom, rare, is decoded whole.
func (s *jsonScanner) env(env *[]corev1.EnvVar) error {
	vars := *env
	var e *corev1.EnvVar
	member := func(key []byte) error {
		var err error
		switch string(key) {
		case "name":
			var v string
			var isNull bool
			if v, isNull, err = s.str("env[].name"); !isNull {
				e.Name = v
			}
		case "value":
			var v string
			var isNull bool
			if v, isNull, err = s.str("env[].value"); !isNull {
				e.Value = v
			}
		case "valueFrom":
			err = s.decode("env[].valueFrom", &e.ValueFrom)
		default:
			err = s.skip()
		}
		return err
	}
	n, isNull, err := s.array("env", func(i int) error {
		vars = growTo(vars, i)
		e = &vars[i]
		return s.object("env[]", member)
	})
	*env = endSlice(vars, n, isNull)
	return err
}

// stringMap reads an object of strings into *m, as encoding/json does into
// a map[string]string: into the map an earlier duplicate key left, null
// values as "", null as a nil map.
func (s *jsonScanner) stringMap(path, valuePath string, m *map[string]string) error {
	if isNull, err := s.null(); isNull || err != nil {
		if isNull {
			*m = nil
		}
		return err
	}
	if *m == nil && s.peek() == '{' {
		*m = make(map[string]string, 4)
	}
	return s.object(path, func(key []byte) error {
		v, _, err := s.str(valuePath)
		if err == nil {
			(*m)[string(key)] = v
		}
		return err
	})
}

// growTo makes element i of a slice being decoded available, reusing what
// an earlier duplicate key decoded there (as encoding/json does).
func growTo[T any](s []T, i int) []T {
	if i >= cap(s) {
		s = slices.Grow(s, 1)
	}
	if i >= len(s) {
		s = s[:i+1]
	}
	return s
}

// endSlice ends a decoded array of n elements as encoding/json does: null
// is a nil slice, [] an empty one.
func endSlice[T any](s []T, n int, isNull bool) []T {
	switch {
	case isNull:
		return nil
	case n == 0:
		return []T{}
	}
	return s[:n]
}

// templatesDiffer reports whether the pod template changed. Templates from
// a request are compared byte for byte: the API server serializes the old
// and the new object alike from its typed objects (fields in one order,
// quantities canonical, empty values omitted), so equal templates arrive
// as equal bytes — and it calls the webhook for an update only when its
// CEL match condition finds the templates different. Comparing bytes spares
// decoding two whole pod templates on every guarded rollout. Templates
// that were decoded, not received (tests), are compared semantically
// (equality.Semantic: 1000m equals 1).
func templatesDiffer(old, cur *workload) bool {
	if old.RawTemplate != nil || cur.RawTemplate != nil {
		return !bytes.Equal(old.RawTemplate, cur.RawTemplate)
	}
	return !equality.Semantic.DeepEqual(&old.Template, &cur.Template)
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
	// The batch kinds (Jobs and CronJobs).
	rolloutUnsuspend          rollout = "unsuspend"
	rolloutJobTemplateChanged rollout = "job template change"
)

// startsConsumers reports whether the rollout starts consumers that were not
// running: a create with replicas, a scale from zero, an unpause, an
// unsuspend, a Job's create (a CronJob's run included). Such a rollout is
// judged on a live observation. A CronJob's own create or edit starts
// nothing until its Jobs are created, each judged then; a pod template
// change replaces consumers that were running.
func startsConsumers(kind string, r rollout) bool {
	if kind == kindCronJob {
		return false
	}
	switch r {
	case rolloutCreate, rolloutScaleFromZero, rolloutUnpause, rolloutUnsuspend:
		return true
	}
	return false
}

// detectRollout implements the admission contract's definition of a
// rollout:
//
//   - CREATE with replicas ≠ 0 (nil replicas is 1);
//   - UPDATE that scales from 0 to more;
//   - UPDATE that unpauses a Deployment or Rollout whose replicas > 0;
//   - UPDATE that changes the pod template (semantically) while the new
//     replicas > 0 (a Rollout's spec.workloadRef changing counts).
//
// Everything else — scale down, scale within > 0, metadata, status — is not
// a rollout and is always allowed. For a scale subresource request old and
// new carry only replicas, so only the scale rule can fire.
func detectRollout(op admissionv1.Operation, old, cur *workload) rollout {
	switch cur.Kind {
	case kindJob:
		return detectJobRollout(op, old, cur)
	case kindCronJob:
		return detectCronJobRollout(op, old, cur)
	}
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
		case templatesDiffer(old, cur), workloadRefsDiffer(old.WorkloadRef, cur.WorkloadRef):
			return rolloutTemplateChanged
		}
	}
	return rolloutNone
}

// workloadRefsDiffer reports whether a Rollout's spec.workloadRef changed:
// its pods then come from another template.
func workloadRefsDiffer(old, cur *workloadRef) bool {
	if old == nil || cur == nil {
		return old != cur
	}
	return *old != *cur
}

// detectJobRollout: every start of a Job is a rollout, including the Jobs
// a CronJob's controller creates for its runs.
//
//   - CREATE of a Job that is not suspended;
//   - UPDATE that unsuspends it (spec.suspend true → false).
//
// Everything else — suspending, metadata, the few fields a Job lets change
// — starts nothing. (A Job's pod template is immutable once it has
// started; while suspended it may change, and the unsuspend is judged with
// the template it then has.)
func detectJobRollout(op admissionv1.Operation, old, cur *workload) rollout {
	switch op {
	case admissionv1.Create:
		if !cur.Suspended {
			return rolloutCreate
		}
	case admissionv1.Update:
		if old != nil && old.Suspended && !cur.Suspended {
			return rolloutUnsuspend
		}
	}
	return rolloutNone
}

// detectCronJobRollout: a CronJob is a rollout when it would schedule runs
// of a (possibly new) job template.
//
//   - CREATE of a CronJob that is not suspended;
//   - UPDATE that unsuspends it;
//   - UPDATE that changes spec.jobTemplate (semantically) while the new
//     CronJob is not suspended.
//
// Suspending, a schedule change, history limits and metadata are not
// rollouts. Each run is judged again when its Job is created.
func detectCronJobRollout(op admissionv1.Operation, old, cur *workload) rollout {
	switch op {
	case admissionv1.Create:
		if !cur.Suspended {
			return rolloutCreate
		}
	case admissionv1.Update:
		switch {
		case old == nil || cur.Suspended:
		case old.Suspended:
			return rolloutUnsuspend
		case jobTemplatesDiffer(old.RawJobTemplate, cur.RawJobTemplate):
			return rolloutJobTemplateChanged
		}
	}
	return rolloutNone
}

// jobTemplatesDiffer compares two CronJob job templates semantically;
// identical bytes are equal without decoding, and a template that does not
// decode counts as changed.
func jobTemplatesDiffer(old, cur []byte) bool {
	if bytes.Equal(old, cur) {
		return false
	}
	var o, c batchv1.JobTemplateSpec
	if json.Unmarshal(old, &o) != nil || json.Unmarshal(cur, &c) != nil {
		return true
	}
	return !equality.Semantic.DeepEqual(o, c)
}
