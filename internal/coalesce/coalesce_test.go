package coalesce

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// fakeObserver records the passes it is asked for. With gate set, each
// Observe waits for a value on gate (or its context) before answering.
type fakeObserver struct {
	mu        sync.Mutex
	passes    [][]kafka.Target
	conns     []string
	forgotten []string
	gate      chan struct{}
	started   chan struct{}
	discovers []*kafka.Discovery
}

func newFakeObserver() *fakeObserver {
	return &fakeObserver{started: make(chan struct{}, 100)}
}

func (f *fakeObserver) ObserveCluster(ctx context.Context, conn kafka.Connection, req kafka.ClusterRequest) kafka.ClusterObservation {
	f.mu.Lock()
	f.discovers = append(f.discovers, req.Discover)
	f.mu.Unlock()
	co := kafka.ClusterObservation{ObservedAt: time.Now(), Observations: f.Observe(ctx, conn, req.Targets), Brokers: []int32{1}}
	if req.Discover != nil {
		for _, g := range []string{"billing", "shipping", "audit"} {
			if req.Discover.Match == nil || req.Discover.Match(g) {
				co.Discovered = append(co.Discovered, kafka.DiscoveredGroup{Group: g})
			}
		}
	}
	return co
}

func (f *fakeObserver) Observe(ctx context.Context, conn kafka.Connection, targets []kafka.Target) []proof.Observation {
	f.mu.Lock()
	f.passes = append(f.passes, targets)
	f.conns = append(f.conns, conn.Key())
	gate := f.gate
	f.mu.Unlock()
	f.started <- struct{}{}
	var failures []proof.Failure
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			failures = []proof.Failure{{Reason: proof.ReasonBrokerUnreachable, Partition: -1, Message: ctx.Err().Error()}}
		}
	}
	out := make([]proof.Observation, len(targets))
	for i, t := range targets {
		out[i] = proof.Observation{ObservedAt: time.Now(), Group: proof.GroupObservation{ID: t.Group}, Failures: failures}
	}
	return out
}

func (f *fakeObserver) Forget(conn kafka.Connection) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forgotten = append(f.forgotten, conn.Key())
}

func (f *fakeObserver) passCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.passes)
}

func (f *fakeObserver) pass(i int) []kafka.Target {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.passes[i]
}

func (f *fakeObserver) forgottenKeys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.forgotten...)
}

// notifications collects the owners a Coalescer notifies.
type notifications struct {
	mu    sync.Mutex
	count map[types.NamespacedName]int
}

func (n *notifications) add(o types.NamespacedName) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.count[o]++
}

func (n *notifications) of(o types.NamespacedName) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.count[o]
}

func newTestCoalescer(t *testing.T, f *fakeObserver, opts Options) (*Coalescer, *notifications) {
	if opts.Linger == 0 {
		opts.Linger = 20 * time.Millisecond
	}
	c := New(f, opts)
	n := &notifications{count: make(map[types.NamespacedName]int)}
	c.SetNotify(n.add)
	t.Cleanup(c.Close)
	return c, n
}

func owner(i int) types.NamespacedName {
	return types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("policy-%d", i)}
}

func target(i int) kafka.Target {
	return kafka.Target{Group: fmt.Sprintf("group-%d", i), Topics: []string{"orders", "payments"}}
}

var plainConn = kafka.Connection{BootstrapServers: []string{"kafka-0:9092", "kafka-1:9092"}}

func TestCoalescerOnePassForManyPolicies(t *testing.T) {
	g := NewWithT(t)
	f := newFakeObserver()
	c, n := newTestCoalescer(t, f, Options{})

	const policies = 50
	for i := range policies {
		_, _, fresh := c.Request(owner(i), plainConn, target(i), time.Minute)
		g.Expect(fresh).To(BeFalse(), "nothing observed yet")
	}
	for i := range policies {
		g.Eventually(func() int { return n.of(owner(i)) }).Should(Equal(1), "policy %d is notified", i)
	}
	g.Expect(f.passCount()).To(Equal(1), "one pass served every policy")
	g.Expect(f.pass(0)).To(HaveLen(policies))

	for i := range policies {
		obs, _, fresh := c.Request(owner(i), plainConn, target(i), time.Minute)
		g.Expect(fresh).To(BeTrue())
		g.Expect(obs.Group.ID).To(Equal(target(i).Group), "each policy gets its own target's observation")
	}
	g.Expect(f.passCount()).To(Equal(1), "fresh results are served from the cache")

	// Stale for one policy: one new pass, again for every target.
	_, _, fresh := c.Request(owner(7), plainConn, target(7), 0)
	g.Expect(fresh).To(BeFalse())
	g.Eventually(func() int { return n.of(owner(7)) }).Should(Equal(2))
	g.Expect(f.passCount()).To(Equal(2))
	g.Expect(f.pass(1)).To(HaveLen(policies))
}

