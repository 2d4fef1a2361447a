package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/testenv"
)

// In-process tests of the handler's gathering (live checks, fail-closed
// paths, scale requests, dry-run) with a fake client. The admission
// contract's rows through a real API server are in admission_test.go.

func deployment(ns, name string, replicas int32, tmpl corev1.PodTemplateSpec) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas, Template: tmpl},
	}
}

func settleTemplate() corev1.PodTemplateSpec {
	return template(map[string]string{"app": "settle"},
		container("settle", resetEnv, "none", commitEnv, "false"))
}

func raw(t testing.TB, obj any) runtime.RawExtension {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.RawExtension{Raw: b}
}

func request(t testing.TB, op admissionv1.Operation, resource string, obj, old any, dryRun bool) admission.Request {
	r := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:       "req-1",
		Operation: op,
		Resource:  metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: resource},
		Namespace: "settlement", Name: "settle",
		UserInfo: authnv1.UserInfo{Username: "alice"},
		DryRun:   &dryRun,
		Object:   raw(t, obj),
	}}
	if old != nil {
		r.OldObject = raw(t, old)
	}
	return r
}

// fixedLive is a LiveChecker answering with a function, counting calls.
type fixedLive struct {
	calls atomic.Int32
	fn    func(ctx context.Context, p *rgv1.ConsumerRetentionPolicy) (*rgv1.ProofStatus, error)
}

func (f *fixedLive) Check(ctx context.Context, p *rgv1.ConsumerRetentionPolicy) (*rgv1.ProofStatus, error) {
	f.calls.Add(1)
	return f.fn(ctx, p)
}

func newTestHandler(t testing.TB, opts Options, objs ...client.Object) (*Handler, *events.FakeRecorder, *atomic.Int32) {
	t.Helper()
	var lists atomic.Int32
	c := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithObjects(objs...).
		WithStatusSubresource(&rgv1.ConsumerRetentionPolicy{}).
		WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, o ...client.ListOption) error {
			lists.Add(1)
			return cl.List(ctx, list, o...)
		}}).Build()
	rec := events.NewFakeRecorder(20)
	if opts.Clock == nil {
		opts.Clock = func() time.Time { return testNow }
	}
	return NewHandler(c, rec, opts), rec, &lists
}

func denied(t *testing.T, resp admission.Response) string {
	t.Helper()
	if resp.Allowed {
		t.Fatalf("allowed, want denied (warnings %q)", resp.Warnings)
	}
	return resp.Result.Message
}

// Contract: "everything else is always allowed" — without even reading
// policies.
func TestHandlerNonRolloutsReadNothing(t *testing.T) {
	p := settlePolicy(withProof(noCommittedOffset(), time.Second))
	h, _, lists := newTestHandler(t, Options{}, p)
	tmpl := settleTemplate()
	for name, req := range map[string]admission.Request{
		"scale down":      request(t, admissionv1.Update, "deployments", deployment("settlement", "settle", 1, tmpl), deployment("settlement", "settle", 3, tmpl), false),
		"scale up within": request(t, admissionv1.Update, "deployments", deployment("settlement", "settle", 4, tmpl), deployment("settlement", "settle", 3, tmpl), false),
		"create at zero":  request(t, admissionv1.Create, "deployments", deployment("settlement", "settle", 0, tmpl), nil, false),
		"status subresource": func() admission.Request {
			r := request(t, admissionv1.Update, "deployments", deployment("settlement", "settle", 0, tmpl), deployment("settlement", "settle", 3, tmpl), false)
			r.SubResource = "status"
			return r
		}(),
		"other resource": request(t, admissionv1.Create, "daemonsets", deployment("settlement", "settle", 1, tmpl), nil, false),
	} {
		if resp := h.Handle(context.Background(), req); !resp.Allowed {
			t.Errorf("%s: denied: %v", name, resp.Result)
		}
	}
	if n := lists.Load(); n != 0 {
		t.Errorf("policies listed %d times for non-rollouts", n)
	}
}

