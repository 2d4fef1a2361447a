// Command loadtest measures retention-guard's admission webhook over HTTPS
// on loopback, side by side with a no-op handler on the same server, so the
// difference shows what the guard adds.
//
// One controller-runtime webhook server (TLS, self-signed certificate)
// serves the guard at /validate-apps-v1-workloads and a handler that
// allows everything at /noop. The guard reads 10,000 policies across 1,000
// namespaces from a client-go Indexer with the namespace index, the store
// of the manager's policy informer, as the manager's guard does
// (webhook.Options.PolicyIndex; the informer cache itself is measured by
// BenchmarkHandle). Each request
// is a real AdmissionReview: an UPDATE of a Deployment that changes its pod
// template in a namespace with 10 policies, one of which selects it with a
// fresh Proven proof and a consumer clause the template satisfies — the
// common path of a guarded rollout (policy list, label match, freshness,
// environment check, decision).
//
// Two phases per handler: closed loop (as fast as -concurrency clients
// go), then open loop at -rate requests per second, latencies measured
// from each request's scheduled time. Each phase sends -requests, and
// keeps sending past them until it has lasted -min-phase (10 s by
// default: a phase under a second measures the start more than the
// steady pace), never longer than -max-phase; repeated -rounds times, alternating which handler goes first,
// and summarized by the median. -warmup rounds of the same phases go first,
// printed apart and left out of the median (a process's first round pays
// for growing its heap, connections and CPU caches). Each phase prints the
// whole process's allocations per request and garbage collections (client
// included: the difference between the handlers is the server's). Loopback
// only.
//
//	go run ./test/loadtest
//	go run ./test/loadtest -min-phase 0 -requests 10000   # exactly -requests per phase
//	go run ./test/loadtest -rate 0 -rounds 1 -cpuprofile cpu.out   # then: go tool pprof -top -focus webhook cpu.out
//	go run ./test/loadtest -rate 1000 -requests 10000 -concurrency 32
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/go-logr/logr"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/testca"
	"github.com/retentionguard/retention-guard/webhook"
)