func TestCoalescerSingleFlight(t *testing.T) {
	g := NewWithT(t)
	f := newFakeObserver()
	f.gate = make(chan struct{})
	c, n := newTestCoalescer(t, f, Options{})

	c.Request(owner(1), plainConn, target(1), 0)
	g.Eventually(f.started).Should(Receive(), "the first pass starts after the linger")

	// While it runs: requests for its target join it, whatever their age
	// limit; a policy registered since waits for one pass after it.
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			c.Request(owner(1), plainConn, target(1), 0)
			c.Request(owner(2), plainConn, target(2), 0)
			c.Request(owner(3), plainConn, target(3), 0)
		})
	}
	wg.Wait()
	g.Consistently(f.started, 100*time.Millisecond).ShouldNot(Receive(), "no second pass while one runs")

	f.gate <- struct{}{}
	g.Eventually(func() int { return n.of(owner(1)) }).Should(Equal(1))
	g.Eventually(f.started).Should(Receive(), "the queued pass starts as soon as the first ends")
	g.Expect(f.pass(1)).To(ConsistOf(target(1), target(2), target(3)))
	f.gate <- struct{}{}
	g.Eventually(func() int { return n.of(owner(2)) }).Should(Equal(1))
	g.Expect(n.of(owner(3))).To(Equal(1))
	g.Consistently(f.started, 100*time.Millisecond).ShouldNot(Receive())
	g.Expect(f.passCount()).To(Equal(2), "21 requests of 3 policies: two passes")
}

func TestCoalescerSeparatesCredentialsAndForgetsUnusedConnections(t *testing.T) {
	g := NewWithT(t)
	f := newFakeObserver()
	c, n := newTestCoalescer(t, f, Options{})

	alice := kafka.Connection{BootstrapServers: plainConn.BootstrapServers,
		SASL: &kafka.SASL{Mechanism: "SCRAM-SHA-512", Username: "alice", Password: "one"}}
	rotated := alice
	rotated.SASL = &kafka.SASL{Mechanism: "SCRAM-SHA-512", Username: "alice", Password: "two"}

	c.Request(owner(1), plainConn, target(1), time.Minute)
	c.Request(owner(2), alice, target(2), time.Minute)
	g.Eventually(func() int { return n.of(owner(1)) + n.of(owner(2)) }).Should(Equal(2))
	g.Expect(f.passCount()).To(Equal(2), "different credentials never share an observation")

	// A rotated password moves the policy to a new connection: the client
	// holding the old password is closed.
	c.Request(owner(2), rotated, target(2), time.Minute)
	g.Expect(f.forgottenKeys()).To(ConsistOf(alice.Key()))
	g.Eventually(func() int { return n.of(owner(2)) }).Should(Equal(2))

	// The last policy of a connection goes: its client is closed too.
	c.Unregister(owner(1))
	g.Expect(f.forgottenKeys()).To(ConsistOf(alice.Key(), plainConn.Key()))
	c.Unregister(owner(1)) // twice is harmless
	g.Expect(f.forgottenKeys()).To(HaveLen(2))
}

