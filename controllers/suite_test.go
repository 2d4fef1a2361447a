package controllers

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/zap/zapcore"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/coalesce"
	"github.com/retentionguard/retention-guard/internal/cursor"
	"github.com/retentionguard/retention-guard/internal/freshness"
	"github.com/retentionguard/retention-guard/internal/gather"
	"github.com/retentionguard/retention-guard/internal/heartbeat"
	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/proof"
	"github.com/retentionguard/retention-guard/internal/resolve"
	"github.com/retentionguard/retention-guard/internal/testenv"
	"github.com/retentionguard/retention-guard/internal/workloadread"
)

// The integration tests run the reconciler in a real controller-runtime
// manager against a real kube-apiserver and etcd (envtest, started once in
// TestMain) and in-process kfake clusters. Each test gets its own
// namespace and its own manager watching only that namespace, stopped (and
// waited for) when the test ends, before TestMain stops the control plane.

var env *testenv.Env

func TestMain(m *testing.M) {
	code := testenv.Main(m, &env)
	pg.Stop() // started by the business cursor tests, on first use
	os.Exit(code)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newNamespace creates a namespace with a generated name.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "crp-"}}
	if err := env.Client.Create(testCtx(t), ns); err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	return ns.Name
}

// syncBuffer collects log output from many goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// requestCounter counts Kafka requests (kafka.WithRequestHook) by API.
type requestCounter struct {
	mu    sync.Mutex
	byAPI map[string]int
	all   int
}

func (c *requestCounter) hook(api string, took time.Duration, err error) {
	c.mu.Lock()
	if c.byAPI == nil {
		c.byAPI = make(map[string]int)
	}
	c.byAPI[api]++
	c.all++
	c.mu.Unlock()
	ObserveKafkaRequest(api, took, err)
}

// total is every request counted, taken or not.
func (c *requestCounter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.all
}

// take returns the counts since the last take, and their total.
func (c *requestCounter) take() (map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out, total := c.byAPI, 0
	for _, n := range out {
		total += n
	}
	c.byAPI = nil
	return out, total
}

