package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/retentionguard/retention-guard/webhook"
)

// BenchmarkAdmission is the load test's request in process, without TLS,
// HTTP/2 or a client sharing the cores: what the guard's handler costs, and
// what serving it costs next to the no-op handler (controller-runtime's
// decoding of the AdmissionReview and encoding of the answer included).
// Allocations are the load-independent figure on a shared machine:
//
//	go test ./test/loadtest/ -run '^$' -bench BenchmarkAdmission -count 10 > new.txt
//	go tool benchstat old.txt new.txt
//	go test ./test/loadtest/ -run '^$' -bench 'BenchmarkAdmission/handle' -cpuprofile cpu.out -memprofile mem.out
func BenchmarkAdmission(b *testing.B) {
	body, err := admissionReview()
	if err != nil {
		b.Fatal(err)
	}
	reader, err := newIndexReader(1000, 10)
	if err != nil {
		b.Fatal(err)
	}
	guard := webhook.NewHandler(reader, nil, webhook.Options{PolicyIndex: reader})
	noop := admission.HandlerFunc(func(context.Context, admission.Request) admission.Response { return admission.Allowed("") })

	b.Run("handle", func(b *testing.B) {
		var rev admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &rev); err != nil {
			b.Fatal(err)
		}
		req := admission.Request{AdmissionRequest: *rev.Request}
		ctx := context.Background()
		if resp := guard.Handle(ctx, req); !resp.Allowed {
			b.Fatalf("the guard refused the sample rollout: %v", resp.Result)
		}
		b.ReportAllocs()
		for b.Loop() {
			guard.Handle(ctx, req)
		}
	})
	for _, s := range []struct {
		name    string
		handler admission.Handler
	}{{"serve-noop", noop}, {"serve-guard", guard}} {
		b.Run(s.name, func(b *testing.B) {
			wh := &ctrlwebhook.Admission{Handler: s.handler}
			serve := func() *httptest.ResponseRecorder {
				r := httptest.NewRequest(http.MethodPost, webhook.Path, bytes.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				w := httptest.NewRecorder()
				wh.ServeHTTP(w, r)
				return w
			}
			var rev admissionv1.AdmissionReview
			if err := json.Unmarshal(serve().Body.Bytes(), &rev); err != nil || rev.Response == nil || !rev.Response.Allowed {
				b.Fatalf("%s did not allow the sample rollout: %v %+v", s.name, err, rev.Response)
			}
			b.ReportAllocs()
			for b.Loop() {
				serve()
			}
		})
	}
}