func TestCoalescerObserveNow(t *testing.T) {
	g := NewWithT(t)
	f := newFakeObserver()
	f.gate = make(chan struct{})
	c, n := newTestCoalescer(t, f, Options{})

	// A registered policy, observed once.
	c.Request(owner(1), plainConn, target(1), time.Minute)
	g.Eventually(f.started).Should(Receive())
	f.gate <- struct{}{}
	g.Eventually(func() int { return n.of(owner(1)) }).Should(Equal(1))

	// Concurrent live checks of the same target share one pass.
	results := make(chan error, 5)
	for range 5 {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			obs, err := c.ObserveNow(ctx, plainConn, target(1))
			if err == nil && obs.Group.ID != target(1).Group {
				err = fmt.Errorf("observed %s", obs.Group.ID)
			}
			results <- err
		}()
	}
	g.Eventually(f.started).Should(Receive())
	g.Consistently(f.started, 50*time.Millisecond).ShouldNot(Receive(), "one live pass for five callers")
	g.Expect(f.pass(1)).To(Equal([]kafka.Target{normalizeTarget(target(1))}), "a live check observes only its target")
	f.gate <- struct{}{}
	for range 5 {
		g.Eventually(results).Should(Receive(BeNil()))
	}
	g.Eventually(func() int { return n.of(owner(1)) }).Should(Equal(2), "the policy sharing the target learns what the webhook saw")
	_, _, fresh := c.Request(owner(1), plainConn, target(1), time.Minute)
	g.Expect(fresh).To(BeTrue())

	// The caller's deadline bounds the wait.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.ObserveNow(ctx, plainConn, target(9))
	g.Expect(err).To(MatchError(context.DeadlineExceeded))
	g.Expect(time.Since(start)).To(BeNumerically("<", 2*time.Second))
	f.gate <- struct{}{} // let the abandoned pass finish
}

func TestCoalescerCloseCancelsPasses(t *testing.T) {
	g := NewWithT(t)
	f := newFakeObserver()
	f.gate = make(chan struct{}) // never opened: only the context ends the pass
	c, _ := newTestCoalescer(t, f, Options{PassTimeout: time.Hour})
	c.Request(owner(1), plainConn, target(1), 0)
	g.Eventually(f.started).Should(Receive())

	closed := make(chan struct{})
	go func() { c.Close(); close(closed) }()
	g.Eventually(closed).Should(BeClosed(), "Close cancels the pass in flight and returns")
	_, _, fresh := c.Request(owner(1), plainConn, target(1), time.Hour)
	g.Expect(fresh).To(BeFalse())
	_, err := c.ObserveNow(context.Background(), plainConn, target(1))
	g.Expect(err).To(MatchError(ErrCoalescerClosed))
}

// A connection watching its cluster rides the policies' pass: one pass
// carries every policy target and the discovery the connection asks for,
// and the connection is notified and then served its view from the cache.
// Two connections on the same cluster with different group patterns share
// a pass whose discovery covers both.
func TestCoalescerConnectionsShareThePoliciesPass(t *testing.T) {
	g := NewWithT(t)
	f := newFakeObserver()
	c, n := newTestCoalescer(t, f, Options{})
	var mu sync.Mutex
	notified := map[ConnectionOwner]int{}
	c.SetClusterNotify(rgv1.KindClusterKafkaConnection, func(o ConnectionOwner) {
		mu.Lock()
		defer mu.Unlock()
		notified[o]++
	})
	prod := ConnectionOwner{Kind: rgv1.KindClusterKafkaConnection, Name: "prod"}
	audit := ConnectionOwner{Kind: rgv1.KindClusterKafkaConnection, Name: "audit"}
	for i := range 3 {
		c.Request(owner(i), plainConn, target(i), time.Minute)
	}
	_, _, fresh := c.RequestCluster(prod, plainConn, &kafka.Discovery{Match: func(g string) bool { return g == "billing" }}, time.Minute, time.Time{})
	g.Expect(fresh).To(BeFalse())
	_, _, fresh = c.RequestCluster(audit, plainConn, &kafka.Discovery{Match: func(g string) bool { return g == "audit" }}, time.Minute, time.Time{})
	g.Expect(fresh).To(BeFalse())
	g.Eventually(func() int { mu.Lock(); defer mu.Unlock(); return notified[prod] + notified[audit] }).Should(Equal(2))
	for i := range 3 {
		g.Eventually(func() int { return n.of(owner(i)) }).Should(Equal(1))
	}
	g.Expect(f.passCount()).To(Equal(1), "one pass for three policies and two connections")
	g.Expect(f.pass(0)).To(HaveLen(3))
	co, _, fresh := c.RequestCluster(prod, plainConn, &kafka.Discovery{}, time.Minute, time.Time{})
	g.Expect(fresh).To(BeTrue())
	var groups []string
	for _, d := range co.Discovered {
		groups = append(groups, d.Group)
	}
	g.Expect(groups).To(ConsistOf("billing", "audit"), "the pass discovered what both connections match")
	g.Expect(co.Observations).To(BeNil(), "a connection's view carries no policy observations")

	// requestedAt: a view that started before the request is not fresh.
	_, _, fresh = c.RequestCluster(prod, plainConn, nil, time.Minute, time.Now().Add(time.Second))
	g.Expect(fresh).To(BeFalse())
	g.Eventually(f.passCount).Should(Equal(2))

	// Unregistered everywhere: the connection's client is forgotten.
	for i := range 3 {
		c.Unregister(owner(i))
	}
	c.UnregisterCluster(prod)
	g.Expect(f.forgottenKeys()).To(BeEmpty(), "audit still watches")
	c.UnregisterCluster(audit)
	g.Eventually(f.forgottenKeys).Should(ContainElement(plainConn.Key()))
}

