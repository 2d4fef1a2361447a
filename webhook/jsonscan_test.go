package webhook

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
)

// typedWorkload is how admission read workloads before issue 26: typed
// structs decoded by sigs.k8s.io/json, case-sensitively (the API server's
// reading). decodeWorkload and template must read every object as it did —
// the same fields, the same objects refused — in one pass instead of
// reflection over the whole object.
type typedWorkload struct {
	Metadata struct {
		Name            string                  `json:"name"`
		Annotations     overrideAnnotationJSON  `json:"annotations"`
		OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
	} `json:"metadata"`
	Spec struct {
		Replicas    *int32          `json:"replicas"`
		Paused      bool            `json:"paused"`
		Suspend     *bool           `json:"suspend"`
		Template    json.RawMessage `json:"template"`
		JobTemplate json.RawMessage `json:"jobTemplate"`
		WorkloadRef *workloadRef    `json:"workloadRef"`
	} `json:"spec"`
}

type typedPodTemplate struct {
	Metadata struct {
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Containers []struct {
			Name    string                 `json:"name"`
			Env     []corev1.EnvVar        `json:"env"`
			EnvFrom []corev1.EnvFromSource `json:"envFrom"`
		} `json:"containers"`
	} `json:"spec"`
}

// typedDecode is the reference: the workload as the typed decoding read
// it, or an error; tmplErr is the pod template's.
func typedDecode(kind string, raw []byte) (w *workload, err, tmplErr error) {
	var tw typedWorkload
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &tw); err != nil {
		return nil, err, nil
	}
	w = &workload{Kind: kind, Name: tw.Metadata.Name, Annotations: tw.Metadata.Annotations.annotations(),
		Replicas: tw.Spec.Replicas, Paused: tw.Spec.Paused, Suspended: tw.Spec.Suspend != nil && *tw.Spec.Suspend,
		RawTemplate: tw.Spec.Template}
	switch kind {
	case kindRollout:
		if tw.Spec.WorkloadRef != nil && tw.Spec.WorkloadRef.Name != "" {
			w.WorkloadRef = tw.Spec.WorkloadRef
		}
	case kindJob:
		if ref := cronJobOwner(tw.Metadata.OwnerReferences); ref != nil {
			w.CronJob, w.CronJobUID = ref.Name, string(ref.UID)
		}
	case kindCronJob:
		w.RawTemplate, w.RawJobTemplate = nil, tw.Spec.JobTemplate
		if len(tw.Spec.JobTemplate) > 0 {
			var jt jobTemplateJSON
			if err := kjson.UnmarshalCaseSensitivePreserveInts(tw.Spec.JobTemplate, &jt); err != nil {
				return nil, err, nil
			}
			w.Annotations, w.RawTemplate = jt.Metadata.Annotations.annotations(), jt.Spec.Template
		}
	}
	if len(w.RawTemplate) > 0 {
		var t typedPodTemplate
		if err := kjson.UnmarshalCaseSensitivePreserveInts(w.RawTemplate, &t); err != nil {
			return w, nil, err
		}
		w.Template.Labels = t.Metadata.Labels
		for _, c := range t.Spec.Containers {
			w.Template.Spec.Containers = append(w.Template.Spec.Containers, corev1.Container{Name: c.Name, Env: c.Env, EnvFrom: c.EnvFrom})
		}
	}
	w.decoded = true
	return w, nil, nil
}