// Contract: stale proof, no live check configured → Unknown → denied.
func TestHandlerStaleProofWithoutLiveCheckerIsDenied(t *testing.T) {
	p := settlePolicy(withProof(proven(), time.Hour))
	h, _, _ := newTestHandler(t, Options{}, p)
	msg := denied(t, h.Handle(context.Background(), request(t, admissionv1.Create, "deployments", deployment("settlement", "settle", 1, settleTemplate()), nil, false)))
	for _, want := range []string{"is Unknown", ReasonProofStale, "status proof checked 1h ago", "no live check is configured",
		// A create: the override goes into the manifest.
		"add to the manifest's metadata.annotations", `override-proof: "` + webhookProofID(p, ReasonProofStale) + `"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
}

// Contract: a stale or missing proof is re-proved live; the live proof
// decides. The checker gets a copy of the policy.
func TestHandlerLiveCheckDecides(t *testing.T) {
	for name, p := range map[string]*rgv1.ConsumerRetentionPolicy{
		"stale":            settlePolicy(withProof(noCommittedOffset(), time.Hour)),
		"older generation": settlePolicy(withProof(noCommittedOffset(), time.Second), func(p *rgv1.ConsumerRetentionPolicy) { p.Generation = 2 }),
		"missing":          settlePolicy(),
	} {
		t.Run(name, func(t *testing.T) {
			live := &fixedLive{fn: func(_ context.Context, p *rgv1.ConsumerRetentionPolicy) (*rgv1.ProofStatus, error) {
				p.Spec.GroupID = "mutated by the checker"
				proof := proven()
				proof.CheckedAt = metav1.NewTime(testNow)
				return proof, nil
			}}
			h, _, _ := newTestHandler(t, Options{LiveChecker: live}, p)
			resp := h.Handle(context.Background(), request(t, admissionv1.Create, "deployments", deployment("settlement", "settle", 1, settleTemplate()), nil, false))
			if !resp.Allowed || live.calls.Load() != 1 {
				t.Fatalf("allowed=%v after %d live checks: %v", resp.Allowed, live.calls.Load(), resp.Result)
			}
			// The live proof says Violated now: denied, and the message says it was checked live.
			live.fn = func(context.Context, *rgv1.ConsumerRetentionPolicy) (*rgv1.ProofStatus, error) {
				proof := noCommittedOffset()
				proof.CheckedAt = metav1.NewTime(testNow)
				return proof, nil
			}
			msg := denied(t, h.Handle(context.Background(), request(t, admissionv1.Create, "deployments", deployment("settlement", "settle", 1, settleTemplate()), nil, false)))
			if !strings.Contains(msg, "(proof 7f3a9c21, checked live)") || !strings.Contains(msg, "group ledger-settle-consumer") ||
				!strings.Contains(msg, "24 partitions, 24 without a committed offset") {
				t.Errorf("message:\n%s", msg)
			}
		})
	}
	// A pod template change of running consumers uses a fresh status proof
	// as is: no live check.
	live := &fixedLive{fn: func(context.Context, *rgv1.ConsumerRetentionPolicy) (*rgv1.ProofStatus, error) {
		return nil, errors.New("unexpected")
	}}
	h, _, _ := newTestHandler(t, Options{LiveChecker: live}, settlePolicy(withProof(proven(), time.Minute)))
	changed := settleTemplate()
	changed.Spec.Containers[0].Image = "settle:v2"
	update := request(t, admissionv1.Update, "deployments", deployment("settlement", "settle", 1, changed),
		deployment("settlement", "settle", 1, settleTemplate()), false)
	if resp := h.Handle(context.Background(), update); !resp.Allowed || live.calls.Load() != 0 {
		t.Errorf("fresh proof, template change: allowed=%v, %d live checks", resp.Allowed, live.calls.Load())
	}
}

// Admission contract: a start (create with replicas, scale from zero,
// unpause, unsuspend, a CronJob's Job) is judged on a live observation,
// however fresh the status: retention may have passed the committed offset
// since the last check, and starting is when a stale Proven lets a
// consumer skip records.
func TestHandlerStartIsJudgedLive(t *testing.T) {
	live := &fixedLive{fn: func(context.Context, *rgv1.ConsumerRetentionPolicy) (*rgv1.ProofStatus, error) {
		proof := noCommittedOffset()
		proof.CheckedAt = metav1.NewTime(testNow)
		return proof, nil
	}}
	// The status says Proven, checked a minute ago.
	h, _, _ := newTestHandler(t, Options{LiveChecker: live}, settlePolicy(withProof(proven(), time.Minute)))
	msg := denied(t, h.Handle(context.Background(), request(t, admissionv1.Create, "deployments",
		deployment("settlement", "settle", 1, settleTemplate()), nil, false)))
	if live.calls.Load() != 1 || !strings.Contains(msg, "checked live") || !strings.Contains(msg, "NoCommittedOffset") {
		t.Errorf("%d live checks; message:\n%s", live.calls.Load(), msg)
	}
	// Scale from zero: the same.
	scale := request(t, admissionv1.Update, "deployments", deployment("settlement", "settle", 1, settleTemplate()),
		deployment("settlement", "settle", 0, settleTemplate()), false)
	denied(t, h.Handle(context.Background(), scale))
	if live.calls.Load() != 2 {
		t.Errorf("scale from zero: %d live checks, want 2", live.calls.Load())
	}
	// The live check failing is Unknown: refused (fail closed), never the
	// stale Proven.
	live.fn = func(context.Context, *rgv1.ConsumerRetentionPolicy) (*rgv1.ProofStatus, error) {
		return nil, errors.New("brokers unreachable")
	}
	if msg := denied(t, h.Handle(context.Background(), scale)); !strings.Contains(msg, ReasonLiveCheckFailed) {
		t.Errorf("message:\n%s", msg)
	}
}

// Contract: live check failure, panic or timeout → Unknown → denied, within
// the live-check deadline even when the checker ignores its context; live
// checks of several policies run at once.
func TestHandlerLiveCheckFailuresFailClosed(t *testing.T) {
	var hangsDone atomic.Int32
	hang := func(ctx context.Context, _ *rgv1.ConsumerRetentionPolicy) (*rgv1.ProofStatus, error) {
		time.Sleep(5 * time.Second) // ignores ctx on purpose
		hangsDone.Add(1)
		return proven(), nil
	}
	cases := map[string]struct {
		fn   func(context.Context, *rgv1.ConsumerRetentionPolicy) (*rgv1.ProofStatus, error)
		want string
	}{
		"error": {func(context.Context, *rgv1.ConsumerRetentionPolicy) (*rgv1.ProofStatus, error) {
			return nil, errors.New("dial tcp 10.0.0.9:9093: connection refused")
		}, "the live check failed: dial tcp 10.0.0.9:9093: connection refused"},
		"no proof": {func(context.Context, *rgv1.ConsumerRetentionPolicy) (*rgv1.ProofStatus, error) { return nil, nil }, "returned no proof"},
		"panic":    {func(context.Context, *rgv1.ConsumerRetentionPolicy) (*rgv1.ProofStatus, error) { panic("boom") }, "live check panicked: boom"},
		"hang":     {hang, "did not answer within 200ms"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := settlePolicy(withProof(proven(), time.Hour))
			b := settlePolicy(withProof(proven(), time.Hour), func(p *rgv1.ConsumerRetentionPolicy) { p.Name, p.UID = "second-group", "uid-2" })
			// Each check waits, within its deadline, until both have
			// started: checks run one after the other would each be cut
			// at the deadline (the message would say so, not tc.want).
			var arrived sync.WaitGroup
			arrived.Add(2)
			both := make(chan struct{})
			go func() { arrived.Wait(); close(both) }()
			live := &fixedLive{fn: func(ctx context.Context, p *rgv1.ConsumerRetentionPolicy) (*rgv1.ProofStatus, error) {
				arrived.Done()
				select {
				case <-both:
				case <-ctx.Done():
					return nil, errors.New("the other policy's live check did not start alongside")
				}
				return tc.fn(ctx, p)
			}}
			h, _, _ := newTestHandler(t, Options{LiveChecker: live, LiveCheckTimeout: 200 * time.Millisecond}, a, b)
			msg := denied(t, h.Handle(context.Background(), request(t, admissionv1.Create, "deployments", deployment("settlement", "settle", 1, settleTemplate()), nil, false)))
			if !strings.Contains(msg, ReasonLiveCheckFailed) || !strings.Contains(msg, tc.want) {
				t.Errorf("message lacks %s / %q:\n%s", ReasonLiveCheckFailed, tc.want, msg)
			}
			if live.calls.Load() != 2 {
				t.Errorf("%d live checks for two stale policies", live.calls.Load())
			}
			// Cut at the deadline: decided while the checks still hang.
			if n := hangsDone.Load(); name == "hang" && n != 0 {
				t.Errorf("decided after %d hanging live checks returned; want the decision at their deadline", n)
			}
		})
	}
}

// Contract: the handler bounds its own context below the webhook timeout,
// and a policy list that fails refuses the rollout (fail closed).
func TestHandlerFailsClosedOnListErrors(t *testing.T) {
	listBudget := make(chan time.Duration, 1)
	c := fake.NewClientBuilder().WithScheme(testenv.Scheme()).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, _ client.WithWatch, _ client.ObjectList, _ ...client.ListOption) error {
			budget := time.Duration(-1)
			if dl, ok := ctx.Deadline(); ok {
				budget = time.Until(dl)
			}
			select {
			case listBudget <- budget:
			default:
			}
			<-ctx.Done() // an unsynced cache waits for its context
			return ctx.Err()
		}}).Build()
	h := NewHandler(c, nil, Options{HandlerTimeout: 300 * time.Millisecond})
	errorsBefore := testutil.ToFloat64(decisionsTotal.WithLabelValues("Deployment", string(outcomeError)))
	deniedBefore := testutil.ToFloat64(decisionsTotal.WithLabelValues("Deployment", string(outcomeDenied)))
	msg := denied(t, h.Handle(context.Background(), request(t, admissionv1.Create, "deployments", deployment("settlement", "settle", 1, settleTemplate()), nil, false)))
	// Counted as the guard failing, not as a proof failing.
	if got := testutil.ToFloat64(decisionsTotal.WithLabelValues("Deployment", string(outcomeError))); got != errorsBefore+1 {
		t.Errorf("decision=error went from %v to %v, want +1", errorsBefore, got)
	}
	if got := testutil.ToFloat64(decisionsTotal.WithLabelValues("Deployment", string(outcomeDenied))); got != deniedBefore {
		t.Errorf("a fail-closed refusal was counted as decision=denied (%v → %v)", deniedBefore, got)
	}
	if d := <-listBudget; d <= 0 || d > 300*time.Millisecond {
		t.Errorf("the policy list got a budget of %v (negative: no deadline); want the handler's 300ms at most", d)
	}
	if !strings.Contains(msg, "could not finish listing the namespace's ConsumerRetentionPolicies") {
		t.Errorf("message:\n%s", msg)
	}
}

// Contract: `kubectl scale` from zero goes through the scale subresource;
// the handler reads the workload to match and judge its template.
func TestHandlerScaleSubresource(t *testing.T) {
	p := settlePolicy(withProof(noCommittedOffset(), time.Second))
	stored := deployment("settlement", "settle", 0, settleTemplate())
	stored.Annotations = map[string]string{OverrideAnnotation: "7f3a9c21"}
	h, rec, _ := newTestHandler(t, Options{}, p, stored)
	scale := func(n int32) *autoscalingv1.Scale {
		return &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "settle", Namespace: "settlement"}, Spec: autoscalingv1.ScaleSpec{Replicas: n}}
	}
	req := func(from, to int32) admission.Request {
		r := request(t, admissionv1.Update, "deployments", scale(to), scale(from), false)
		r.SubResource = "scale"
		return r
	}
	resp := h.Handle(context.Background(), req(0, 1))
	if !resp.Allowed {
		t.Fatalf("scale from zero with the stored workload's override: %v", resp.Result)
	}
	if ev := <-rec.Events; !strings.Contains(ev, EventProofOverridden) || !strings.Contains(ev, "alice") {
		t.Errorf("event %q", ev)
	}
	if resp := h.Handle(context.Background(), req(2, 1)); !resp.Allowed {
		t.Errorf("scale down through the subresource: %v", resp.Result)
	}
	// Without the annotation the stored workload is refused.
	h, _, _ = newTestHandler(t, Options{}, p, deployment("settlement", "settle", 0, settleTemplate()))
	msg := denied(t, h.Handle(context.Background(), req(0, 3)))
	if !strings.Contains(msg, "rollout (scale from zero) of Deployment settlement/settle") {
		t.Errorf("message:\n%s", msg)
	}
	// A workload that cannot be read is refused (it is a rollout).
	h, _, _ = newTestHandler(t, Options{}, p)
	if msg := denied(t, h.Handle(context.Background(), req(0, 1))); !strings.Contains(msg, "could not finish reading the Deployment being scaled") {
		t.Errorf("message:\n%s", msg)
	}
}

// Contract: dry-run gets the same answer and no events; real requests
// record one event per failing policy.
func TestHandlerDryRunRecordsNothing(t *testing.T) {
	p := settlePolicy(withProof(noCommittedOffset(), time.Second))
	h, rec, _ := newTestHandler(t, Options{}, p)
	dry := h.Handle(context.Background(), request(t, admissionv1.Create, "deployments", deployment("settlement", "settle", 1, settleTemplate()), nil, true))
	real := h.Handle(context.Background(), request(t, admissionv1.Create, "deployments", deployment("settlement", "settle", 1, settleTemplate()), nil, false))
	if dry.Allowed || real.Allowed || dry.Result.Message != real.Result.Message {
		t.Fatalf("dry-run answered differently:\n%v\n%v", dry.Result, real.Result)
	}
	if n := len(rec.Events); n != 1 {
		t.Fatalf("%d events, want 1 (from the real request only)", n)
	}
	if ev := <-rec.Events; !strings.HasPrefix(ev, "Warning "+EventRolloutDenied) || !strings.Contains(ev, "requested by alice") {
		t.Errorf("event %q", ev)
	}
}

// A manager that watches only some namespaces (--watch-namespaces) guards
// only those: a rollout elsewhere is allowed without listing (the cache
// would refuse to list an unwatched namespace, and the handler would fail
// closed).
func TestHandlerOnlyGuardsWatchedNamespaces(t *testing.T) {
	p := settlePolicy(withProof(noCommittedOffset(), time.Second))
	h, _, lists := newTestHandler(t, Options{Namespaces: []string{"payments"}}, p)
	if resp := h.Handle(context.Background(), request(t, admissionv1.Create, "deployments", deployment("settlement", "settle", 1, settleTemplate()), nil, false)); !resp.Allowed {
		t.Errorf("a rollout in an unwatched namespace was refused: %v", resp.Result)
	}
	if lists.Load() != 0 {
		t.Errorf("policies listed for an unwatched namespace")
	}
	h, _, _ = newTestHandler(t, Options{Namespaces: []string{"payments", "settlement"}}, p)
	denied(t, h.Handle(context.Background(), request(t, admissionv1.Create, "deployments", deployment("settlement", "settle", 1, settleTemplate()), nil, false)))
}

// testIndex is a policy informer's store whose sync the test decides.
type testIndex struct {
	toolscache.Indexer
	synced atomic.Bool
}

func (i *testIndex) HasSynced() bool                { return i.synced.Load() }
func (i *testIndex) GetIndexer() toolscache.Indexer { return i.Indexer }

func newTestIndex(t *testing.T, objs ...any) *testIndex {
	t.Helper()
	idx := &testIndex{Indexer: toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})}
	for _, o := range objs {
		if err := idx.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return idx
}

// Issue 26: once the policy informer has synced, a request reads its
// namespace's policies from the informer's index — no List, no copy — and
// leaves them as they were; before the sync it lists through the reader
// (which waits for the sync), never judging by a partial index. Seed 003:
// the settlement consumer's Violated proof refuses either way.
func TestHandlerReadsThePolicyIndexOnceSynced(t *testing.T) {
	p := settlePolicy(withProof(noCommittedOffset(), time.Second))
	indexed := p.DeepCopy()
	idx := newTestIndex(t, indexed)
	h, rec, lists := newTestHandler(t, Options{PolicyIndex: idx}, p)
	create := func() admission.Response {
		return h.Handle(context.Background(), request(t, admissionv1.Create, "deployments", deployment("settlement", "settle", 1, settleTemplate()), nil, false))
	}

	msg := denied(t, create())
	if !strings.Contains(msg, "ledger-settle-consumer") || lists.Load() != 1 {
		t.Errorf("before the sync: %d Lists (want 1), message:\n%s", lists.Load(), msg)
	}
	idx.synced.Store(true)
	msg = denied(t, create())
	if !strings.Contains(msg, "ledger-settle-consumer") || lists.Load() != 1 {
		t.Errorf("after the sync: %d Lists (want still 1), message:\n%s", lists.Load(), msg)
	}
	if len(rec.Events) != 2 {
		t.Errorf("%d events, want one per refusal", len(rec.Events))
	}
	if want := settlePolicy(withProof(noCommittedOffset(), time.Second)); !equality.Semantic.DeepEqual(indexed, want) {
		t.Errorf("the informer's policy was modified:\n%+v\nwant\n%+v", indexed, want)
	}

	// An index holding anything but policies refuses (fail closed).
	bad := newTestIndex(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "settlement"}})
	bad.synced.Store(true)
	h, _, _ = newTestHandler(t, Options{PolicyIndex: bad}, p)
	msg = denied(t, h.Handle(context.Background(), request(t, admissionv1.Create, "deployments", deployment("settlement", "settle", 1, settleTemplate()), nil, false)))
	if !strings.Contains(msg, "could not finish listing the namespace's ConsumerRetentionPolicies") {
		t.Errorf("message:\n%s", msg)
	}
}