// orderedObserver holds each pass until the test releases it, one by one,
// so passes can end in another order than they began. Each observation is
// dated when its pass began, as kafka.Observer dates them.
type orderedObserver struct {
	mu      sync.Mutex
	release []chan struct{}
	started chan int
}

func (f *orderedObserver) ObserveCluster(ctx context.Context, _ kafka.Connection, req kafka.ClusterRequest) kafka.ClusterObservation {
	at := time.Now()
	ch := make(chan struct{})
	f.mu.Lock()
	f.release = append(f.release, ch)
	i := len(f.release) - 1
	f.mu.Unlock()
	f.started <- i
	select {
	case <-ch:
	case <-ctx.Done():
	}
	co := kafka.ClusterObservation{ObservedAt: at, Brokers: []int32{1}}
	for _, t := range req.Targets {
		co.Observations = append(co.Observations, proof.Observation{ObservedAt: at, Group: proof.GroupObservation{ID: t.Group}})
	}
	return co
}

func (f *orderedObserver) Forget(kafka.Connection) {}

func (f *orderedObserver) done(i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.release[i])
}

// A live check at a start (ObserveNow) runs beside the periodic pass and
// can end first. The periodic pass, begun earlier, then overwrote the
// newer live observation: the cached observation moved back in time, and
// what the webhook saw last was replaced by older facts. The cache keeps
// the observation that began last.
func TestCoalescerKeepsTheNewerObservation(t *testing.T) {
	g := NewWithT(t)
	f := &orderedObserver{started: make(chan int, 10)}
	c := New(f, Options{Linger: 20 * time.Millisecond})
	n := &notifications{count: make(map[types.NamespacedName]int)}
	c.SetNotify(n.add)
	t.Cleanup(c.Close)

	c.Request(owner(1), plainConn, target(1), time.Minute)
	g.Eventually(f.started).Should(Receive(Equal(0)))
	time.Sleep(5 * time.Millisecond) // the live pass begins strictly later
	live := make(chan proof.Observation, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		obs, _ := c.ObserveNow(ctx, plainConn, target(1))
		live <- obs
	}()
	g.Eventually(f.started).Should(Receive(Equal(1)))
	f.done(1)
	var liveObs proof.Observation
	g.Eventually(live).Should(Receive(&liveObs))
	f.done(0)
	g.Eventually(func() int { return n.of(owner(1)) }).Should(Equal(2), "the live pass and the periodic pass both notify")

	obs, _, fresh := c.Request(owner(1), plainConn, target(1), time.Minute)
	g.Expect(fresh).To(BeTrue())
	g.Expect(obs.ObservedAt).To(Equal(liveObs.ObservedAt), "the cached observation is the one that began last (the live check's)")
}

// On a replica that does not lead, no reconciler registers anything: the
// webhook's live checks are the only users of a connection. Concurrent
// checks of one target still share one pass, the pooled client is kept
// for the next check (nothing registered was unregistered), and once the
// checks end the connection leaves nothing behind in the registry.
func TestCoalescerLiveChecksWithoutRegistrations(t *testing.T) {
	g := NewWithT(t)
	f := newFakeObserver()
	f.gate = make(chan struct{})
	c, _ := newTestCoalescer(t, f, Options{})

	results := make(chan error, 3)
	for range 3 {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := c.ObserveNow(ctx, plainConn, target(1))
			results <- err
		}()
	}
	g.Eventually(f.started).Should(Receive())
	g.Consistently(f.started, 50*time.Millisecond).ShouldNot(Receive(), "one live pass for three callers")
	close(f.gate)
	for range 3 {
		g.Eventually(results).Should(Receive(BeNil()))
	}
	g.Expect(f.passCount()).To(Equal(1))
	g.Eventually(func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.accessors)
	}).Should(BeZero(), "a connection only live checks used is dropped once they end")
	g.Expect(f.forgottenKeys()).To(BeEmpty(), "the client stays pooled for the next live check")
}