// agree fails t unless decodeWorkload and template read raw as the typed
// decoding does.
func agree(t *testing.T, kind string, raw []byte) {
	t.Helper()
	want, wantErr, wantTmplErr := typedDecode(kind, raw)
	got, err := decodeWorkload(kind, raw)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%s %q: error %v, the typed decoding's %v", kind, raw, err, wantErr)
	}
	if err != nil {
		return
	}
	// The old object's template is read for its labels alone.
	var tl struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	wantLabelsErr := error(nil)
	if len(got.RawTemplate) > 0 {
		wantLabelsErr = kjson.UnmarshalCaseSensitivePreserveInts(got.RawTemplate, &tl)
	}
	labels, labelsErr := got.labels(nil)
	if (labelsErr != nil) != (wantLabelsErr != nil) || labelsErr == nil && !reflect.DeepEqual(labels, tl.Metadata.Labels) {
		t.Fatalf("%s %q: labels %v (error %v), the typed decoding's %v (error %v)", kind, raw, labels, labelsErr, tl.Metadata.Labels, wantLabelsErr)
	}
	tmpl, tmplErr := got.template()
	if (tmplErr != nil) != (wantTmplErr != nil) {
		t.Fatalf("%s %q: pod template error %v, the typed decoding's %v", kind, raw, tmplErr, wantTmplErr)
	}
	if tmplErr == nil {
		if len(tmpl.Spec.Containers) == 0 {
			tmpl.Spec.Containers = nil // nil and empty read alike: no container
		}
		if !reflect.DeepEqual(*tmpl, want.Template) {
			t.Fatalf("%s %q: pod template\n%#v\nthe typed decoding's\n%#v", kind, raw, *tmpl, want.Template)
		}
	}
	got.Template, got.decoded, got.rawLabels = corev1.PodTemplateSpec{}, false, nil
	want.Template, want.decoded = corev1.PodTemplateSpec{}, false
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s %q: decoded\n%+v\nthe typed decoding's\n%+v", kind, raw, *got, *want)
	}
}

var scanKinds = []string{kindDeployment, kindStatefulSet, kindJob, kindCronJob, kindRollout}

