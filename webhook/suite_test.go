package webhook

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/testenv"
)

// The integration suite: a real kube-apiserver and etcd (envtest) with the
// generated config/webhook/manifests.yaml installed, calling this package's
// handler over TLS on a manager's webhook server. It starts on first use, so
// the pure tests run without it.

// suiteEnv is the running suite.
type suiteEnv struct {
	env     *testenv.Env
	mgr     manager.Manager
	live    *switchLive
	admin   client.Client // setup and inspection, as the envtest admin
	alice   client.Client // the person rolling out, whose warnings are captured
	warns   *warningRecorder
	kubectl func(args ...string) (stdout, stderr string, err error)
	cancel  context.CancelFunc
}

var (
	suiteOnce sync.Once
	suiteErr  error
	suite     *suiteEnv
)

func TestMain(m *testing.M) {
	code := m.Run()
	pg.Stop() // started by the business cursor test, on first use
	if suite != nil {
		suite.cancel()
		if err := suite.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping control plane:", err)
		}
	}
	os.Exit(code)
}

// liveTimeout is the suite's --webhook-live-check-timeout: the production
// default.
const liveTimeout = DefaultLiveCheckTimeout

// startSuite starts the control plane and the manager once per test binary.
func startSuite(t testing.TB) *suiteEnv {
	t.Helper()
	suiteOnce.Do(func() { suite, suiteErr = newSuite() })
	if suiteErr != nil {
		t.Fatalf("starting the integration suite: %v", suiteErr)
	}
	return suite
}

func newSuite() (*suiteEnv, error) {
	ctrl.SetLogger(logr.Discard())
	rolloutCRD, err := testenv.ArgoRolloutsCRD()
	if err != nil {
		return nil, err
	}
	env, err := testenv.Start(func(e *envtest.Environment) {
		// Argo Rollouts' own Rollout CRD: Rollouts are guarded like
		// Deployments (argorollouts_test.go).
		e.CRDDirectoryPaths = append(e.CRDDirectoryPaths, rolloutCRD)
		e.WebhookInstallOptions = envtest.WebhookInstallOptions{
			Paths: []string{filepath.Join(testenv.RepoRoot(), "config", "webhook", "manifests.yaml")},
		}
	})
	if err != nil {
		return nil, err
	}
	s := &suiteEnv{env: env, admin: env.Client, live: &switchLive{byNamespace: map[string]liveFunc{}}}
	wio := &env.WebhookInstallOptions
	mgr, err := ctrl.NewManager(env.Config, manager.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wio.LocalServingHost, Port: wio.LocalServingPort, CertDir: wio.LocalServingCertDir,
		}),
	})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	if _, err := Setup(context.Background(), mgr, Options{LiveChecker: s.live, LiveCheckTimeout: liveTimeout, Heartbeats: mgr.GetClient()}); err != nil {
		_ = env.Stop()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.mgr, s.cancel = mgr, cancel
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	fail := func(err error) (*suiteEnv, error) { cancel(); _ = env.Stop(); return nil, err }
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return fail(fmt.Errorf("the manager's cache did not sync"))
	}
	started := mgr.GetWebhookServer().StartedChecker()
	deadline := time.Now().Add(30 * time.Second)
	for started(nil) != nil {
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("the webhook server did not start"))
		}
		time.Sleep(50 * time.Millisecond)
	}

	// alice rolls out; her client captures the warnings the API server
	// relays, as kubectl would print them.
	user, err := env.AddUser(envtest.User{Name: "alice", Groups: []string{"system:masters"}}, &rest.Config{QPS: 1000, Burst: 2000})
	if err != nil {
		return fail(err)
	}
	cfg := rest.CopyConfig(user.Config())
	s.warns = &warningRecorder{}
	cfg.WarningHandler = s.warns
	if s.alice, err = client.New(cfg, client.Options{Scheme: env.Scheme}); err != nil {
		return fail(err)
	}
	k, err := user.Kubectl()
	if err != nil {
		return fail(err)
	}
	s.kubectl = func(args ...string) (string, string, error) {
		out, errOut, err := k.Run(args...)
		return readAll(out), readAll(errOut), err
	}
	return s, nil
}

// warningRecorder keeps the warnings a client received.
type warningRecorder struct {
	mu   sync.Mutex
	list []string
}

func (w *warningRecorder) HandleWarningHeader(code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	w.mu.Lock()
	w.list = append(w.list, text)
	w.mu.Unlock()
}

// take returns and clears the warnings received so far.
func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.list
	w.list = nil
	return l
}

type liveFunc func(ctx context.Context, p *rgv1.ConsumerRetentionPolicy) (*rgv1.ProofStatus, error)

// switchLive is the suite's LiveChecker: each test sets the behaviour for
// its namespace. In a namespace without one, the brokers are as the
// policy's status last saw them: the live check answers its status proof,
// checked now (starts are always checked live), and fails without one.
type switchLive struct {
	mu          sync.Mutex
	byNamespace map[string]liveFunc
}

func (s *switchLive) set(ns string, f liveFunc) {
	s.mu.Lock()
	s.byNamespace[ns] = f
	s.mu.Unlock()
}

