package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/testenv"
)

// FuzzAdmissionReview feeds the admission handler, as the webhook server
// serves it, arbitrary AdmissionReview bodies. It never panics (a panic
// would kill the replica: with failurePolicy Fail every rollout of the
// cluster's guarded namespaces is refused), every answer is an
// AdmissionReview, and it fails closed: a body that is no AdmissionReview
// with a request is never allowed, and neither is a Deployment create in
// the guarded namespace whose object cannot be read (seed 003: the guarded
// settlement consumer, its proof Violated). `go test` runs the seeds;
// `make fuzz` (go test -fuzz) runs long.
func FuzzAdmissionReview(f *testing.F) {
	seeds := []admission.Request{
		request(f, admissionv1.Create, "deployments", deployment("settlement", "settle", 1, settleTemplate()), nil, false),
		request(f, admissionv1.Update, "deployments", deployment("settlement", "settle", 3, settleTemplate()), deployment("settlement", "settle", 0, settleTemplate()), true),
		request(f, admissionv1.Create, "statefulsets", deployment("settlement", "settle", 1, settleTemplate()), nil, false),
		request(f, admissionv1.Create, "deployments", deployment("other", "web", 1, template(map[string]string{"app": "web"})), nil, false),
	}
	for _, r := range seeds {
		b, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: reviewType, Request: &r.AdmissionRequest})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		``, `null`, `{}`, `[]`, `{"request":null}`, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1"}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","resource":{"group":"apps","version":"v1","resource":"deployments"},"namespace":"settlement","operation":"CREATE","object":"garbage"}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","resource":{"group":"apps","version":"v1","resource":"deployments"},"namespace":"settlement","operation":"CREATE","object":{"spec":{"replicas":"x"}}}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","resource":{"group":"apps","version":"v1","resource":"deployments"},"subResource":"scale","namespace":"settlement","operation":"UPDATE","object":{"spec":{"replicas":3}},"oldObject":null}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","resource":{"group":"batch","version":"v1","resource":"cronjobs"},"namespace":"settlement","operation":"CREATE","object":{"spec":{"jobTemplate":null}}}}`,
		"\x00\xff{",
	} {
		f.Add([]byte(s))
	}

	policy := settlePolicy(withProof(noCommittedOffset(), time.Second))
	// No event recorder: a fake one blocks once its buffer is full, and
	// the fuzzer denies far more rollouts than that.
	c := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(policy).
		WithStatusSubresource(&rgv1.ConsumerRetentionPolicy{}).Build()
	h := NewHandler(c, nil, Options{HandlerTimeout: time.Second, Clock: func() time.Time { return testNow }})
	server := &admission.Webhook{Handler: h}
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		server.ServeHTTP(rec, req)

		var out admissionv1.AdmissionReview
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
			t.Fatalf("the answer is no AdmissionReview (%v): %q", err, rec.Body.String())
		}
		var in admissionv1.AdmissionReview
		readable := json.Unmarshal(body, &in) == nil && in.Request != nil
		if !readable && out.Response.Allowed {
			t.Fatalf("a body that is no AdmissionReview was allowed: %q", body)
		}
		if readable && out.Response.Allowed && guardedCreate(in.Request) {
			var d struct {
				Spec struct {
					Template json.RawMessage `json:"template"`
				} `json:"spec"`
			}
			if json.Unmarshal(in.Request.Object.Raw, &d) != nil {
				t.Fatalf("a Deployment create in the guarded namespace whose object cannot be read was allowed: %q", body)
			}
		}
	})
}

var reviewType = metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}

// guardedCreate: a Deployment create in the fuzzed policy's namespace.
func guardedCreate(r *admissionv1.AdmissionRequest) bool {
	return r.Operation == admissionv1.Create && r.Namespace == "settlement" && r.SubResource == "" &&
		r.Resource.Group == "apps" && r.Resource.Resource == "deployments"
}
