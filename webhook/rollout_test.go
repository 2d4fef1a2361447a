package webhook

import (
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Admission contract, "rollout": which requests start consumers.
func TestDetectRollout(t *testing.T) {
	app := map[string]string{"app": "settle"}
	tmpl := template(app, container("settle", "KAFKA_AUTO_OFFSET_RESET", "none"))
	newImage := template(app, container("settle", "KAFKA_AUTO_OFFSET_RESET", "none"))
	newImage.Spec.Containers[0].Image = "settle:2"

	// Quantities written differently but equal: semantically the same
	// template, so no rollout.
	cpu := func(q string) corev1.PodTemplateSpec {
		t := template(app, container("settle"))
		t.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
		return t
	}

	w := func(replicas *int32, paused bool, t corev1.PodTemplateSpec) *workload {
		return &workload{Replicas: replicas, Paused: paused, Template: t, decoded: true}
	}
	cases := []struct {
		name     string
		op       admissionv1.Operation
		old, cur *workload
		want     rollout
	}{
		{"create with 3 replicas", admissionv1.Create, nil, w(ptr[int32](3), false, tmpl), rolloutCreate},
		{"create without replicas (defaults to 1)", admissionv1.Create, nil, w(nil, false, tmpl), rolloutCreate},
		{"create scaled to zero", admissionv1.Create, nil, w(ptr[int32](0), false, tmpl), rolloutNone},
		{"scale from 0 to 1 (kubectl scale --replicas=1)", admissionv1.Update, w(ptr[int32](0), false, tmpl), w(ptr[int32](1), false, tmpl), rolloutScaleFromZero},
		{"scale from 0 to nil replicas (1)", admissionv1.Update, w(ptr[int32](0), false, tmpl), w(nil, false, tmpl), rolloutScaleFromZero},
		{"scale down 3 to 0", admissionv1.Update, w(ptr[int32](3), false, tmpl), w(ptr[int32](0), false, tmpl), rolloutNone},
		{"scale down 3 to 1", admissionv1.Update, w(ptr[int32](3), false, tmpl), w(ptr[int32](1), false, tmpl), rolloutNone},
		{"scale up within >0", admissionv1.Update, w(ptr[int32](1), false, tmpl), w(ptr[int32](5), false, tmpl), rolloutNone},
		{"metadata only", admissionv1.Update, w(ptr[int32](2), false, tmpl), w(ptr[int32](2), false, tmpl), rolloutNone},
		{"template change at 2 replicas", admissionv1.Update, w(ptr[int32](2), false, tmpl), w(ptr[int32](2), false, newImage), rolloutTemplateChanged},
		{"template change with scale down to 1", admissionv1.Update, w(ptr[int32](3), false, tmpl), w(ptr[int32](1), false, newImage), rolloutTemplateChanged},
		{"template change while scaled to zero", admissionv1.Update, w(ptr[int32](0), false, tmpl), w(ptr[int32](0), false, newImage), rolloutNone},
		{"template change together with scale to zero", admissionv1.Update, w(ptr[int32](2), false, tmpl), w(ptr[int32](0), false, newImage), rolloutNone},
		{"label dropped from the template", admissionv1.Update, w(ptr[int32](1), false, tmpl), w(ptr[int32](1), false, template(nil, tmpl.Spec.Containers...)), rolloutTemplateChanged},
		{"semantically equal quantities", admissionv1.Update, w(ptr[int32](1), false, cpu("1")), w(ptr[int32](1), false, cpu("1000m")), rolloutNone},
		{"unpause with replicas", admissionv1.Update, w(ptr[int32](2), true, tmpl), w(ptr[int32](2), false, tmpl), rolloutUnpause},
		{"unpause at zero replicas", admissionv1.Update, w(ptr[int32](0), true, tmpl), w(ptr[int32](0), false, tmpl), rolloutNone},
		{"pause", admissionv1.Update, w(ptr[int32](2), false, tmpl), w(ptr[int32](2), true, tmpl), rolloutNone},
		{"delete is never a rollout", admissionv1.Delete, w(ptr[int32](2), false, tmpl), w(ptr[int32](2), false, tmpl), rolloutNone},
		{"update without old object", admissionv1.Update, nil, w(ptr[int32](2), false, tmpl), rolloutNone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := detectRollout(tc.op, tc.old, tc.cur); got != tc.want {
				t.Errorf("detectRollout = %q, want %q", got, tc.want)
			}
		})
	}
}

// Templates are compared semantically; identical bytes without decoding;
// raw templates are decoded on demand.
func TestTemplatesDiffer(t *testing.T) {
	raw := func(s string) *workload { return &workload{RawTemplate: []byte(s)} }
	cases := []struct {
		name     string
		old, cur *workload
		want     bool
	}{
		{"identical bytes", raw(`{"metadata":{"labels":{"app":"settle"}}}`), raw(`{"metadata":{"labels":{"app":"settle"}}}`), false},
		{"same template, other key order", raw(`{"metadata":{"labels":{"a":"1","b":"2"}}}`), raw(`{"metadata":{"labels":{"b":"2","a":"1"}}}`), false},
		{"equal quantities written differently",
			raw(`{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}]}}`),
			raw(`{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"1000m"}}}]}}`), false},
		{"image changed", raw(`{"spec":{"containers":[{"name":"c","image":"a:1"}]}}`), raw(`{"spec":{"containers":[{"name":"c","image":"a:2"}]}}`), true},
		{"label dropped", raw(`{"metadata":{"labels":{"app":"settle"}}}`), raw(`{"metadata":{}}`), true},
		{"undecodable counts as changed", raw(`{"metadata":1}`), raw(`{"metadata":2}`), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := templatesDiffer(tc.old, tc.cur); got != tc.want {
				t.Errorf("templatesDiffer = %v, want %v", got, tc.want)
			}
		})
	}
	// Identical bytes are not decoded at all.
	a, b := raw(`{"spec":{"containers":[{"name":"c"}]}}`), raw(`{"spec":{"containers":[{"name":"c"}]}}`)
	templatesDiffer(a, b)
	if a.decoded || b.decoded {
		t.Error("identical templates were decoded")
	}
}