func (s *switchLive) Check(ctx context.Context, p *rgv1.ConsumerRetentionPolicy) (*rgv1.ProofStatus, error) {
	s.mu.Lock()
	f := s.byNamespace[p.Namespace]
	s.mu.Unlock()
	if f == nil {
		if p.Status.Proof == nil {
			return nil, fmt.Errorf("no live check in this test")
		}
		live := p.Status.Proof.DeepCopy()
		live.CheckedAt = metav1.Now()
		return live, nil
	}
	return f(ctx, p)
}

func ctxFor(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

// newNamespace creates a namespace unique to the test.
func (s *suiteEnv) newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := s.admin.Create(ctxFor(t), ns); err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	return ns.Name
}

// createPolicy creates seed 003's policy in ns (consumer clause on
// container settle, both variables) with the given status proof (nil: no
// status), checked age ago, and waits until the webhook's cache has it.
func (s *suiteEnv) createPolicy(t *testing.T, ns string, enforcement rgv1.Enforcement, proof *rgv1.ProofStatus, age time.Duration) *rgv1.ConsumerRetentionPolicy {
	t.Helper()
	p := settlePolicy(withEnforcement(enforcement), withConsumer("settle", resetEnv, commitEnv))
	p.ObjectMeta = metav1.ObjectMeta{Name: p.Name, Namespace: ns}
	if err := s.admin.Create(ctxFor(t), p); err != nil {
		t.Fatalf("creating the policy: %v", err)
	}
	if proof != nil {
		s.setProof(t, p, proof, age)
	} else {
		s.waitCached(t, p)
	}
	return p
}

// setProof writes status.proof as the reconciler would (the reconciler is
// not part of this suite), for the policy's current generation.
func (s *suiteEnv) setProof(t *testing.T, p *rgv1.ConsumerRetentionPolicy, proof *rgv1.ProofStatus, age time.Duration) {
	t.Helper()
	proof = proof.DeepCopy()
	proof.CheckedAt = metav1.NewTime(time.Now().Add(-age).Truncate(time.Second))
	p.Status.ObservedGeneration = p.Generation
	p.Status.Proof = proof
	if err := s.admin.Status().Update(ctxFor(t), p); err != nil {
		t.Fatalf("writing status.proof: %v", err)
	}
	s.waitCached(t, p)
}

// waitCached waits until the manager's cache serves p at its
// resourceVersion, so the webhook decides on what the test wrote.
func (s *suiteEnv) waitCached(t *testing.T, p *rgv1.ConsumerRetentionPolicy) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var got rgv1.ConsumerRetentionPolicy
		err := s.mgr.GetCache().Get(ctxFor(t), client.ObjectKeyFromObject(p), &got)
		if err == nil && got.ResourceVersion == p.ResourceVersion {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the webhook's cache did not catch up with policy %s/%s (err %v)", p.Namespace, p.Name, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// settleDeployment is seed 003's batch consumer: container settle with
// KAFKA_AUTO_OFFSET_RESET=none and KAFKA_ENABLE_AUTO_COMMIT=false, pod
// labels app=settle (what the policy selects) and name=<name> (what the
// Deployment selects).
func settleDeployment(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": "settle", "name": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"name": name}},
			Template: template(labels, container("settle", resetEnv, "none", commitEnv, "false")),
		},
	}
}

func settleStatefulSet(ns, name string, replicas int32) *appsv1.StatefulSet {
	labels := map[string]string{"app": "settle", "name": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"name": name}},
			Template: template(labels, container("settle", resetEnv, "none", commitEnv, "false")),
		},
	}
}

// mustDeny asserts err is the webhook's denial and returns its message.
func mustDeny(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		t.Fatal("the API server accepted the request; want the webhook to deny it")
	}
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `admission webhook "workloads.retentionguard.io" denied the request`) {
		t.Fatalf("want a denial by workloads.retentionguard.io, got: %v", err)
	}
	return err.Error()
}

func mustContain(t *testing.T, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("%q is missing from:\n%s", w, s)
		}
	}
}

func mustLack(t *testing.T, s string, unwanted ...string) {
	t.Helper()
	for _, u := range unwanted {
		if strings.Contains(s, u) {
			t.Errorf("%q should not be in:\n%s", u, s)
		}
	}
}

// policyEvents returns the notes of the events with reason on policy p.
func (s *suiteEnv) policyEvents(t *testing.T, p *rgv1.ConsumerRetentionPolicy, reason string) []string {
	t.Helper()
	var list eventsv1.EventList
	if err := s.admin.List(ctxFor(t), &list, client.InNamespace(p.Namespace)); err != nil {
		t.Fatalf("listing events: %v", err)
	}
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "ConsumerRetentionPolicy" && e.Regarding.Name == p.Name && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// waitEvent waits for an event with reason on p whose note contains want.
func (s *suiteEnv) waitEvent(t *testing.T, p *rgv1.ConsumerRetentionPolicy, reason, want string) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		for _, n := range s.policyEvents(t, p, reason) {
			if strings.Contains(n, want) {
				return n
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s event on policy %s mentioning %q (have %q)", reason, p.Name, want, s.policyEvents(t, p, reason))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