// A policy that changes what it observes (its topics) on the same
// connection moves to another target of the same connection: the pooled
// client stays, and the next pass observes the new target only.
func TestCoalescerTargetChangeKeepsTheConnection(t *testing.T) {
	g := NewWithT(t)
	f := newFakeObserver()
	c, n := newTestCoalescer(t, f, Options{})

	c.Request(owner(1), plainConn, target(1), time.Minute)
	g.Eventually(func() int { return n.of(owner(1)) }).Should(Equal(1))

	changed := target(1)
	changed.Topics = []string{"orders"}
	_, _, fresh := c.Request(owner(1), plainConn, changed, time.Minute)
	g.Expect(fresh).To(BeFalse(), "the new target was never observed")
	g.Eventually(func() int { return n.of(owner(1)) }).Should(Equal(2))
	g.Expect(f.pass(1)).To(Equal([]kafka.Target{normalizeTarget(changed)}), "the old target is no longer observed")
	g.Expect(f.forgottenKeys()).To(BeEmpty(), "the connection's client was not closed")
	obs, _, fresh := c.Request(owner(1), plainConn, changed, time.Minute)
	g.Expect(fresh).To(BeTrue())
	g.Expect(obs.Group.ID).To(Equal(changed.Group))
}

// holds says whether the Coalescer still holds target's observation on
// plainConn.
func holds(c *Coalescer, target kafka.Target) bool {
	c.mu.Lock()
	a := c.accessors[plainConn.Key()]
	c.mu.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	ts := a.targets[targetKey(target)]
	return ts != nil && ts.has
}

// Seed 000 (fan-out) at scale: the fan-out's policy is proven from the
// pass's observation and the proof lives in its status; the Coalescer
// keeps that observation (24 partitions of offsets and timestamps in
// make bench-scale) only until every policy sharing the target has
// reconciled with it (issue 26). A policy that reconciles again before its
// next check (its spec or a CronJob changed) is still served a fresh
// observation, of its target alone, not a pass of the whole connection;
// its next check, once the observation is stale, rides the connection's
// pass as before.
func TestCoalescerDropsObservationsOnceRead(t *testing.T) {
	g := NewWithT(t)
	f := newFakeObserver()
	c, n := newTestCoalescer(t, f, Options{})

	// Policies 1 and 2 share the fan-out's target, policy 3 has its own.
	shared := target(1)
	for _, o := range []types.NamespacedName{owner(1), owner(2)} {
		_, _, fresh := c.Request(o, plainConn, shared, time.Minute)
		g.Expect(fresh).To(BeFalse())
	}
	c.Request(owner(3), plainConn, target(3), time.Minute)
	for _, i := range []int{1, 2, 3} {
		g.Eventually(func() int { return n.of(owner(i)) }).Should(Equal(1), "policy %d is notified", i)
	}
	g.Expect(f.passCount()).To(Equal(1))

	obs, _, fresh := c.Request(owner(1), plainConn, shared, time.Minute)
	g.Expect(fresh).To(BeTrue())
	g.Expect(obs.Group.ID).To(Equal(shared.Group))
	g.Expect(holds(c, shared)).To(BeTrue(), "policy 2 has not read it yet")
	obs, _, fresh = c.Request(owner(2), plainConn, shared, time.Minute)
	g.Expect(fresh).To(BeTrue(), "the second policy of a target is served the same pass")
	g.Expect(obs.Group.ID).To(Equal(shared.Group))
	g.Expect(holds(c, shared)).To(BeFalse(), "read by every policy of the target: dropped")
	_, _, fresh = c.Request(owner(3), plainConn, target(3), time.Minute)
	g.Expect(fresh).To(BeTrue())
	g.Expect(holds(c, target(3))).To(BeFalse())

	// Policy 1 reconciles again within its interval: its target alone is
	// observed, and both policies of the target learn of it.
	_, _, fresh = c.Request(owner(1), plainConn, shared, time.Minute)
	g.Expect(fresh).To(BeFalse(), "nothing held to serve")
	g.Eventually(func() int { return n.of(owner(1)) }).Should(Equal(2))
	g.Eventually(func() int { return n.of(owner(2)) }).Should(Equal(2))
	g.Expect(f.passCount()).To(Equal(2))
	g.Expect(f.pass(1)).To(Equal([]kafka.Target{normalizeTarget(shared)}), "only the target that asked, not the connection")
	g.Expect(n.of(owner(3))).To(Equal(1), "policy 3 was not observed again")
	obs, _, fresh = c.Request(owner(1), plainConn, shared, time.Minute)
	g.Expect(fresh).To(BeTrue())
	g.Expect(obs.Group.ID).To(Equal(shared.Group))

	// A policy that goes away unread does not keep the observation alive.
	g.Expect(holds(c, shared)).To(BeTrue(), "policy 2 has not read the new one")
	c.Unregister(owner(2))
	g.Expect(holds(c, shared)).To(BeFalse())

	// Stale (the next check): one pass of every target of the connection.
	_, _, fresh = c.Request(owner(3), plainConn, target(3), 0)
	g.Expect(fresh).To(BeFalse())
	g.Eventually(func() int { return n.of(owner(3)) }).Should(Equal(2))
	g.Expect(f.passCount()).To(Equal(3))
	g.Expect(f.pass(2)).To(HaveLen(2))
}

