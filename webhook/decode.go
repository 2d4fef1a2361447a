package webhook

// Workload decoding: what admission reads of a Deployment, StatefulSet,
// Job, CronJob or Argo Rollout — from the request's objects in one pass
// (decodeWorkloads), from the stored object for a scale request
// (readScaled), from the Deployment a Rollout's spec.workloadRef names
// (readReferencedTemplate) — and the pod template, decoded on first use.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	kjson "sigs.k8s.io/json"
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
	// rawLabels is the metadata.labels value Template.Labels was decoded
	// from when that value alone decides them (see decodePodTemplate);
	// nil otherwise.
	rawLabels []byte
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
			rawLabels, err := decodePodTemplate(w.RawTemplate, &w.Template, templateWhole)
			if err != nil {
				return nil, fmt.Errorf("decoding the pod template: %w", err)
			}
			w.rawLabels = rawLabels
		}
		w.decoded = true
	}
	return &w.Template, nil
}

// labels returns the pod template's labels. An undecoded template is read
// for its labels alone (the old object's template: what a policy may have
// selected it by; its containers are never judged). beside, when not nil,
// is the request's other workload with its template decoded: when both
// templates' labels are decided by the same bytes (the common rollout
// changes an image, not the labels), its labels are returned, shared, and
// none are decoded again (issue 34).
func (w *workload) labels(beside *workload) (map[string]string, error) {
	if w.decoded || len(w.RawTemplate) == 0 {
		t, err := w.template()
		if err != nil {
			return nil, err
		}
		return t.Labels, nil
	}
	if beside != nil && beside.decoded && beside.rawLabels != nil {
		// Scanned without decoding; on any error the decoding below
		// says what it is.
		if raw, err := decodePodTemplate(w.RawTemplate, nil, templateRawLabels); err == nil && bytes.Equal(raw, beside.rawLabels) {
			return beside.Template.Labels, nil
		}
	}
	var t corev1.PodTemplateSpec
	if _, err := decodePodTemplate(w.RawTemplate, &t, templateLabels); err != nil {
		return nil, fmt.Errorf("decoding the pod template: %w", err)
	}
	return t.Labels, nil
}

// templateRead is what decodePodTemplate reads.
type templateRead int

const (
	// templateWhole: the labels and the containers' names and
	// environment.
	templateWhole templateRead = iota
	// templateLabels: the labels alone.
	templateLabels
	// templateRawLabels: nothing decoded (t is not used); the labels'
	// bytes are found.
	templateRawLabels
)