func main() {
	var (
		namespaces  = flag.Int("namespaces", 1000, "namespaces holding policies")
		perNS       = flag.Int("policies-per-namespace", 10, "policies in each namespace")
		requests    = flag.Int("requests", 5000, "requests per handler per phase")
		concurrency = flag.Int("concurrency", 16, "concurrent clients in the closed-loop phase")
		rate        = flag.Float64("rate", 1000, "requests per second in the open-loop phase (0: skip it)")
		minPhase    = flag.Duration("min-phase", 10*time.Second, "each phase runs at least this long, repeating requests past -requests (0: exactly -requests)")
		maxPhase    = flag.Duration("max-phase", 30*time.Second, "upper bound on each phase")
		rounds      = flag.Int("rounds", 3, "rounds of all phases, alternating which handler goes first; the summary is the median")
		warmup      = flag.Int("warmup", 1, "rounds of all phases before the measured ones, printed apart, not in the median")
		cpuProfile  = flag.String("cpuprofile", "", "write a CPU profile of the whole run (client and server) to this file")
	)
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadtest:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "loadtest:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	log.SetLogger(logr.Discard())
	ctrl.SetLogger(logr.Discard())
	if *rounds < 1 || *warmup < 0 || *requests < 1 || *concurrency < 1 {
		fmt.Fprintln(os.Stderr, "loadtest: -rounds, -requests and -concurrency must be at least 1, -warmup at least 0")
		os.Exit(64)
	}
	if *minPhase < 0 || *maxPhase <= 0 || *minPhase > *maxPhase {
		fmt.Fprintf(os.Stderr, "loadtest: -min-phase %s, -max-phase %s: use 0 <= -min-phase <= -max-phase, -max-phase above 0\n", *minPhase, *maxPhase)
		os.Exit(64)
	}
	b := phaseBounds{requests: *requests, min: *minPhase, max: *maxPhase}
	if err := run(*namespaces, *perNS, b, *concurrency, *rate, *rounds, *warmup); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

const target = "bench-0500"

// phaseBounds bound each phase: at least requests and at least min long
// (requests repeated past -requests), never more than max long.
type phaseBounds struct {
	requests int
	min, max time.Duration
}

func run(namespaces, perNS int, b phaseBounds, concurrency int, rate float64, rounds, warmup int) error {
	dir, err := os.MkdirTemp("", "rg-loadtest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	caPEM, err := writeServingCert(dir)
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}

	reader, err := newIndexReader(namespaces, perNS)
	if err != nil {
		return err
	}
	guard := webhook.NewHandler(reader, nil, webhook.Options{PolicyIndex: reader})
	srv := ctrlwebhook.NewServer(ctrlwebhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir})
	srv.Register(webhook.Path, &ctrlwebhook.Admission{Handler: guard})
	srv.Register("/noop", &ctrlwebhook.Admission{Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		return admission.Allowed("")
	})})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		if err := srv.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "webhook server:", err)
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); srv.StartedChecker()(nil) != nil; {
		if time.Now().After(deadline) {
			return fmt.Errorf("the webhook server did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	httpc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		MaxIdleConnsPerHost: max(concurrency, 64),
		ForceAttemptHTTP2:   true,
	}}
	body, err := admissionReview()
	if err != nil {
		return err
	}
	base := fmt.Sprintf("https://127.0.0.1:%d", port)

	// The guard must actually allow this request through its full path.
	if allowed, msg, err := send(httpc, base+webhook.Path, body); err != nil || !allowed {
		return fmt.Errorf("the guard did not allow the sample rollout: %v %s", err, msg)
	}
	proto := "?"
	if resp, err := httpc.Post(base+"/noop", "application/json", bytes.NewReader(body)); err == nil {
		proto = resp.Proto
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	fmt.Printf("retention-guard webhook load test: %d policies in %d namespaces, HTTPS (%s, TLS, keep-alive) on loopback, GOMAXPROCS=%d, %d CPUs; client and server in one process\n",
		namespaces*perNS, namespaces, proto, runtime.GOMAXPROCS(0), runtime.NumCPU())
	fmt.Printf("request: UPDATE Deployment %s/svc-0 (pod template change), %d bytes; 10 policies in its namespace, 1 matching (Proven, consumer env ok)\n", target, len(body))
	fmt.Printf("each phase: %d requests, repeated until it has lasted %s, at most %s\n\n", b.requests, b.min, b.max)

	paths := []struct{ name, url string }{{"no-op", base + "/noop"}, {"guard", base + webhook.Path}}
	closedName := fmt.Sprintf("closed loop, %d clients", concurrency)
	openName := fmt.Sprintf("open loop at %.0f req/s", rate)
	all := map[string][]phaseResult{} // handler + phase → measured rounds
	fmt.Printf("%-7s %-8s %-28s %10s %8s %10s %10s %10s %11s %5s\n", "round", "handler", "phase", "requests", "seconds", "req/s", "p50", "p99", "allocs/req", "GCs")
	for round := 1 - warmup; round <= rounds; round++ {
		label := fmt.Sprint(round)
		if round < 1 {
			label = "warm-up"
		}
		order := paths
		if round%2 == 0 {
			order = []struct{ name, url string }{paths[1], paths[0]}
		}
		phase := func(name string, measure func(url string) (phaseResult, error)) error {
			for _, p := range order {
				before := memStats()
				r, err := measure(p.url)
				if err != nil {
					return err
				}
				r.handler, r.phase = p.name, name
				r.mem = memStats().since(before, r.n)
				r.print(label)
				if round >= 1 {
					all[r.handler+r.phase] = append(all[r.handler+r.phase], r)
				}
			}
			return nil
		}
		if err := phase(closedName, func(url string) (phaseResult, error) {
			return closedLoop(httpc, url, body, b, concurrency)
		}); err != nil {
			return err
		}
		if rate <= 0 {
			continue
		}
		if err := phase(openName, func(url string) (phaseResult, error) {
			return openLoop(httpc, url, body, b, rate)
		}); err != nil {
			return err
		}
	}
	fmt.Printf("\nmedian of %d rounds (warm-up rounds left out):\n", rounds)
	phases := []string{closedName}
	if rate > 0 {
		phases = append(phases, openName)
	}
	for _, ph := range phases {
		noop, g := median(all["no-op"+ph]), median(all["guard"+ph])
		noop.print("median")
		g.print("median")
		lo, hi := math.Inf(1), math.Inf(-1)
		for i := range all["guard"+ph] {
			r := all["guard"+ph][i].rps / all["no-op"+ph][i].rps
			lo, hi = min(lo, r), max(hi, r)
		}
		fmt.Printf("        guard vs no-op: throughput %.2fx (rounds %.2fx to %.2fx), p50 %+.2fms, p99 %+.2fms (%.2fx)\n",
			g.rps/noop.rps, lo, hi, ms(g.p50-noop.p50), ms(g.p99-noop.p99), float64(g.p99)/float64(noop.p99))
	}
	return nil
}

// memSnapshot is the process's allocation and GC counters.
type memSnapshot struct{ mallocs, numGC uint64 }

func memStats() memSnapshot {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return memSnapshot{mallocs: m.Mallocs, numGC: uint64(m.NumGC)}
}

// since is the allocations per request and the GCs between before and m.
func (m memSnapshot) since(before memSnapshot, n int) phaseMem {
	return phaseMem{allocsPerReq: float64(m.mallocs-before.mallocs) / float64(max(n, 1)), gcs: m.numGC - before.numGC}
}

type phaseMem struct {
	allocsPerReq float64
	gcs          uint64
}

// median takes each figure's median over rounds.
func median(rs []phaseResult) phaseResult {
	m := rs[0]
	pick := func(f func(phaseResult) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	m.rps = pick(func(r phaseResult) float64 { return r.rps })
	m.p50 = time.Duration(pick(func(r phaseResult) float64 { return float64(r.p50) }))
	m.p99 = time.Duration(pick(func(r phaseResult) float64 { return float64(r.p99) }))
	m.n = int(pick(func(r phaseResult) float64 { return float64(r.n) }))
	m.elapsed = time.Duration(pick(func(r phaseResult) float64 { return float64(r.elapsed) }))
	m.mem.allocsPerReq = pick(func(r phaseResult) float64 { return r.mem.allocsPerReq })
	m.mem.gcs = uint64(pick(func(r phaseResult) float64 { return float64(r.mem.gcs) }))
	m.errors = 0
	for _, r := range rs {
		m.errors += r.errors
	}
	return m
}

type phaseResult struct {
	handler, phase string
	n, errors      int
	elapsed        time.Duration
	rps            float64
	p50, p99       time.Duration
	mem            phaseMem
}

func (r phaseResult) print(label string) {
	fmt.Printf("%-7s %-8s %-28s %10d %8.1f %10.0f %9.2fms %9.2fms %11.0f %5d\n", label, r.handler, r.phase, r.n, r.elapsed.Seconds(), r.rps, ms(r.p50), ms(r.p99), r.mem.allocsPerReq, r.mem.gcs)
	if r.errors > 0 {
		fmt.Printf("        %d requests failed\n", r.errors)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func summarize(lat []time.Duration, errors int, elapsed time.Duration) phaseResult {
	slices.Sort(lat)
	r := phaseResult{n: len(lat), errors: errors, elapsed: elapsed, rps: float64(len(lat)) / elapsed.Seconds()}
	if len(lat) > 0 {
		r.p50, r.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	}
	return r
}

// closedLoop sends requests from c clients, each waiting for its answer:
// b.requests, and more until the phase has lasted b.min; none started
// after b.max.
func closedLoop(httpc *http.Client, url string, body []byte, b phaseBounds, c int) (phaseResult, error) {
	var next, errs atomic.Int64
	start := time.Now()
	deadline := start.Add(b.max)
	lats := make([][]time.Duration, c)
	var wg sync.WaitGroup
	for w := range c {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				now := time.Now()
				if now.After(deadline) || (i >= int64(b.requests) && now.Sub(start) >= b.min) {
					return
				}
				if allowed, _, err := send(httpc, url, body); err != nil || !allowed {
					errs.Add(1)
				}
				lats[w] = append(lats[w], time.Since(now))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	var lat []time.Duration
	for _, l := range lats {
		lat = append(lat, l...)
	}
	return summarize(lat, int(errs.Load()), elapsed), nil
}

// openRequests is how many requests an open-loop phase at rate schedules:
// b.requests, or as many as fill b.min.
func openRequests(b phaseBounds, rate float64) int {
	return max(b.requests, int(math.Ceil(rate*b.min.Seconds())))
}

// openLoop sends openRequests requests at a fixed rate whatever the
// answers' pace, none scheduled after b.max; latency counts from each
// request's scheduled time, so queueing shows.
func openLoop(httpc *http.Client, url string, body []byte, b phaseBounds, rate float64) (phaseResult, error) {
	interval := time.Duration(float64(time.Second) / rate)
	n := openRequests(b, rate)
	lat := make([]time.Duration, n)
	var errs atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	sent := 0
	for i := 0; i < n; i++ {
		at := start.Add(time.Duration(i) * interval)
		if at.Sub(start) > b.max {
			break
		}
		if d := time.Until(at); d > 0 {
			time.Sleep(d)
		}
		sent++
		wg.Go(func() {
			if allowed, _, err := send(httpc, url, body); err != nil || !allowed {
				errs.Add(1)
			}
			lat[i] = time.Since(at)
		})
	}
	wg.Wait()
	return summarize(lat[:sent], int(errs.Load()), time.Since(start)), nil
}

func send(httpc *http.Client, url string, body []byte) (allowed bool, msg string, err error) {
	resp, err := httpc.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return false, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, "", err
	}
	var rev admissionv1.AdmissionReview
	if err := json.Unmarshal(b, &rev); err != nil || rev.Response == nil {
		return false, string(b), fmt.Errorf("bad answer: %v", err)
	}
	if rev.Response.Result != nil {
		msg = rev.Response.Result.Message
	}
	return rev.Response.Allowed, msg, nil
}

// indexReader holds the policies in a client-go Indexer with the namespace
// index, the store of an informer (webhook.PolicyIndex, what the guard
// reads), and answers List like the informer cache does, with a new slice
// of the namespace's policies.
type indexReader struct {
	byNamespace map[string][]rgv1.ConsumerRetentionPolicy
	index       toolscache.Indexer
}

func (r *indexReader) HasSynced() bool                { return true }
func (r *indexReader) GetIndexer() toolscache.Indexer { return r.index }

func newIndexReader(namespaces, perNS int) (*indexReader, error) {
	r := &indexReader{byNamespace: make(map[string][]rgv1.ConsumerRetentionPolicy, namespaces),
		index: toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})}
	now := metav1.Now()
	for i := range namespaces {
		ns := fmt.Sprintf("bench-%04d", i)
		for j := range perNS {
			p := rgv1.ConsumerRetentionPolicy{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d", j), Namespace: ns,
					UID: types.UID(fmt.Sprintf("uid-%d-%d", i, j)), ResourceVersion: "1", Generation: 1},
				Spec: rgv1.ConsumerRetentionPolicySpec{
					GroupID:        fmt.Sprintf("group-%d-%d", i, j),
					Topics:         []string{"orders"},
					RecoveryWindow: metav1.Duration{Duration: 72 * time.Hour},
					Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("svc-%d", j)}},
					Enforcement:    rgv1.EnforcementDeny,
					CheckInterval:  &metav1.Duration{Duration: time.Hour},
					Consumer:       &rgv1.ConsumerClientSpec{Container: "app", OffsetResetEnv: "KAFKA_AUTO_OFFSET_RESET"},
					Kafka:          rgv1.PolicyKafka{BootstrapServers: []string{"kafka-0.kafka:9092"}},
				},
				Status: rgv1.ConsumerRetentionPolicyStatus{ObservedGeneration: 1, Proof: &rgv1.ProofStatus{
					Verdict: rgv1.VerdictProven, CheckedAt: now,
					PartitionSummary: rgv1.PartitionSummary{Total: 12, InRange: 12},
				}},
			}
			r.byNamespace[ns] = append(r.byNamespace[ns], p)
			if err := r.index.Add(p.DeepCopy()); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

func (r *indexReader) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	return fmt.Errorf("loadtest: no object %s", key)
}

func (r *indexReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	var lo client.ListOptions
	lo.ApplyOptions(opts)
	l, ok := list.(*rgv1.ConsumerRetentionPolicyList)
	if !ok {
		return fmt.Errorf("loadtest: cannot list %T", list)
	}
	l.Items = slices.Clone(r.byNamespace[lo.Namespace])
	return nil
}

// admissionReview is the request body: UPDATE of Deployment svc-0 that
// changes its image.
func admissionReview() ([]byte, error) {
	dep := func(image string) *appsv1.Deployment {
		replicas := int32(3)
		labels := map[string]string{"app": "svc-0", "name": "svc-0"}
		return &appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "svc-0", Namespace: target, Labels: labels, ResourceVersion: "12345", Generation: 4},
			Spec: appsv1.DeploymentSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"name": "svc-0"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{
						Name: "app", Image: image,
						Env: []corev1.EnvVar{
							{Name: "KAFKA_AUTO_OFFSET_RESET", Value: "none"},
							{Name: "KAFKA_BOOTSTRAP_SERVERS", Value: "kafka-0.kafka:9092"},
							{Name: "LOG_LEVEL", Value: "info"},
						},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")}},
					}}},
				},
			},
		}
	}
	obj, err := json.Marshal(dep("registry.example/svc:2"))
	if err != nil {
		return nil, err
	}
	old, err := json.Marshal(dep("registry.example/svc:1"))
	if err != nil {
		return nil, err
	}
	return json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "loadtest",
			Kind:      metav1.GroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}),
			Resource:  metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
			Namespace: target, Name: "svc-0",
			Operation: admissionv1.Update,
			UserInfo:  authnv1.UserInfo{Username: "loadtest"},
			Object:    k8sruntime.RawExtension{Raw: obj}, OldObject: k8sruntime.RawExtension{Raw: old},
		},
	})
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// writeServingCert writes tls.crt/tls.key for 127.0.0.1, signed by a CA
// made for this run, into dir and returns the CA certificate the client
// trusts.
func writeServingCert(dir string) ([]byte, error) {
	ca, err := testca.New("retention-guard-loadtest CA", time.Hour)
	if err != nil {
		return nil, err
	}
	return ca.PEM, ca.WriteServing(dir, "127.0.0.1")
}