// Issue 34, seed 000 at scale: a cluster slow enough that its passes
// outrun the interval leaves proofs stale, and every rollout of a stale
// policy asks the webhook for a live check. Unbounded, those one-group
// passes pile onto the brokers that made the proofs stale (make
// bench-scale saw 525 of them per interval on one manager at 10,000
// policies a cluster, and the passes fell further behind). At most
// LiveChecks run at once on a connection: a caller beyond them waits for
// a slot and, when none frees in time, gets a BusyError that says so (the
// webhook then judges the policy unproven: fail closed), while a caller
// whose target is already being observed joins that pass, and another
// connection is not held back.
func TestCoalescerBoundsLiveChecksPerConnection(t *testing.T) {
	g := NewWithT(t)
	f := newFakeObserver()
	f.gate = make(chan struct{})
	var busy atomic.Int32
	c, _ := newTestCoalescer(t, f, Options{LiveChecks: 2, OnLiveBusy: func() { busy.Add(1) }})

	observe := func(conn kafka.Connection, tg kafka.Target, within time.Duration) chan error {
		out := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), within)
			defer cancel()
			obs, err := c.ObserveNow(ctx, conn, tg)
			if err == nil && obs.Group.ID != tg.Group {
				err = fmt.Errorf("observed %s", obs.Group.ID)
			}
			out <- err
		}()
		return out
	}
	first, second := observe(plainConn, target(1), 10*time.Second), observe(plainConn, target(2), 10*time.Second)
	g.Eventually(f.started).Should(Receive())
	g.Eventually(f.started).Should(Receive())

	// Both slots busy: a third target waits, then fails with why.
	third := observe(plainConn, target(3), 300*time.Millisecond)
	var err error
	g.Eventually(third).Should(Receive(&err))
	var be *BusyError
	g.Expect(errors.As(err, &be)).To(BeTrue(), "got %v", err)
	g.Expect(be.Limit).To(Equal(2))
	g.Expect(err.Error()).To(ContainSubstring("--live-checks-per-connection"))
	g.Expect(errors.Is(err, context.DeadlineExceeded)).To(BeFalse(), "the caller learns why, not only that time ran out")
	g.Expect(busy.Load()).To(Equal(int32(1)))
	g.Expect(f.passCount()).To(Equal(2), "the third target was never observed")

	// A caller that goes away while it waits is not a busy connection.
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() {
		_, err := c.ObserveNow(ctx, plainConn, target(5))
		gone <- err
	}()
	g.Consistently(gone, 50*time.Millisecond).ShouldNot(Receive(), "it waits for a slot")
	cancel()
	g.Eventually(gone).Should(Receive(MatchError(context.Canceled)))
	g.Expect(busy.Load()).To(Equal(int32(1)))

	// The same target as a running pass joins it; another connection has
	// slots of its own.
	joined := observe(plainConn, target(1), 10*time.Second)
	other := kafka.Connection{BootstrapServers: []string{"kafka-9:9092"}}
	elsewhere := observe(other, target(3), 10*time.Second)
	g.Eventually(f.started).Should(Receive(), "another connection's live check starts at once")
	g.Expect(f.passCount()).To(Equal(3))

	// A waiter gets the first slot that frees.
	waiting := observe(plainConn, target(4), 10*time.Second)
	g.Consistently(f.started, 100*time.Millisecond).ShouldNot(Receive(), "no slot free yet")
	f.gate <- struct{}{} // one of the three running passes ends
	g.Eventually(f.started).Should(Receive(), "the waiter's pass starts in the freed slot")
	for range 3 {
		f.gate <- struct{}{}
	}
	for _, ch := range []chan error{first, second, joined, elsewhere, waiting} {
		g.Eventually(ch).Should(Receive(BeNil()))
	}
	g.Expect(f.passCount()).To(Equal(4), "one pass each for targets 1, 2, 4 and the other connection's; the joiner shared one")
	g.Expect(busy.Load()).To(Equal(int32(1)))
}