// writeCounter counts the manager's API writes (every request but GET) by
// method and resource, e.g. "PATCH consumerretentionpolicies/status".
type writeCounter struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *writeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodGet {
			c.mu.Lock()
			if c.m == nil {
				c.m = make(map[string]int)
			}
			c.m[req.Method+" "+apiResource(req.URL.Path)]++
			c.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

// take returns the counts since the last take.
func (c *writeCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.m
	c.m = nil
	if out == nil {
		out = map[string]int{}
	}
	return out
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// apiResource is the resource (and subresource) an API path names:
// /apis/g/v/namespaces/ns/leases/x → leases, …/policies/x/status →
// policies/status.
func apiResource(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	i := slices.Index(parts, "namespaces")
	switch {
	case i >= 0 && i+2 < len(parts):
		parts = parts[i+2:]
	case len(parts) > 2:
		parts = parts[len(parts)-1:]
	}
	if len(parts) >= 3 {
		return parts[0] + "/" + parts[2]
	}
	return parts[0]
}

// countingObserver counts observation passes, the targets they carry and,
// when requests is set, the Kafka requests of each pass (passes of one
// connection never overlap; a test with live checks must not use
// perPass).
type countingObserver struct {
	*kafka.Observer
	passes   atomic.Int64
	targets  atomic.Int64
	requests *requestCounter

	mu      sync.Mutex
	perPass []int
}

func (o *countingObserver) ObserveCluster(ctx context.Context, conn kafka.Connection, req kafka.ClusterRequest) kafka.ClusterObservation {
	o.passes.Add(1)
	o.targets.Add(int64(len(req.Targets)))
	before := o.requests.total()
	out := o.Observer.ObserveCluster(ctx, conn, req)
	n := o.requests.total() - before
	o.mu.Lock()
	o.perPass = append(o.perPass, n)
	o.mu.Unlock()
	return out
}

// takePerPass returns the Kafka requests of each pass since the last take.
func (o *countingObserver) takePerPass() []int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := o.perPass
	o.perPass = nil
	return out
}

type harnessOptions struct {
	namespace string // default: a new one
	// managerNamespace holds ClusterKafkaConnections' Secrets; extra are
	// more namespaces the manager watches. With either, the connection
	// reconcilers run too.
	managerNamespace string
	extra            []string
	allow            []string // --allowed-bootstrap-servers; default 127.0.0.1:*
	cursorHosts      []string // --allowed-cursor-hosts; default 127.0.0.1:*
	interval         time.Duration
	cursorTimeout    time.Duration // a cursor read's statement and connect timeouts; default 2s
	logLevel         int           // zap verbosity: 0 info, 5 everything (franz-go debug included)
	// noHeartbeats runs without heartbeat Leases: every check writes the
	// status (a manager that has no namespace for its Leases).
	noHeartbeats bool
	// workloads maps groups to workloads (the connections' unguarded
	// groups, the policies' unselected consumers), reading only the harness's namespace:
	// kfake sees every test's consumers at 127.0.0.1.
	workloads bool
}

// harness is a running manager with the reconciler, watching one
// namespace.
type harness struct {
	ns        string
	requests  *requestCounter
	writes    *writeCounter
	observer  *countingObserver
	coalescer *coalesce.Coalescer
	resolver  *resolve.ConnectionResolver
	// gatherer is the reconciler's, for a live check that shares it as
	// the manager's does.
	gatherer *gather.Gatherer
	logs     *syncBuffer
	stop     func()
}

func startManager(t *testing.T, o harnessOptions) *harness {
	t.Helper()
	g := NewWithT(t)
	h := &harness{ns: o.namespace, requests: &requestCounter{}, logs: &syncBuffer{}}
	if h.ns == "" {
		h.ns = newNamespace(t)
	}
	if o.interval == 0 {
		o.interval = 2 * time.Second
	}
	logger := zap.New(zap.WriteTo(h.logs), zap.Level(zapcore.Level(-o.logLevel)))

	h.observer = &countingObserver{requests: h.requests, Observer: kafka.NewObserver(
		kafka.WithLogger(logger.WithName("kafka")),
		kafka.WithRequestHook(h.requests.hook),
		kafka.WithTimeouts(time.Second, 2*time.Second, 2*time.Second),
	)}
	namespaces := map[string]cache.Config{h.ns: {}}
	for _, ns := range append([]string{o.managerNamespace}, o.extra...) {
		if ns != "" {
			namespaces[ns] = cache.Config{}
		}
	}
	h.coalescer = coalesce.New(h.observer, coalesce.Options{
		PassTimeout: 6 * time.Second,
		Linger:      50 * time.Millisecond,
		Logger:      logger.WithName("observations"),
	})
	// The tests' brokers and databases listen on loopback: allowed unless
	// a test says otherwise (an empty allowlist allows nothing).
	if o.allow == nil {
		o.allow = []string{"127.0.0.1:*"}
	}
	if o.cursorHosts == nil {
		o.cursorHosts = []string{"127.0.0.1:*"}
	}
	allow, err := resolve.NewBootstrapAllowlist(o.allow)
	g.Expect(err).NotTo(HaveOccurred())
	cursorHosts, err := resolve.NewCursorHostAllowlist(o.cursorHosts)
	g.Expect(err).NotTo(HaveOccurred())
	if o.cursorTimeout == 0 {
		o.cursorTimeout = 2 * time.Second
	}
	cursors := cursor.NewReader(cursor.WithStatementTimeout(o.cursorTimeout), cursor.WithConnectTimeout(o.cursorTimeout),
		cursor.WithLogger(logger.WithName("cursor")))

	cfg := rest.CopyConfig(env.Config)
	h.writes = &writeCounter{}
	cfg.Wrap(h.writes.wrap)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 env.Scheme,
		Logger:                 logger,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache: cache.Options{DefaultNamespaces: namespaces,
			// As the manager command sets it: only what decisions read.
			DefaultTransform: cache.TransformStripManagedFields(), ByObject: CacheByObject(nil)},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mgr.Add(h.coalescer)).To(Succeed())
	resolver := &resolve.ConnectionResolver{Metadata: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Allowlist: allow,
		ManagerNamespace: o.managerNamespace, Cursors: cursors, CursorHosts: cursorHosts}
	h.resolver = resolver
	h.gatherer = &gather.Gatherer{Resolver: resolver, Coalescer: h.coalescer, CronJobs: mgr.GetClient()}
	if o.workloads {
		h.gatherer.Workloads = &workloadread.Reader{Reader: mgr.GetAPIReader(), Namespaces: []string{h.ns}}
	}
	r := &ConsumerRetentionPolicyReconciler{
		Client:           mgr.GetClient(),
		Gatherer:         h.gatherer,
		Recorder:         mgr.GetEventRecorder(ControllerName),
		intervalOverride: o.interval,
	}
	if !o.noHeartbeats {
		// As the manager runs: heartbeat Leases (here in the test's
		// namespace) confirm unchanged proofs.
		// A tick well under the test intervals: a Lease is written only
		// when what it says moves, however often it is looked at.
		r.Heartbeats = &heartbeat.Leases{Client: mgr.GetClient(), Namespace: h.ns, Logger: logger.WithName("heartbeat"),
			Tick: 200 * time.Millisecond}
		g.Expect(mgr.Add(r.Heartbeats)).To(Succeed())
	}

	ctx, cancel := context.WithCancel(context.Background())
	g.Expect(r.SetupWithManager(ctx, mgr)).To(Succeed())
	if o.managerNamespace != "" || len(o.extra) > 0 {
		for _, kind := range []string{rgv1.KindClusterKafkaConnection, rgv1.KindKafkaConnection} {
			cr := &KafkaConnectionReconciler{Resolver: resolver, Coalescer: h.coalescer,
				Recorder: mgr.GetEventRecorder(ControllerName), Kind: kind, intervalOverride: o.interval}
			if o.workloads {
				cr.Workloads = &workloadread.Reader{Reader: mgr.GetAPIReader(), Namespaces: []string{h.ns}}
			}
			g.Expect(cr.SetupWithManager(mgr)).To(Succeed())
		}
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()

	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("the manager ended with: %v", err)
				}
			case <-time.After(time.Minute):
				t.Errorf("the manager did not stop within a minute")
			}
			h.observer.Close()
			cursors.Close()
		})
	}
	t.Cleanup(h.stop)
	return h
}