// workloadCorpus: objects as the API server sends them (seed 003's
// settlement consumer, a CronJob's Job, a Rollout) and objects it never
// sends — duplicate keys, nulls, escapes, wrong types, broken JSON — that
// must be refused or read exactly as before.
func workloadCorpus(t testing.TB) [][]byte {
	settle := deployment("settlement", "settle", 3, settleTemplate())
	settle.Annotations = map[string]string{OverrideAnnotation: "7f3a9c21", "kubectl.kubernetes.io/last-applied-configuration": `{"spec":{"replicas":3}}`}
	settle.Spec.Template.Spec.Containers = append(settle.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar",
		Env: []corev1.EnvVar{{Name: "FROM_CM", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "kafka"}, Key: "reset"}}}},
		EnvFrom: []corev1.EnvFromSource{{Prefix: "KAFKA_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "defaults"}}}}})
	typed := raw(t, settle).Raw
	out := [][]byte{typed}
	for _, s := range []string{
		`null`, `{}`, ` {"metadata":null,"spec":null} `, `5`, `"x"`, `[]`, `{"spec":[]}`, `{"metadata":{"name":5}}`,
		`{"metadata":{"name":"a","name":null}}`, `{"metadata":{"name":"a\u00e9\ud83d\ude00\"b"}}`, "{\"metadata\":{\"name\":\"a\xff\xfeb\"}}",
		`{"metadata":{"na\u006de":"escaped-key"}}`, `{"metadata":{"Name":"wrong-case"}}`,
		`{"metadata":{"annotations":{"retentionguard.io/override-proof":"a","retentionguard.io/override-proof":null}}}`,
		`{"metadata":{"annotations":{"retentionguard.io/override-proof":"a"},"annotations":{"x":1}}}`,
		`{"metadata":{"annotations":{"retentionguard.io/override-proof":"a"},"annotations":null}}`,
		`{"metadata":{"annotations":{"retentionguard.io/override-proof":5}}}`, `{"metadata":{"annotations":[]}}`,
		`{"metadata":{"ownerReferences":[{"apiVersion":"batch/v1","kind":"CronJob","name":"settle","uid":"u","controller":true}]}}`,
		`{"metadata":{"ownerReferences":[{"apiVersion":"batch/v1","kind":"CronJob","name":"settle","uid":"u","controller":"yes"}]}}`,
		`{"metadata":{"ownerReferences":5}}`,
		`{"spec":{"replicas":0}}`, `{"spec":{"replicas":-0}}`, `{"spec":{"replicas":3,"replicas":null}}`, `{"spec":{"replicas":3.0}}`,
		`{"spec":{"replicas":1e2}}`, `{"spec":{"replicas":2147483648}}`, `{"spec":{"replicas":-2147483648}}`, `{"spec":{"replicas":"3"}}`,
		`{"spec":{"replicas":01}}`, `{"spec":{"replicas":-}}`, `{"spec":{"replicas":1.}}`, `{"spec":{"replicas":1.5e+3}}`,
		`{"spec":{"paused":true,"paused":null}}`, `{"spec":{"paused":1}}`, `{"spec":{"paused":tru}}`, `{"spec":{"suspend":true}}`,
		`{"spec":{"suspend":true,"suspend":null}}`, `{"spec":{"suspend":"true"}}`,
		`{"spec":{"template":null}}`, `{"spec":{"template":5}}`, `{"spec":{"template":"t"}}`, `{"spec":{"template":[]}}`,
		`{"spec":{"template":{"metadata":{"labels":{"app":"settle"}}},"template":{"metadata":{"labels":{"tier":"x"}}}}}`,
		`{"spec":{"template":{"metadata":{"labels":{"app":"settle"},"labels":{"tier":"x"}}}}}`,
		`{"spec":{"template":{"metadata":{"labels":{"app":"settle"},"labels":null}}}}`,
		`{"spec":{"template":{"metadata":{"labels":{"app":null,"x":"\u0041"}}}}}`, `{"spec":{"template":{"metadata":{"labels":{"app":1}}}}}`,
		`{"spec":{"template":{"metadata":{"labels":[]}}}}`, `{"spec":{"template":{"metadata":{"labels":{}}}}}`,
		`{"spec":{"template":{"spec":{"containers":[]}}}}`, `{"spec":{"template":{"spec":{"containers":null}}}}`,
		`{"spec":{"template":{"spec":{"containers":[null,{"name":"a"}]}}}}`, `{"spec":{"template":{"spec":{"containers":[1]}}}}`,
		`{"spec":{"template":{"spec":{"containers":[{"name":"a","env":[{"name":"X","value":"1"}]},{"name":"b"}],"containers":[{"image":"i"}]}}}}`,
		`{"spec":{"template":{"spec":{"containers":[{"name":"a","env":[{"name":"X","value":"1"},{"name":"Y"}],"env":[{"value":"2"}]}]}}}}`,
		`{"spec":{"template":{"spec":{"containers":[{"name":"a","env":null,"envFrom":null}]}}}}`,
		`{"spec":{"template":{"spec":{"containers":[{"name":"a","env":[],"envFrom":[]}]}}}}`,
		`{"spec":{"template":{"spec":{"containers":[{"name":"a","env":[null,{"name":"X","value":null}]}]}}}}`,
		`{"spec":{"template":{"spec":{"containers":[{"name":"a","env":[{"name":"X","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}]}]}}}}`,
		`{"spec":{"template":{"spec":{"containers":[{"name":"a","env":[{"name":"X","valueFrom":{"fieldRef":5}}]}]}}}}`,
		`{"spec":{"template":{"spec":{"containers":[{"name":"a","env":[{"name":"X","valueFrom":{"configMapKeyRef":{"name":"c"}}},{"name":"X","valueFrom":null}]}]}}}}`,
		`{"spec":{"template":{"spec":{"containers":[{"name":"a","env":{"name":"X"}}]}}}}`, `{"spec":{"template":{"spec":{"containers":[{"name":"a","env":[{"name":7}]}]}}}}`,
		`{"spec":{"template":{"spec":{"containers":[{"name":"a","envFrom":[{"configMapRef":{"name":"c","optional":true}}]}]}}}}`,
		`{"spec":{"template":{"spec":{"containers":[{"name":"a","envFrom":[{"prefix":1}]}]}}}}`,
		`{"spec":{"workloadRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"settle"}}}`, `{"spec":{"workloadRef":{"name":""}}}`,
		`{"spec":{"workloadRef":{"name":"a"},"workloadRef":null}}`, `{"spec":{"workloadRef":"x"}}`,
		`{"spec":{"jobTemplate":{"metadata":{"annotations":{"retentionguard.io/override-proof":"j"}},"spec":{"template":{"metadata":{"labels":{"app":"settle"}}}}}}}`,
		`{"spec":{"jobTemplate":{"spec":1}}}`, `{"spec":{"jobTemplate":null}}`,
		`{"status":{"replicas":1,"conditions":[{"type":"Available","status":"True"}]},"spec":{"replicas":2}}`,
		`{"a":[1,-2.5e-3,true,false,null,"s",{"b":[]},[]],"spec":{"replicas":1}}`,
		`{"spec":{"replicas":1}} x`, `{"spec":{"replicas":1}`, `{"spec":{"replicas":1},}`, `{"spec" {}}`, `{spec:{}}`, `{"spec":{"replicas":1}}}`,
		`{"a":"\x"}`, `{"a":"\u12"}`, "{\"a\":\"tab\tin a string\"}", `{"a":[1,]}`, `{"a":[1 2]}`, `{"a":nul}`, `{"a":-01}`,
		strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth),
		`{"a":` + strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth) + `}`,
		"\ufeff{}", "\t\n\r {}\t\n\r ",
	} {
		out = append(out, []byte(s))
	}
	return out
}

