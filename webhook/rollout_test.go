package webhook

import (
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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

// Templates received in a request are compared byte for byte (the API
// server serializes old and new alike, so equal templates are equal bytes,
// and it calls the webhook only when CEL finds them different), without
// decoding; templates decoded from typed objects are compared
// semantically; raw templates are decoded on demand, to what admission
// reads.
func TestTemplatesDiffer(t *testing.T) {
	raw := func(s string) *workload { return &workload{RawTemplate: []byte(s)} }
	cases := []struct {
		name     string
		old, cur *workload
		want     bool
	}{
		{"identical bytes", raw(`{"metadata":{"labels":{"app":"settle"}}}`), raw(`{"metadata":{"labels":{"app":"settle"}}}`), false},
		{"image changed", raw(`{"spec":{"containers":[{"name":"c","image":"a:1"}]}}`), raw(`{"spec":{"containers":[{"name":"c","image":"a:2"}]}}`), true},
		{"a probe changed (a field admission does not decode)",
			raw(`{"spec":{"containers":[{"name":"c","readinessProbe":{"periodSeconds":10}}]}}`),
			raw(`{"spec":{"containers":[{"name":"c","readinessProbe":{"periodSeconds":5}}]}}`), true},
		{"label dropped", raw(`{"metadata":{"labels":{"app":"settle"}}}`), raw(`{"metadata":{}}`), true},
		{"undecodable counts as changed", raw(`{"metadata":1}`), raw(`{"metadata":2}`), true},
		{"decoded: equal quantities written differently", decodedCPU("1"), decodedCPU("1000m"), false},
		{"decoded: another quantity", decodedCPU("1"), decodedCPU("2"), true},
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

// Issue #8: every Job start is a rollout; a suspended Job starts when
// unsuspended.
func TestDetectJobRollout(t *testing.T) {
	job := func(suspended bool) *workload {
		return &workload{Kind: kindJob, Suspended: suspended, Template: template(map[string]string{"app": "settle"}), decoded: true}
	}
	cases := []struct {
		name     string
		op       admissionv1.Operation
		old, cur *workload
		want     rollout
	}{
		{"create (a CronJob run or by hand)", admissionv1.Create, nil, job(false), rolloutCreate},
		{"create suspended", admissionv1.Create, nil, job(true), rolloutNone},
		{"unsuspend", admissionv1.Update, job(true), job(false), rolloutUnsuspend},
		{"suspend", admissionv1.Update, job(false), job(true), rolloutNone},
		{"metadata while running", admissionv1.Update, job(false), job(false), rolloutNone},
		{"edit while suspended", admissionv1.Update, job(true), job(true), rolloutNone},
		{"update without old object", admissionv1.Update, nil, job(false), rolloutNone},
		{"delete", admissionv1.Delete, job(true), job(false), rolloutNone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := detectRollout(tc.op, tc.old, tc.cur); got != tc.want {
				t.Errorf("detectRollout = %q, want %q", got, tc.want)
			}
		})
	}
}

// Issue #8: a CronJob is a rollout when it would schedule runs of a
// (possibly new) job template.
func TestDetectCronJobRollout(t *testing.T) {
	const (
		v1 = `{"metadata":{"labels":{"x":"1"}},"spec":{"backoffLimit":1,"template":{"metadata":{"labels":{"app":"settle"}},"spec":{"containers":[{"name":"settle","image":"settle:1"}]}}}}`
		// v1 with other key order and an equal quantity written differently
		v1Again = `{"spec":{"template":{"spec":{"containers":[{"image":"settle:1","name":"settle"}]},"metadata":{"labels":{"app":"settle"}}},"backoffLimit":1},"metadata":{"labels":{"x":"1"}}}`
		v2      = `{"metadata":{"labels":{"x":"1"}},"spec":{"backoffLimit":1,"template":{"metadata":{"labels":{"app":"settle"}},"spec":{"containers":[{"name":"settle","image":"settle:2"}]}}}}`
		limits  = `{"metadata":{"labels":{"x":"1"}},"spec":{"backoffLimit":3,"template":{"metadata":{"labels":{"app":"settle"}},"spec":{"containers":[{"name":"settle","image":"settle:1"}]}}}}`
	)
	cj := func(suspended bool, jt string) *workload {
		return &workload{Kind: kindCronJob, Suspended: suspended, RawJobTemplate: []byte(jt)}
	}
	cases := []struct {
		name     string
		op       admissionv1.Operation
		old, cur *workload
		want     rollout
	}{
		{"create", admissionv1.Create, nil, cj(false, v1), rolloutCreate},
		{"create suspended", admissionv1.Create, nil, cj(true, v1), rolloutNone},
		{"unsuspend", admissionv1.Update, cj(true, v1), cj(false, v1), rolloutUnsuspend},
		{"unsuspend with a new template", admissionv1.Update, cj(true, v1), cj(false, v2), rolloutUnsuspend},
		{"suspend", admissionv1.Update, cj(false, v1), cj(true, v1), rolloutNone},
		{"suspend and change the template", admissionv1.Update, cj(false, v1), cj(true, v2), rolloutNone},
		{"image change while not suspended", admissionv1.Update, cj(false, v1), cj(false, v2), rolloutJobTemplateChanged},
		{"job spec change (backoffLimit) while not suspended", admissionv1.Update, cj(false, v1), cj(false, limits), rolloutJobTemplateChanged},
		{"same template, other key order", admissionv1.Update, cj(false, v1), cj(false, v1Again), rolloutNone},
		{"edit while suspended", admissionv1.Update, cj(true, v1), cj(true, v2), rolloutNone},
		{"schedule or metadata change (template unchanged)", admissionv1.Update, cj(false, v1), cj(false, v1), rolloutNone},
		{"undecodable template counts as changed", admissionv1.Update, cj(false, v1), cj(false, `{"spec":1}`), rolloutJobTemplateChanged},
		{"update without old object", admissionv1.Update, nil, cj(false, v1), rolloutNone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := detectRollout(tc.op, tc.old, tc.cur); got != tc.want {
				t.Errorf("detectRollout = %q, want %q", got, tc.want)
			}
		})
	}
}

// The batch kinds decode what admission needs: a Job's suspend and owning
// CronJob (its controller reference), a CronJob's job template with the
// pod template and the annotations its Jobs are created with.
func TestDecodeBatchWorkloads(t *testing.T) {
	job := `{"metadata":{"name":"settle-29413560","annotations":{"a":"job","retentionguard.io/override-proof":"on-the-job",
		"retentionguard.io/Override-Proof":"another annotation"},"ownerReferences":[
		{"apiVersion":"v1","kind":"CronJob","name":"not-batch","uid":"u0"},
		{"apiVersion":"batch/v1","kind":"CronJob","name":"other","uid":"u1"},
		{"apiVersion":"batch/v1","kind":"CronJob","name":"settle","uid":"u2","controller":true}]},
		"spec":{"suspend":true,"template":{"metadata":{"labels":{"app":"settle"}}}}}`
	w, err := decodeWorkload(kindJob, []byte(job))
	if err != nil {
		t.Fatal(err)
	}
	// Only the override annotation is read, case-sensitively like every
	// key the API server reads.
	if !w.Suspended || w.CronJob != "settle" || w.CronJobUID != "u2" ||
		len(w.Annotations) != 1 || w.Annotations[OverrideAnnotation] != "on-the-job" {
		t.Errorf("Job decoded as suspended=%v cronJob=%q uid=%q annotations=%v", w.Suspended, w.CronJob, w.CronJobUID, w.Annotations)
	}
	if tmpl, err := w.template(); err != nil || tmpl.Labels["app"] != "settle" {
		t.Errorf("Job pod template labels %v (err %v)", tmpl.Labels, err)
	}

	noController := `{"metadata":{"name":"j","ownerReferences":[{"apiVersion":"batch/v1","kind":"CronJob","name":"settle","uid":"u"}]},"spec":{}}`
	if w, err := decodeWorkload(kindJob, []byte(noController)); err != nil || w.CronJob != "settle" || w.Suspended {
		t.Errorf("a Job owned (not controlled) by a CronJob: cronJob=%q suspended=%v err=%v", w.CronJob, w.Suspended, err)
	}

	cron := `{"metadata":{"name":"settle","annotations":{"retentionguard.io/override-proof":"on-the-cronjob"}},
		"spec":{"suspend":false,"schedule":"0 2 * * *","jobTemplate":{"metadata":{"annotations":{"retentionguard.io/override-proof":"7f3a9c21"}},
		"spec":{"template":{"metadata":{"labels":{"app":"settle"}}}}}}}`
	w, err = decodeWorkload(kindCronJob, []byte(cron))
	if err != nil {
		t.Fatal(err)
	}
	if w.Suspended || w.Annotations[OverrideAnnotation] != "7f3a9c21" || len(w.RawJobTemplate) == 0 {
		t.Errorf("CronJob decoded as suspended=%v override=%q jobTemplate=%d bytes", w.Suspended, w.Annotations[OverrideAnnotation], len(w.RawJobTemplate))
	}
	if tmpl, err := w.template(); err != nil || tmpl.Labels["app"] != "settle" {
		t.Errorf("CronJob pod template labels %v (err %v)", tmpl.Labels, err)
	}
	if _, err := decodeWorkload(kindCronJob, []byte(`{"spec":{"jobTemplate":{"spec":1}}}`)); err == nil {
		t.Error("an undecodable job template was accepted")
	}
}

func decodedCPU(q string) *workload {
	t := template(map[string]string{"app": "settle"}, container("settle"))
	t.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
	return &workload{Template: t, decoded: true}
}

// A received template is decoded to what admission reads: its labels and
// its containers' names and environment, nothing else.
func TestTemplateDecodesWhatAdmissionReads(t *testing.T) {
	w := &workload{RawTemplate: []byte(`{"metadata":{"labels":{"app":"settle"},"annotations":{"a":"b"}},"spec":{` +
		`"containers":[{"name":"settle","image":"settle:1","env":[{"name":"KAFKA_AUTO_OFFSET_RESET","value":"none"},` +
		`{"name":"KAFKA_ENABLE_AUTO_COMMIT","valueFrom":{"configMapKeyRef":{"name":"kafka","key":"auto-commit"}}}],` +
		`"envFrom":[{"configMapRef":{"name":"defaults"}}],"resources":{"requests":{"cpu":"1"}}}],"volumes":[{"name":"v","emptyDir":{}}]}}`)}
	got, err := w.template()
	if err != nil {
		t.Fatal(err)
	}
	want := corev1.PodTemplateSpec{}
	want.Labels = map[string]string{"app": "settle"}
	want.Spec.Containers = []corev1.Container{{Name: "settle",
		Env: []corev1.EnvVar{{Name: "KAFKA_AUTO_OFFSET_RESET", Value: "none"}, {Name: "KAFKA_ENABLE_AUTO_COMMIT",
			ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "kafka"}, Key: "auto-commit"}}}},
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "defaults"}}}},
	}}
	if !equality.Semantic.DeepEqual(*got, want) {
		t.Errorf("decoded %+v\nwant %+v", *got, want)
	}
}
