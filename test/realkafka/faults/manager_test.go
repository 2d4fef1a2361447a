package faults

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/controllers"
	"github.com/retentionguard/retention-guard/internal/coalesce"
	"github.com/retentionguard/retention-guard/internal/gather"
	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/kafka/apachekafka"
	"github.com/retentionguard/retention-guard/internal/resolve"
	"github.com/retentionguard/retention-guard/internal/testenv"
)

// manager is the reconciler as the manager command wires it (coalescer,
// resolver, ConsumerRetentionPolicy reconciler) on a real kube-apiserver,
// watching one namespace.
type manager struct {
	env *testenv.Env
	ns  string
}

func startManager(t *testing.T, allowed []string) *manager {
	t.Helper()
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Logf("stopping the control plane: %v", err)
		}
	})
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "faults-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}

	observer := kafka.NewObserver()
	coalescer := coalesce.New(observer, coalesce.Options{})
	allow, err := resolve.NewBootstrapAllowlist(allowed)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache: cache.Options{DefaultNamespaces: map[string]cache.Config{ns.Name: {}},
			DefaultTransform: cache.TransformStripManagedFields(), ByObject: controllers.CacheByObject(nil)},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(coalescer); err != nil {
		t.Fatal(err)
	}
	r := &controllers.ConsumerRetentionPolicyReconciler{
		Client: mgr.GetClient(),
		Gatherer: &gather.Gatherer{
			Resolver:  &resolve.ConnectionResolver{Metadata: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Allowlist: allow},
			Coalescer: coalescer,
			CronJobs:  mgr.GetClient(),
		},
		Recorder: mgr.GetEventRecorder(controllers.ControllerName),
	}
	mctx, cancel := context.WithCancel(ctx)
	if err := r.SetupWithManager(mctx, mgr); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("the manager ended with: %v", err)
			}
		case <-time.After(time.Minute):
			t.Errorf("the manager did not stop within a minute")
		}
		observer.Close()
	})
	return &manager{env: env, ns: ns.Name}
}

// proof is the policy's proof as the API server holds it (nil before the
// first).
func (m *manager) proof(t *testing.T, name string) *rgv1.ProofStatus {
	t.Helper()
	var p rgv1.ConsumerRetentionPolicy
	if err := m.env.Client.Get(context.Background(), client.ObjectKey{Namespace: m.ns, Name: name}, &p); err != nil {
		t.Fatal(err)
	}
	return p.Status.Proof
}

func describeStatus(p *rgv1.ProofStatus) string {
	if p == nil {
		return "no proof yet"
	}
	s := fmt.Sprintf("%s checked %s, partitions %+v", p.Verdict, p.CheckedAt.UTC().Format(time.RFC3339), p.PartitionSummary)
	for _, v := range p.Violations {
		s += fmt.Sprintf("; %s: %s", v.Reason, v.Message)
	}
	return s
}

// TestBrokerRestartedUnderManager crashes and restarts the broker that leads the
// group's partition and coordinates the group while the manager proves a
// policy on it every 10 s (seed 003's settlement consumer, its proof kept
// in status for admission). Every proof the manager writes meanwhile is
// honest: Unknown, or Proven on the group's real committed offset (a
// partition read as "no committed offset" would be a fresh group's false
// Proven), never Violated; and the policy is Proven again, checked after
// the broker is back, without anyone touching the manager.
func TestBrokerRestartedUnderManager(t *testing.T) {
	d := apachekafka.Newest(t)
	f := cluster(t, d)
	group, topic := "settle-under-manager", "settle-task-under-manager"
	coord := f.coordinator(t, group)
	f.createTopic(t, topic, append([]int32{coord}, f.others(coord)...), map[string]string{"min.insync.replicas": "2"})
	if err := f.produce(t, topic, 10, kgo.AllISRAcks()); err != nil {
		t.Fatal(err)
	}
	f.Commit(t, group, topic, 0, 6)

	m := startManager(t, f.b.Addrs())
	name := "settle"
	pol := &rgv1.ConsumerRetentionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: m.ns},
		Spec: rgv1.ConsumerRetentionPolicySpec{
			GroupID:        group,
			Topics:         []string{topic},
			RecoveryWindow: metav1.Duration{Duration: time.Hour},
			Selector:       metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			CheckInterval:  &metav1.Duration{Duration: 10 * time.Second},
			Kafka:          rgv1.PolicyKafka{BootstrapServers: f.b.Addrs()},
		},
	}
	if err := m.env.Client.Create(context.Background(), pol); err != nil {
		t.Fatal(err)
	}

	// Every proof the manager writes, from now until the end.
	var (
		mu   sync.Mutex
		seen []rgv1.ProofStatus
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var last time.Time
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			var p rgv1.ConsumerRetentionPolicy
			if err := m.env.Client.Get(context.Background(), client.ObjectKey{Namespace: m.ns, Name: name}, &p); err != nil || p.Status.Proof == nil {
				continue
			}
			if pr := p.Status.Proof; !pr.CheckedAt.Time.Equal(last) {
				last = pr.CheckedAt.Time
				mu.Lock()
				seen = append(seen, *pr.DeepCopy())
				mu.Unlock()
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	honestStatus := func(p rgv1.ProofStatus) bool {
		switch p.Verdict {
		case rgv1.VerdictUnknown:
			return true
		case rgv1.VerdictProven:
			s := p.PartitionSummary
			return s.Total == 1 && s.InRange == 1 && s.Missing == 0
		}
		return false
	}
	provenAfter := func(when string, after time.Time) {
		t.Helper()
		deadline := time.Now().Add(waitLimit + 30*time.Second)
		for time.Now().Before(deadline) {
			mu.Lock()
			for _, p := range seen {
				if !honestStatus(p) {
					mu.Unlock()
					t.Fatalf("%s: the manager wrote a dishonest proof: %s", when, describeStatus(&p))
				}
			}
			var ok bool
			if n := len(seen); n > 0 {
				ok = seen[n-1].Verdict == rgv1.VerdictProven && seen[n-1].CheckedAt.Time.After(after)
			}
			mu.Unlock()
			if ok {
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Fatalf("%s: the policy was not Proven again by a check after %s within %s; now: %s",
			when, after.UTC().Format(time.RFC3339), waitLimit+30*time.Second, describeStatus(m.proof(t, name)))
	}

	provenAfter("before the restart", time.Time{})
	stopped := time.Now()
	f.b.Kill(coord) // a crash: no controlled shutdown moves its leadership first
	// Down for more than a check interval: the manager checks at least
	// once with the broker gone.
	deadline := time.Now().Add(waitLimit)
	for {
		if p := m.proof(t, name); p != nil && p.CheckedAt.Time.After(stopped.Add(time.Second)) {
			t.Logf("checked with broker %d down: %s", coord, describeStatus(p))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the manager did not check the policy within %s of broker %d dying", waitLimit, coord)
		}
		time.Sleep(500 * time.Millisecond)
	}
	f.b.Restart(t, coord)
	back := time.Now()
	provenAfter(fmt.Sprintf("after broker %d restarted", coord), back)

	mu.Lock()
	defer mu.Unlock()
	var verdicts []rgv1.Verdict
	for _, p := range seen {
		verdicts = append(verdicts, p.Verdict)
	}
	t.Logf("Apache Kafka %s, broker %d (leader and coordinator) crashed and restarted under the manager: proofs written %v", d.Version, coord, verdicts)
}