// decodePodTemplate reads a pod template's metadata.labels and, for
// templateWhole, spec.containers[].name, env and envFrom into t (see
// templateRead). It returns the bytes of the metadata.labels value when
// they alone decide t's labels — the template has one metadata member and
// it one labels member (duplicates merge) — else nil: two templates whose
// such bytes are equal have equal labels.
func decodePodTemplate(raw []byte, t *corev1.PodTemplateSpec, read templateRead) ([]byte, error) {
	s := &jsonScanner{data: raw}
	var rawLabels []byte
	metadataN, labelsN := 0, 0
	metadata := func(key []byte) error {
		if string(key) != "labels" {
			return s.skip()
		}
		labelsN++
		s.ws()
		start := s.i
		var err error
		if read == templateRawLabels {
			err = s.skip()
		} else {
			err = s.stringMap("metadata.labels", "a label in metadata.labels", &t.Labels)
		}
		rawLabels = raw[start:s.i]
		return err
	}
	var c *corev1.Container
	container := func(key []byte) error {
		switch string(key) {
		case "name":
			return s.strInto("name", &c.Name)
		case "env":
			return s.env(&c.Env)
		case "envFrom":
			return s.decode("envFrom", &c.EnvFrom)
		}
		return s.skip()
	}
	spec := func(key []byte) error {
		if read != templateWhole || string(key) != "containers" {
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
	err := s.document(func() error {
		return s.object("the pod template", func(key []byte) error {
			switch string(key) {
			case "metadata":
				metadataN++
				return s.object("metadata", metadata)
			case "spec":
				return s.object("spec", spec)
			}
			return s.skip()
		})
	})
	if err != nil || metadataN != 1 || labelsN != 1 {
		return nil, err
	}
	return rawLabels, nil
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
			err = s.strInto("env[].name", &e.Name)
		case "value":
			err = s.strInto("env[].value", &e.Value)
		case "valueFrom":
			err = s.decode("env[].valueFrom", &e.ValueFrom)
		default:
			err = s.skip()
		}
		return err
	}
	n, isNull, err := s.array("env", func(i int) error {
		if cap(vars) == 0 {
			// A container's environment is rarely one variable: one
			// allocation for the first few, not one per variable.
			vars = make([]corev1.EnvVar, 0, 4)
		}
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

// replicas is spec.replicas with the API default applied.
func (w *workload) replicas() int32 {
	if w.Replicas == nil {
		return 1
	}
	return *w.Replicas
}

// readScaled fills cur (which holds the new replicas of a scale request)
// with the stored workload's name, annotations and pod template.
func (h *Handler) readScaled(ctx context.Context, kind, namespace, name string, cur *workload) error {
	key := client.ObjectKey{Namespace: namespace, Name: name}
	switch kind {
	case kindDeployment:
		var d appsv1.Deployment
		if err := h.opts.WorkloadReader.Get(ctx, key, &d); err != nil {
			return err
		}
		cur.Name, cur.Annotations, cur.Paused, cur.Template, cur.decoded, cur.rawLabels = d.Name, d.Annotations, d.Spec.Paused, d.Spec.Template, true, nil
	case kindRollout:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(rolloutGVK)
		if err := h.opts.WorkloadReader.Get(ctx, key, u); err != nil {
			return err
		}
		raw, err := u.MarshalJSON()
		if err != nil {
			return err
		}
		stored, err := decodeWorkload(kindRollout, raw)
		if err != nil {
			return err
		}
		replicas := cur.Replicas
		*cur = *stored
		cur.Replicas = replicas
	default:
		var s appsv1.StatefulSet
		if err := h.opts.WorkloadReader.Get(ctx, key, &s); err != nil {
			return err
		}
		cur.Name, cur.Annotations, cur.Template, cur.decoded, cur.rawLabels = s.Name, s.Annotations, s.Spec.Template, true, nil
	}
	return nil
}

// rolloutGVK is the Argo Rollouts kind the webhook reads (scale requests).
var rolloutGVK = schema.GroupVersionKind{Group: argoprojGroup, Version: "v1alpha1", Kind: kindRollout}

// readReferencedTemplate sets a Rollout's pod template to the one of the
// Deployment its spec.workloadRef names (Argo Rollouts' workload
// referencing: the Rollout's own spec.template is then empty).
func (h *Handler) readReferencedTemplate(ctx context.Context, namespace string, cur *workload) error {
	ref := cur.WorkloadRef
	if ref.Kind != kindDeployment || (ref.APIVersion != "" && ref.APIVersion != appsv1.SchemeGroupVersion.String()) {
		return fmt.Errorf("spec.workloadRef names %s %s: only apps/v1 Deployments are supported", ref.APIVersion, ref.Kind)
	}
	var d appsv1.Deployment
	if err := h.opts.WorkloadReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, &d); err != nil {
		return err
	}
	cur.RawTemplate, cur.Template, cur.decoded, cur.rawLabels = nil, d.Spec.Template, true, nil
	return nil
}

// workloadRef is a Rollout's spec.workloadRef.
type workloadRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
}

// jobTemplateJSON is the part of a CronJob's spec.jobTemplate admission
// reads.
type jobTemplateJSON struct {
	Metadata struct {
		Annotations overrideAnnotationJSON `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Template json.RawMessage `json:"template"`
	} `json:"spec"`
}

// overrideAnnotationJSON decodes the one annotation admission reads.
type overrideAnnotationJSON struct {
	Override *string `json:"retentionguard.io/override-proof"`
}

func (a overrideAnnotationJSON) annotations() map[string]string {
	if a.Override == nil {
		return nil
	}
	return map[string]string{OverrideAnnotation: *a.Override}
}

// scaleJSON decodes an autoscaling/v1 Scale's spec.replicas (omitted when 0).
type scaleJSON struct {
	Spec struct {
		Replicas int32 `json:"replicas"`
	} `json:"spec"`
}

// decodeWorkloads decodes the request's new and old objects (pod templates
// stay raw until needed); old is nil for a CREATE. For a scale request they
// carry only replicas.
func decodeWorkloads(req admission.Request, kind string) (cur, old *workload, err error) {
	if req.SubResource == "scale" {
		var n, o scaleJSON
		if err := json.Unmarshal(req.Object.Raw, &n); err != nil {
			return nil, nil, fmt.Errorf("decoding the Scale: %w", err)
		}
		if err := json.Unmarshal(req.OldObject.Raw, &o); err != nil {
			return nil, nil, fmt.Errorf("decoding the old Scale: %w", err)
		}
		return &workload{Kind: kind, Replicas: &n.Spec.Replicas, decoded: true}, &workload{Kind: kind, Replicas: &o.Spec.Replicas, decoded: true}, nil
	}
	cur, err = decodeWorkload(kind, req.Object.Raw)
	if err != nil {
		return nil, nil, err
	}
	if req.Operation == admissionv1.Update {
		if old, err = decodeWorkload(kind, req.OldObject.Raw); err != nil {
			return nil, nil, fmt.Errorf("decoding the old object: %w", err)
		}
	}
	return cur, old, nil
}

// decodeWorkload reads, in one pass over the object, the fields admission
// needs of a Deployment, a StatefulSet, a Job, a CronJob or a Rollout:
// metadata.name, the override annotation (every other annotation skipped:
// a kubectl-applied object's last-applied-configuration repeats the whole
// object), ownerReferences, spec.replicas, paused, suspend, workloadRef,
// and where spec.template and spec.jobTemplate lie (pod templates are read
// when needed: see workload.template). Everything else — managedFields,
// status, the rest of the spec — is validated and skipped. Keys are
// matched case-sensitively, as the API server reads objects.
func decodeWorkload(kind string, raw []byte) (*workload, error) {
	if len(raw) == 0 {
		return nil, errors.New("the request carries no object")
	}
	// One allocation holds the pass, its scanner and the workload it
	// returns (issue 34: fewer allocations per admission).
	d := &workloadDecoder{scanner: jsonScanner{data: raw}, decoded: workload{Kind: kind}}
	d.s, d.out = &d.scanner, &d.decoded
	s := d.s
	err := s.document(func() error {
		return s.object("the workload", func(key []byte) error {
			switch string(key) {
			case "metadata":
				return s.object("metadata", d.metadata)
			case "spec":
				return s.object("spec", d.spec)
			}
			return s.skip()
		})
	})
	if err != nil {
		return nil, fmt.Errorf("decoding the workload: %w", err)
	}
	return d.finish()
}

// workloadDecoder is one pass of decodeWorkload: the workload being read
// and what the pass reads besides, which finish applies by kind. s and out
// point at scanner and decoded, allocated with it.
type workloadDecoder struct {
	s           *jsonScanner
	out         *workload
	scanner     jsonScanner
	decoded     workload
	override    overrideAnnotationJSON
	owners      *[]metav1.OwnerReference // allocated when there are some
	suspended   bool
	jobTemplate []byte
}

// metadata reads one member of the object's metadata.
func (d *workloadDecoder) metadata(key []byte) error {
	s := d.s
	var err error
	switch string(key) {
	case "name":
		err = s.strInto("metadata.name", &d.out.Name)
	case "annotations":
		err = s.overrideAnnotation("metadata.annotations", &d.override)
	case "ownerReferences":
		if d.owners == nil {
			d.owners = new([]metav1.OwnerReference)
		}
		err = s.decode("metadata.ownerReferences", d.owners)
	default:
		err = s.skip()
	}
	return err
}

// spec reads one member of the object's spec.
func (d *workloadDecoder) spec(key []byte) error {
	s, out := d.s, d.out
	var err error
	switch string(key) {
	case "replicas":
		var n int32
		var isNull bool
		if n, isNull, err = s.int32("spec.replicas"); err == nil {
			out.Replicas = nil
			if !isNull {
				out.Replicas = &n
			}
		}
	case "paused":
		var b, isNull bool
		if b, isNull, err = s.boolean("spec.paused"); !isNull {
			out.Paused = b
		}
	case "suspend":
		d.suspended, _, err = s.boolean("spec.suspend")
	case "template":
		out.RawTemplate, err = s.span()
	case "jobTemplate":
		d.jobTemplate, err = s.span()
	case "workloadRef":
		err = s.decode("spec.workloadRef", &out.WorkloadRef)
	default:
		err = s.skip()
	}
	return err
}

// finish applies what the pass read by kind: a Rollout's workloadRef, a
// Job's owning CronJob or ScaledJob, a CronJob's job template (its
// annotations and pod template).
func (d *workloadDecoder) finish() (*workload, error) {
	out := d.out
	out.Annotations = d.override.annotations()
	out.Suspended = d.suspended
	if out.Kind != kindRollout || out.WorkloadRef != nil && out.WorkloadRef.Name == "" {
		out.WorkloadRef = nil
	}
	switch out.Kind {
	case kindJob:
		if d.owners != nil {
			if ref := cronJobOwner(*d.owners); ref != nil {
				out.CronJob, out.CronJobUID = ref.Name, string(ref.UID)
			} else if ref := scaledJobOwner(*d.owners); ref != nil {
				out.ScaledJob, out.ScaledJobUID = ref.Name, string(ref.UID)
			}
		}
	case kindCronJob:
		out.RawTemplate = nil
		out.RawJobTemplate = d.jobTemplate
		if len(d.jobTemplate) > 0 {
			var jt jobTemplateJSON
			if err := kjson.UnmarshalCaseSensitivePreserveInts(d.jobTemplate, &jt); err != nil {
				return nil, fmt.Errorf("decoding the CronJob's job template: %w", err)
			}
			out.Annotations = jt.Metadata.Annotations.annotations()
			out.RawTemplate = jt.Spec.Template
		}
	}
	return out, nil
}

// overrideAnnotation reads the override annotation of the annotations at
// path into a; null leaves a as it is, as a struct's null does.
func (s *jsonScanner) overrideAnnotation(path string, a *overrideAnnotationJSON) error {
	return s.object(path, func(key []byte) error {
		if string(key) != OverrideAnnotation {
			return s.skip()
		}
		v, isNull, err := s.str("the " + OverrideAnnotation + " annotation")
		switch {
		case err != nil:
		case isNull:
			a.Override = nil
		default:
			a.Override = &v
		}
		return err
	})
}

// cronJobOwner returns a Job's owning CronJob reference (the controller
// reference when there is one), or nil.
func cronJobOwner(refs []metav1.OwnerReference) *metav1.OwnerReference {
	return ownerOf(refs, kindCronJob, batchv1.GroupName)
}

// scaledJobOwner returns a Job's owning KEDA ScaledJob reference: KEDA's
// generateJobs sets it as the controller reference
// (controllerutil.SetControllerReference), or nil.
func scaledJobOwner(refs []metav1.OwnerReference) *metav1.OwnerReference {
	return ownerOf(refs, "ScaledJob", "keda.sh")
}

// ownerOf returns the ownerReference of kind in API group (the controller
// reference when there is one), or nil.
func ownerOf(refs []metav1.OwnerReference, kind, group string) *metav1.OwnerReference {
	var found *metav1.OwnerReference
	for i := range refs {
		r := &refs[i]
		if r.Kind != kind || !strings.HasPrefix(r.APIVersion, group+"/") {
			continue
		}
		if r.Controller != nil && *r.Controller {
			return r
		}
		if found == nil {
			found = r
		}
	}
	return found
}

// strInto reads the string at path into *v; null leaves *v as it is, as
// encoding/json does.
func (s *jsonScanner) strInto(path string, v *string) error {
	str, isNull, err := s.str(path)
	if err == nil && !isNull {
		*v = str
	}
	return err
}
