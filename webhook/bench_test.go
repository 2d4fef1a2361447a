package webhook

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// The handler in process against the manager's real informer cache holding
// 10,000 policies across 1,000 namespaces (10 per namespace), created
// through the API server of the integration suite:
//
//	export KUBEBUILDER_ASSETS=$(hack/build-control-plane.sh)
//	go test ./webhook/ -run '^$' -bench BenchmarkHandle -benchmem
//
// Each sub-benchmark reports ns/op, allocs/op and the p50/p99 of single
// requests.

const (
	benchNamespaces  = 1000
	benchPerNS       = 10
	benchTargetNS    = "bench-0500"
	benchCheckPeriod = time.Hour // keeps the proofs fresh for the whole run
)

var (
	benchOnce sync.Once
	benchErr  error
)

// populate creates the 10,000 policies once per test binary; in the target
// namespace, p-0 (app=svc-0) is Proven and p-1 (app=svc-1) Violated.
func populate(b *testing.B, s *suiteEnv) {
	benchOnce.Do(func() {
		start := time.Now()
		ctx := context.Background()
		work := make(chan int)
		errs := make(chan error, 16)
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				for i := range work {
					ns := fmt.Sprintf("bench-%04d", i)
					if err := s.admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
						errs <- err
						return
					}
					for j := range benchPerNS {
						p := settlePolicy(withConsumer("app", resetEnv, ""), func(p *rgv1.ConsumerRetentionPolicy) {
							p.ObjectMeta = metav1.ObjectMeta{Name: fmt.Sprintf("p-%d", j), Namespace: ns}
							p.Spec.GroupID = fmt.Sprintf("group-%d-%d", i, j)
							p.Spec.Selector.MatchLabels = map[string]string{"app": fmt.Sprintf("svc-%d", j)}
							p.Spec.CheckInterval = &metav1.Duration{Duration: benchCheckPeriod}
						})
						if err := s.admin.Create(ctx, p); err != nil {
							errs <- err
							return
						}
						if ns == benchTargetNS && j < 2 {
							proof := proven()
							if j == 1 {
								proof = noCommittedOffset()
							}
							proof.CheckedAt = metav1.Now()
							p.Status = rgv1.ConsumerRetentionPolicyStatus{ObservedGeneration: p.Generation, Proof: proof}
							if err := s.admin.Status().Update(ctx, p); err != nil {
								errs <- err
								return
							}
						}
					}
				}
			})
		}
		go func() {
			defer close(work)
			for i := range benchNamespaces {
				select {
				case work <- i:
				case err := <-errs:
					errs <- err
					return
				}
			}
		}()
		wg.Wait()
		select {
		case benchErr = <-errs:
			return
		default:
		}
		// Wait for the cache to hold them all.
		for {
			var all rgv1.ConsumerRetentionPolicyList
			if err := s.mgr.GetCache().List(ctx, &all, client.UnsafeDisableDeepCopy); err != nil {
				benchErr = err
				return
			}
			n := 0
			for _, p := range all.Items {
				if len(p.Namespace) > 6 && p.Namespace[:6] == "bench-" {
					n++
				}
			}
			if n == benchNamespaces*benchPerNS {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		b.Logf("created %d policies in %d namespaces in %v", benchNamespaces*benchPerNS, benchNamespaces, time.Since(start).Round(time.Second))
	})
	if benchErr != nil {
		b.Fatalf("creating the policies: %v", benchErr)
	}
}

func benchTemplate(app, image string) corev1.PodTemplateSpec {
	t := template(map[string]string{"app": app, "name": app},
		container("app", resetEnv, "none", "KAFKA_BOOTSTRAP_SERVERS", "kafka-0.kafka:9092", "LOG_LEVEL", "info"))
	t.Spec.Containers[0].Image = image
	t.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: mustQuantity("250m"), corev1.ResourceMemory: mustQuantity("256Mi")}
	return t
}

func BenchmarkHandle(b *testing.B) {
	s := startSuite(b)
	populate(b, s)
	// As Setup wires it: the policy informer's index read without copying.
	inf, err := s.mgr.GetCache().GetInformer(context.Background(), &rgv1.ConsumerRetentionPolicy{})
	if err != nil {
		b.Fatal(err)
	}
	idx, ok := inf.(PolicyIndex)
	if !ok {
		b.Fatalf("the manager's policy informer (%T) exposes no index", inf)
	}
	h := NewHandler(s.mgr.GetCache(), nil, Options{ConfigMapReader: s.mgr.GetAPIReader(), WorkloadReader: s.mgr.GetAPIReader(), PolicyIndex: idx})

	update := func(app string, oldReplicas, newReplicas int32, newImage string) admission.Request {
		r := request(b, admissionv1.Update, "deployments",
			deployment(benchTargetNS, app, newReplicas, benchTemplate(app, newImage)),
			deployment(benchTargetNS, app, oldReplicas, benchTemplate(app, "app:1")), false)
		r.Namespace, r.Name = benchTargetNS, app
		return r
	}
	cases := []struct {
		name string
		req  admission.Request
		want bool
	}{
		{"not-a-rollout(scale-3to4)", update("svc-0", 3, 4, "app:1"), true},
		{"rollout-unmatched", update("web", 2, 2, "app:2"), true},
		{"rollout-allowed(proven,env-ok)", update("svc-0", 2, 2, "app:2"), true},
		{"rollout-denied(violated,24-partitions)", update("svc-1", 2, 2, "app:2"), false},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			if resp := h.Handle(ctx, tc.req); resp.Allowed != tc.want {
				b.Fatalf("allowed=%v, want %v: %v", resp.Allowed, tc.want, resp.Result)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				h.Handle(ctx, tc.req)
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
		})
	}

	// For comparison: a List of the namespace (what the handler does
	// before the informer has synced, and without an index), and what
	// listing every policy would cost per request
	// (what a cache without the namespace index, or a List without
	// InNamespace, would do).
	b.Run("list-namespace(index)", func(b *testing.B) {
		var l rgv1.ConsumerRetentionPolicyList
		b.ReportAllocs()
		for b.Loop() {
			_ = s.mgr.GetCache().List(context.Background(), &l, client.InNamespace(benchTargetNS), client.UnsafeDisableDeepCopy)
		}
		if len(l.Items) != benchPerNS {
			b.Fatalf("%d policies in %s", len(l.Items), benchTargetNS)
		}
	})
	b.Run("list-all(no-index,for-comparison)", func(b *testing.B) {
		var l rgv1.ConsumerRetentionPolicyList
		b.ReportAllocs()
		for b.Loop() {
			_ = s.mgr.GetCache().List(context.Background(), &l, client.UnsafeDisableDeepCopy)
		}
	})
}