// Issue 26: the one-pass scan reads every workload as the typed decoding
// did (seed 003's settlement consumer among them), for every guarded kind.
func TestDecodeWorkloadAgreesWithTypedDecoding(t *testing.T) {
	for _, raw := range workloadCorpus(t) {
		for _, kind := range scanKinds {
			agree(t, kind, raw)
		}
	}
}

// Issue 34: the old object's labels, read beside the new object's decoded
// template (sharing its labels when the same bytes decide both), are what
// reading them alone gives, or fail as it fails, for every pair of the
// corpus's objects (seed 003's settlement consumer among them) and for the
// load test's rollout (an image change: the labels shared).
func TestOldLabelsBesideAgreeWithLabelsAlone(t *testing.T) {
	corpus := workloadCorpus(t)
	image := func(img string) []byte {
		tmpl := settleTemplate()
		tmpl.Spec.Containers[0].Image = img
		return raw(t, deployment("settlement", "settle", 3, tmpl)).Raw
	}
	shared := 0
	check := func(oldRaw, curRaw []byte) {
		t.Helper()
		cur, err := decodeWorkload(kindDeployment, curRaw)
		if err != nil {
			return
		}
		if _, err := cur.template(); err != nil {
			return
		}
		alone, err := decodeWorkload(kindDeployment, oldRaw)
		if err != nil {
			return
		}
		beside, _ := decodeWorkload(kindDeployment, oldRaw)
		want, wantErr := alone.labels(nil)
		got, gotErr := beside.labels(cur)
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() || !reflect.DeepEqual(got, want) {
			t.Fatalf("old %q beside %q: labels %v (error %v), alone %v (error %v)", oldRaw, curRaw, got, gotErr, want, wantErr)
		}
		if gotErr == nil && len(got) > 0 && reflect.ValueOf(got).UnsafePointer() == reflect.ValueOf(cur.Template.Labels).UnsafePointer() {
			shared++
		}
	}
	for _, o := range corpus {
		for _, c := range corpus {
			check(o, c)
		}
	}
	before := shared
	check(image("registry.example/settle:1"), image("registry.example/settle:2"))
	if shared != before+1 {
		t.Fatal("an image change decoded the old template's labels again instead of sharing the new one's")
	}
}

// FuzzDecodeWorkload: for any bytes, the one-pass scan refuses what the
// typed decoding refused and reads what it read, the same; it never
// panics. `go test` runs the corpus; `go test -fuzz FuzzDecodeWorkload
// ./webhook/` runs long.
func FuzzDecodeWorkload(f *testing.F) {
	for _, raw := range workloadCorpus(f) {
		for i := range scanKinds {
			f.Add(uint8(i), raw)
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, raw []byte) {
		if len(raw) == 0 {
			return // refused before decoding: "the request carries no object"
		}
		agree(t, scanKinds[int(kind)%len(scanKinds)], raw)
	})
}