// policyOptions shape a test policy.
type policyOptions struct {
	servers  []string
	window   time.Duration
	sasl     string // Secret name, SCRAM-SHA-512
	tls      string // Secret name
	interval time.Duration
	// offsetsTopicOff sets spec.kafka.readOffsetsTopic to false (the
	// default reads exact commit times from __consumer_offsets).
	offsetsTopicOff bool
	// cursor: a business cursor (spec.cursor).
	cursor *rgv1.CursorSpec
}

func createPolicy(t *testing.T, ns, name, group string, topics []string, o policyOptions) *rgv1.ConsumerRetentionPolicy {
	t.Helper()
	if o.window == 0 {
		o.window = 72 * time.Hour
	}
	if o.interval == 0 {
		o.interval = 10 * time.Second
	}
	p := &rgv1.ConsumerRetentionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: rgv1.ConsumerRetentionPolicySpec{
			GroupID:        group,
			Topics:         topics,
			RecoveryWindow: metav1.Duration{Duration: o.window},
			Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			CheckInterval:  &metav1.Duration{Duration: o.interval},
			Kafka:          rgv1.PolicyKafka{BootstrapServers: o.servers},
		},
	}
	if o.sasl != "" {
		p.Spec.Kafka.SASL = &rgv1.KafkaSASL{Mechanism: rgv1.SASLScramSHA512, SecretRef: &rgv1.SecretReference{Name: o.sasl}}
	}
	if o.tls != "" {
		p.Spec.Kafka.TLS = &rgv1.KafkaTLS{SecretRef: rgv1.SecretReference{Name: o.tls}}
	}
	if o.offsetsTopicOff {
		p.Spec.Kafka.ReadOffsetsTopic = ptr.To(false)
	}
	p.Spec.Cursor = o.cursor
	if err := env.Client.Create(testCtx(t), p); err != nil {
		t.Fatalf("creating policy %s: %v", name, err)
	}
	return p
}

// getPolicy reads a policy fresh from the API server.
func getPolicy(g Gomega, ns, name string) *rgv1.ConsumerRetentionPolicy {
	p := &rgv1.ConsumerRetentionPolicy{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p)).To(Succeed())
	return p
}