// A policy re-reading an observation the cache dropped (TestCoalescer
// DropsObservationsOnceRead) takes a live slot too; with every slot busy
// it rides the connection's next pass instead of adding a pass of its own.
func TestCoalescerRereadJoinsThePassWhenLiveSlotsAreBusy(t *testing.T) {
	g := NewWithT(t)
	f := newFakeObserver()
	c, n := newTestCoalescer(t, f, Options{LiveChecks: 1})

	c.Request(owner(1), plainConn, target(1), time.Minute)
	c.Request(owner(3), plainConn, target(3), time.Minute)
	g.Eventually(f.started).Should(Receive())
	g.Eventually(func() int { return n.of(owner(1)) }).Should(Equal(1))
	_, _, fresh := c.Request(owner(1), plainConn, target(1), time.Minute)
	g.Expect(fresh).To(BeTrue())
	g.Expect(holds(c, target(1))).To(BeFalse(), "read: dropped")
	g.Expect(f.passCount()).To(Equal(1))

	// A live check of another target holds the one slot.
	f.mu.Lock()
	f.gate = make(chan struct{})
	f.mu.Unlock()
	live := make(chan error, 1)
	go func() {
		_, err := c.ObserveNow(context.Background(), plainConn, target(2))
		live <- err
	}()
	g.Eventually(f.started).Should(Receive())
	_, _, fresh = c.Request(owner(1), plainConn, target(1), time.Minute)
	g.Expect(fresh).To(BeFalse(), "nothing held to serve")
	g.Eventually(f.started).Should(Receive(), "the next pass of the connection starts after its linger")
	g.Expect(f.passCount()).To(Equal(3))
	g.Expect(f.pass(2)).To(ConsistOf(normalizeTarget(target(1)), normalizeTarget(target(3))),
		"the connection's pass (every registered target), not a live pass of one")
	f.gate <- struct{}{}
	f.gate <- struct{}{}
	g.Eventually(live).Should(Receive(BeNil()))
	g.Eventually(func() int { return n.of(owner(1)) }).Should(Equal(2))
}

// lazyObserver delivers each target's observation unbuilt, as
// kafka.Observer does: a kafka.Observed keeping its pass's state (here an
// object per pass the test can watch) and counting its builds.
type lazyObserver struct {
	mu     sync.Mutex
	builds map[string]int                // by group
	passes []weak.Pointer[[1 << 20]byte] // each pass's state
}

func (f *lazyObserver) ObserveCluster(_ context.Context, _ kafka.Connection, req kafka.ClusterRequest) kafka.ClusterObservation {
	at := time.Now()
	state := new([1 << 20]byte) // what a pass reads, kept by its Observeds
	state[0] = 7
	f.mu.Lock()
	f.passes = append(f.passes, weak.Make(state))
	f.mu.Unlock()
	for i, t := range req.Targets {
		req.Deliver(i, kafka.ObservedBy(func() proof.Observation {
			f.mu.Lock()
			f.builds[t.Group]++
			f.mu.Unlock()
			return proof.Observation{ObservedAt: at, Group: proof.GroupObservation{ID: t.Group}, ClusterID: fmt.Sprint(state[0])}
		}))
	}
	return kafka.ClusterObservation{ObservedAt: at, Brokers: []int32{1}}
}

func (f *lazyObserver) Forget(kafka.Connection) {}

func (f *lazyObserver) buildsOf(group string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.builds[group]
}

func (f *lazyObserver) passKept(i int) bool {
	runtime.GC()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.passes[i].Value() != nil
}

