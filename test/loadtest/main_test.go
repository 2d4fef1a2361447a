package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

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

// noopServer answers every AdmissionReview with allowed, as the load
// test's /noop path does.
func noopServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(&ctrlwebhook.Admission{Handler: admission.HandlerFunc(
		func(context.Context, admission.Request) admission.Response { return admission.Allowed("") })})
	t.Cleanup(srv.Close)
	return srv
}

// TestPhasesLastMinPhase: issue 34's closed-loop aim is measured over
// phases of at least 10 s (-min-phase): a phase keeps sending the guarded
// rollout (seed 000's kind: a consumer Deployment's template change) past
// -requests until it has lasted -min-phase, and with -min-phase 0 sends
// exactly -requests.
func TestPhasesLastMinPhase(t *testing.T) {
	srv := noopServer(t)
	body, err := admissionReview()
	if err != nil {
		t.Fatal(err)
	}
	exact, err := closedLoop(srv.Client(), srv.URL, body, phaseBounds{requests: 7, max: time.Minute}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if exact.n != 7 || exact.errors != 0 {
		t.Errorf("closed loop without -min-phase: %d requests (%d failed), want exactly 7", exact.n, exact.errors)
	}
	long, err := closedLoop(srv.Client(), srv.URL, body, phaseBounds{requests: 1, min: 300 * time.Millisecond, max: time.Minute}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if long.elapsed < 300*time.Millisecond || long.n < 1 || long.errors != 0 {
		t.Errorf("closed loop with -min-phase 300ms: %d requests (%d failed) over %s", long.n, long.errors, long.elapsed)
	}
	// The open loop schedules as many requests as fill -min-phase at -rate.
	open, err := openLoop(srv.Client(), srv.URL, body, phaseBounds{requests: 2, min: 200 * time.Millisecond, max: time.Minute}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if open.n != 20 || open.errors != 0 {
		t.Errorf("open loop at 100 req/s with -min-phase 200ms: %d requests (%d failed), want 20", open.n, open.errors)
	}
}

// TestOpenRequests: the open loop's count is -requests or what fills
// -min-phase at -rate, whichever is more.
func TestOpenRequests(t *testing.T) {
	for _, tc := range []struct {
		b    phaseBounds
		rate float64
		want int
	}{
		{phaseBounds{requests: 5000, min: 10 * time.Second}, 1000, 10000},
		{phaseBounds{requests: 50000, min: 10 * time.Second}, 1000, 50000},
		{phaseBounds{requests: 5000}, 1000, 5000},
		{phaseBounds{requests: 1, min: 1500 * time.Millisecond}, 3, 5},
	} {
		if got := openRequests(tc.b, tc.rate); got != tc.want {
			t.Errorf("openRequests(%+v, %g) = %d, want %d", tc.b, tc.rate, got, tc.want)
		}
	}
}