// heartbeatRenewed is the renewTime of the heartbeat Lease the policy's
// status names, for Eventually.
func heartbeatRenewed(p *rgv1.ConsumerRetentionPolicy) func(g Gomega) time.Time {
	return func(g Gomega) time.Time {
		ref := p.Status.Heartbeat
		g.Expect(ref).NotTo(BeNil(), "the status names no heartbeat")
		var l coordinationv1.Lease
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &l)).To(Succeed())
		g.Expect(l.Spec.RenewTime).NotTo(BeNil())
		// The Lease says, for people, the window the webhook's freshness
		// rule gives proofs of its checkInterval.
		g.Expect(l.Spec.LeaseDurationSeconds).To(HaveValue(BeEquivalentTo(int32(freshness.Window(heartbeat.Interval(&l)).Seconds()))))
		return l.Spec.RenewTime.Time
	}
}

// verdictOf is the policy's verdict and Ready condition, for Eventually.
func verdictOf(ns, name string) func(g Gomega) rgv1.Verdict {
	return func(g Gomega) rgv1.Verdict {
		p := getPolicy(g, ns, name)
		if p.Status.Proof == nil {
			return ""
		}
		return p.Status.Proof.Verdict
	}
}

func readyReason(g Gomega, p *rgv1.ConsumerRetentionPolicy) string {
	c := condition(p.Status, proof.ClauseReady)
	g.Expect(c).NotTo(BeNil())
	return c.Reason
}

// policyEvents lists the events.k8s.io events regarding a policy, oldest
// first.
func policyEvents(g Gomega, ns, name string) []eventsv1.Event {
	var list eventsv1.EventList
	g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == "ConsumerRetentionPolicy" && e.Regarding.Name == name {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b eventsv1.Event) int { return a.EventTime.Compare(b.EventTime.Time) })
	return out
}

func eventReasons(evs []eventsv1.Event) []string {
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		out = append(out, e.Reason)
	}
	return out
}

// eventWith returns the policy's event with the given reason, for
// Eventually.
func eventWith(ns, name, reason string) func(g Gomega) *eventsv1.Event {
	return func(g Gomega) *eventsv1.Event {
		for _, e := range policyEvents(g, ns, name) {
			if e.Reason == reason {
				return &e
			}
		}
		return nil
	}
}

// metricValue returns the value of the series of a gauge with exactly the
// given labels, and whether it exists.
func metricValue(name string, labels map[string]string) (float64, bool) {
	for _, m := range seriesOf(name, labels) {
		if len(m.GetLabel()) == len(labels) {
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// gauge returns the value of a gauge series that must exist.
func gauge(g Gomega, name string, labels map[string]string) float64 {
	v, ok := metricValue(name, labels)
	g.Expect(ok).To(BeTrue(), "no series %s%v", name, labels)
	return v
}

// scrape is what the manager's /metrics serves, parsed as Prometheus
// parses it: controller-runtime's registry and every policy's series.
func scrape() map[string]*dto.MetricFamily {
	rec := httptest.NewRecorder()
	metricsHandler(metrics.Registry, metricsState).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		panic(fmt.Sprintf("/metrics: %d %s", rec.Code, rec.Body))
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		panic(err)
	}
	return families
}

// seriesOf returns the series of a metric whose labels include labels.
func seriesOf(name string, labels map[string]string) []*dto.Metric {
	var out []*dto.Metric
	for _, f := range scrape() {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			have := make(map[string]string)
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue next
				}
			}
			out = append(out, m)
		}
	}
	return out
}

// kstatusOf computes the policy's kstatus from its unstructured form, as
// kpt, Flux and Argo CD's health checks do.
func kstatusOf(g Gomega, ns, name string) *status.Result {
	p := getPolicy(g, ns, name)
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	g.Expect(err).NotTo(HaveOccurred())
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(rgv1.GroupVersion.WithKind("ConsumerRetentionPolicy"))
	res, err := status.Compute(u)
	g.Expect(err).NotTo(HaveOccurred())
	return res
}

// mustNotContain fails when any of the texts holds secret.
func mustNotContain(t *testing.T, secret string, texts map[string]string) {
	t.Helper()
	for what, text := range texts {
		if strings.Contains(text, secret) {
			t.Errorf("the password appears in %s", what)
		}
	}
}