// Issue 34, the first proofs' peak: the cache keeps a pass's observations
// unbuilt, each built when its policy reads it, so that it holds one
// pass's state rather than an observation per target; and once at most
// half of the pass's targets are still unread (a policy with a longer
// checkInterval than its neighbours), it builds those and lets the pass
// go, so a few slow readers never keep a whole pass.
func TestCoalescerBuildsObservationsWhenReadAndLetsThePassGo(t *testing.T) {
	g := NewWithT(t)
	f := &lazyObserver{builds: make(map[string]int)}
	c := New(f, Options{Linger: 20 * time.Millisecond})
	n := &notifications{count: make(map[types.NamespacedName]int)}
	c.SetNotify(n.add)
	t.Cleanup(c.Close)

	const policies = 6
	for i := range policies {
		c.Request(owner(i), plainConn, target(i), time.Minute)
	}
	for i := range policies {
		g.Eventually(func() int { return n.of(owner(i)) }).Should(Equal(1), "policy %d is notified", i)
	}
	for i := range policies {
		g.Expect(f.buildsOf(target(i).Group)).To(BeZero(), "nothing is built before a policy reads it")
	}

	// Three of six read: half still keep the pass, which is kept whole.
	for i := range 3 {
		obs, _, fresh := c.Request(owner(i), plainConn, target(i), time.Minute)
		g.Expect(fresh).To(BeTrue())
		g.Expect(obs.Group.ID).To(Equal(target(i).Group))
		g.Expect(f.buildsOf(target(i).Group)).To(Equal(1), "built when read")
	}
	g.Expect(f.passKept(0)).To(BeTrue(), "three targets of six still keep the pass")

	// The fourth read leaves two: built, and the pass let go.
	c.Request(owner(3), plainConn, target(3), time.Minute)
	g.Eventually(func() bool { return f.passKept(0) }).Should(BeFalse(), "two unread targets of six do not keep the pass")
	for i := 4; i < policies; i++ {
		g.Expect(f.buildsOf(target(i).Group)).To(Equal(1), "built once, when the pass was let go")
		obs, _, fresh := c.Request(owner(i), plainConn, target(i), time.Minute)
		g.Expect(fresh).To(BeTrue())
		g.Expect(obs.Group.ID).To(Equal(target(i).Group), "the built observation is the target's")
		g.Expect(obs.ClusterID).To(Equal("7"), "and the pass's")
		g.Expect(f.buildsOf(target(i).Group)).To(Equal(1), "served built, not built again")
	}

	// The next pass replaces every target's observation: the one before
	// is kept by none.
	_, _, stale := c.Request(owner(0), plainConn, target(0), 0)
	g.Expect(stale).To(BeFalse())
	g.Eventually(func() int { return n.of(owner(0)) }).Should(Equal(2))
	g.Eventually(func() bool { return f.passKept(1) }).Should(BeTrue(), "the second pass is kept by its unread targets")
	c.Request(owner(0), plainConn, target(0), time.Minute)
	g.Expect(f.buildsOf(target(0).Group)).To(Equal(2))
	g.Expect(f.passKept(0)).To(BeFalse(), "the first pass is kept by none")
	// Policies deleted unread count as let go: one target of six is left
	// keeping the pass, which is built and the pass let go.
	for i := 1; i < policies-1; i++ {
		c.Unregister(owner(i))
	}
	g.Eventually(func() bool { return f.passKept(1) }).Should(BeFalse(), "one unread target of six does not keep the pass")
	obs, _, fresh := c.Request(owner(policies-1), plainConn, target(policies-1), time.Minute)
	g.Expect(fresh).To(BeTrue())
	g.Expect(obs.Group.ID).To(Equal(target(policies - 1).Group))
	g.Expect(f.buildsOf(target(policies-1).Group)).To(Equal(2), "one build a pass")
}

// BenchmarkPassDelivery is a manager's restart on one connection: n
// policies, each its own target, all waiting for the first pass, which
// delivers every target and notifies its waiters. Until 4ea760d each
// delivery went through every waiting policy (quadratic in n: 3.9 s of a
// 20,000-policy steady state's CPU profile, docs/benchmarks.md).
func BenchmarkPassDelivery(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("policies=%d", n), func(b *testing.B) {
			for range b.N {
				f := &lazyObserver{builds: make(map[string]int)}
				c := New(f, Options{Linger: time.Millisecond})
				var notified atomic.Int64
				done := make(chan struct{})
				c.SetNotify(func(types.NamespacedName) {
					if notified.Add(1) == int64(n) {
						close(done)
					}
				})
				for i := range n {
					c.Request(owner(i), plainConn, target(i), time.Minute)
				}
				select {
				case <-done:
				case <-time.After(time.Minute):
					b.Fatalf("%d of %d policies notified in a minute", notified.Load(), n)
				}
				c.Close()
			}
		})
	}
}
