package coalesce

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Observer is what the Coalescer needs of a *kafka.Observer.
type Observer interface {
	ObserveCluster(ctx context.Context, conn kafka.Connection, req kafka.ClusterRequest) kafka.ClusterObservation
	Forget(conn kafka.Connection)
}

// ConnectionOwner names a ClusterKafkaConnection (Namespace empty) or a
// KafkaConnection that watches its cluster through the Coalescer.
type ConnectionOwner struct {
	Kind      string
	Namespace string
	Name      string
}

func (o ConnectionOwner) String() string {
	if o.Namespace == "" {
		return o.Kind + "/" + o.Name
	}
	return o.Kind + "/" + o.Namespace + "/" + o.Name
}

// Options tune a Coalescer. Zero values take the defaults.
type Options struct {
	// PassTimeout bounds one observation pass of a cluster (all of its
	// targets). Default 10s.
	PassTimeout time.Duration
	// Linger is how long a pass waits after the first request that needs
	// it, so the requests of other policies on the same cluster that come
	// due at about the same moment ride along. Default 100ms.
	Linger time.Duration
	// Logger logs passes at V(1). Connections appear only as
	// Connection.String().
	Logger logr.Logger
	// LiveChecks bounds the live passes (ObserveNow, and a policy's
	// re-read of an observation the cache dropped) that run at once on
	// one connection. Under a burst of rollouts whose proofs are stale
	// (a slow cluster: its passes outrun the interval), live passes of
	// one group each would otherwise pile onto the brokers that made the
	// proofs stale and slow the next pass further. An ObserveNow beyond
	// the bound waits for a slot within its context and then fails with
	// a *BusyError (the webhook judges the policy unproven: fail closed);
	// a re-read beyond it joins the next pass instead. Default
	// DefaultLiveChecks.
	LiveChecks int
	// OnLiveBusy, when set, is called each time an ObserveNow gives up
	// waiting for a live slot (a metric).
	OnLiveBusy func()

	now func() time.Time
}

// DefaultLiveChecks is Options.LiveChecks by default: four one-group
// passes at once on a connection answer a burst of some tens of rollouts
// a second within the webhook's live-check deadline on a healthy cluster,
// and cost a slow one at most four groups' requests beside its pass.
const DefaultLiveChecks = 4

// ErrCoalescerClosed is returned by ObserveNow after Close.
var ErrCoalescerClosed = errors.New("the observation coalescer is closed")

// BusyError is ObserveNow's error when every live slot of the connection
// (Options.LiveChecks) stayed busy until the caller's deadline.
type BusyError struct {
	// Limit is the number of live passes that were running.
	Limit int
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("%d live checks were already observing this Kafka connection (the most the manager runs at once on one, "+
		"--live-checks-per-connection) and none ended in time: the cluster answers slowly, or many rollouts need a live check at once; "+
		"retry, and see the manager's retentionguard_kafka_request_duration_seconds and retentionguard_live_checks_busy_total", e.Limit)
}

// Coalescer shares observations of a Kafka cluster among every policy that
// names it, so that N policies on one cluster cost one batched observation
// per interval instead of N.
//
// Connections are keyed by kafka.Connection.Key (servers plus hashed
// credentials: two policies that authenticate differently never share an
// observation, since ACLs may show them different facts). Each policy
// registers its kafka.Target under its name through Request. When a
// policy's cached observation is older than it accepts, Request schedules a
// pass: after Linger, one kafka.Observer.Observe runs for every target
// registered on the connection, and its results are cached per target. A
// connection has at most one pass running; requests that come in while it
// runs either join it (when it covers their target) or are served by the
// single pass that follows it. Request never blocks on Kafka: it returns
// the cached observation when it is fresh enough, and otherwise the owner is
// notified (SetNotify) once the pass that serves it completes, so
// reconcilers never hold a worker while a broker is slow or down.
//
// ObserveNow is the blocking, deadline-bound way in, for the admission
// webhook's live re-check.
//
// The shape is Cluster API's clustercache: the Coalescer is a small
// registry of accessors keyed by connection, and each connAccessor
// (coalescer_accessor.go) owns its lock, the scheduler of its passes
// (coalescer_pass.go) and the cache of their results. The registry's lock
// guards only which accessor serves a key and which connection each
// policy and connection owner is registered on; it is taken before an
// accessor's lock, never after.
//
// A Coalescer is safe for concurrent use. It runs as a manager Runnable on
// every replica (the webhook needs it whether or not this replica leads);
// Close, or the end of Start, cancels the passes in flight.
type Coalescer struct {
	observer Observer
	opts     Options
	log      logr.Logger

	// ctx ends at Close: every pass runs under it, and an accessor
	// launches nothing once it has ended. wg counts the lingers and passes.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	closed    bool
	accessors map[string]*connAccessor         // by Connection.Key()
	owners    map[types.NamespacedName]string  // policy → the key of its connection
	watchers  map[ConnectionOwner]string       // connection owner → the key of its connection
	notify    func(types.NamespacedName)       // policies whose observation is ready
	notifyFor map[string]func(ConnectionOwner) // by owner kind: connection owners whose cluster view is ready
}

// New returns a Coalescer observing through observer.
func New(observer Observer, opts Options) *Coalescer {
	if opts.PassTimeout <= 0 {
		opts.PassTimeout = 10 * time.Second
	}
	if opts.Linger <= 0 {
		opts.Linger = 100 * time.Millisecond
	}
	if opts.LiveChecks <= 0 {
		opts.LiveChecks = DefaultLiveChecks
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	if opts.now == nil {
		opts.now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Coalescer{
		observer:  observer,
		opts:      opts,
		log:       opts.Logger,
		ctx:       ctx,
		cancel:    cancel,
		accessors: make(map[string]*connAccessor),
		owners:    make(map[types.NamespacedName]string),
		watchers:  make(map[ConnectionOwner]string),
		notifyFor: make(map[string]func(ConnectionOwner)),
	}
}

// SetNotify sets the function called, outside any lock, with each owner
// whose requested observation is ready. The reconciler points it at its
// work queue.
func (c *Coalescer) SetNotify(fn func(owner types.NamespacedName)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notify = fn
}

// SetClusterNotify sets the function called, outside any lock, with each
// connection owner of kind whose requested cluster observation is ready
// (each connection kind's reconciler points it at its own work queue).
func (c *Coalescer) SetClusterNotify(kind string, fn func(owner ConnectionOwner)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notifyFor[kind] = fn
}

// Start implements manager.Runnable: it waits for ctx, then closes.
func (c *Coalescer) Start(ctx context.Context) error {
	<-ctx.Done()
	c.Close()
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every
// replica needs the coalescer (the webhook's live checks).
func (c *Coalescer) NeedLeaderElection() bool { return false }

// Close cancels the passes in flight and waits for them. Request and
// ObserveNow after Close observe nothing.
func (c *Coalescer) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.cancel()
	for _, a := range c.accessors {
		a.stopLinger()
	}
	c.mu.Unlock()
	c.wg.Wait()
}

// Request registers owner's target on conn (moving it off the connection it
// used before, if any) and returns the target's cached observation, with
// how long ago its pass completed, when that is no longer than maxAge.
// Otherwise it returns false, and owner is notified once a pass covering
// its target completes. It never blocks on Kafka.
func (c *Coalescer) Request(owner types.NamespacedName, conn kafka.Connection, target kafka.Target, maxAge time.Duration) (obs proof.Observation, age time.Duration, fresh bool) {
	return c.RequestSince(owner, conn, target, maxAge, time.Time{})
}

// RequestSince is Request for an observation that also started at or
// after notBefore: the retentionguard.io/requestedAt annotation asks for a
// pass that began after the request, not one that was already reading.
func (c *Coalescer) RequestSince(owner types.NamespacedName, conn kafka.Connection, target kafka.Target, maxAge time.Duration, notBefore time.Time) (obs proof.Observation, age time.Duration, fresh bool) {
	for {
		a, ok := c.registerPolicy(owner, conn)
		if !ok {
			return proof.Observation{}, 0, false
		}
		if obs, age, fresh, ok := a.request(owner, target, maxAge, notBefore); ok {
			return obs.Observation(), age, fresh
		}
		// Retired between the registry and its lock: ask the registry again.
	}
}

// Unregister forgets owner's target (the policy was deleted, or it no
// longer names a usable connection). A connection nobody uses any more has
// its pooled Kafka client closed.
func (c *Coalescer) Unregister(owner types.NamespacedName) {
	c.mu.Lock()
	a := c.accessors[c.owners[owner]]
	delete(c.owners, owner)
	c.mu.Unlock()
	if a != nil {
		a.unregister(owner)
		c.retireIfIdle(a)
	}
}

// RequestCluster registers owner as watching conn's cluster, with
// discovery when d is not nil, and returns the last pass's view of the
// cluster (brokers, offsets retention, discovered groups) with its age
// when that pass is no older than maxAge (and holds a discovery, when one
// is asked). Otherwise it schedules a pass (joined by every policy target
// registered on the connection) and notifies owner when it completes. It
// never blocks on Kafka.
func (c *Coalescer) RequestCluster(owner ConnectionOwner, conn kafka.Connection, d *kafka.Discovery, maxAge time.Duration, notBefore time.Time) (kafka.ClusterObservation, time.Duration, bool) {
	for {
		a, ok := c.registerWatcher(owner, conn)
		if !ok {
			return kafka.ClusterObservation{}, 0, false
		}
		if co, age, fresh, ok := a.requestCluster(owner, d, maxAge, notBefore); ok {
			return co, age, fresh
		}
	}
}

// UnregisterCluster forgets a connection owner (deleted, or its spec no
// longer resolves).
func (c *Coalescer) UnregisterCluster(owner ConnectionOwner) {
	c.mu.Lock()
	a := c.accessors[c.watchers[owner]]
	delete(c.watchers, owner)
	c.mu.Unlock()
	if a != nil {
		a.unwatch(owner)
		c.retireIfIdle(a)
	}
}

// ObserveNow observes one target on conn now, for the admission webhook's
// live re-check of a policy whose status is not fresh. It blocks until the
// observation completes or ctx ends (give it the webhook's deadline);
// concurrent calls for the same connection and target share one Kafka
// pass. The pass is bounded by PassTimeout, not by ctx, so a caller that
// gives up leaves it to finish for the next caller. It observes only this
// target, not the whole connection (a live check must be quick), and it
// updates the target's cached observation, notifying the policies that
// share it, so their status reflects what the webhook saw. At most
// Options.LiveChecks such passes run on a connection at once: a call
// beyond them waits for one to end, and when none does before ctx is
// nearly over it returns a *BusyError.
func (c *Coalescer) ObserveNow(ctx context.Context, conn kafka.Connection, target kafka.Target) (proof.Observation, error) {
	target = normalizeTarget(target)
	tk := targetKey(target)
	var lp *livePass
	for lp == nil {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return proof.Observation{}, ErrCoalescerClosed
		}
		a := c.accessorLocked(conn)
		c.mu.Unlock()
		var err error
		if lp, err = a.observeLive(ctx, tk, target); err != nil {
			var busy *BusyError
			if errors.As(err, &busy) && c.opts.OnLiveBusy != nil {
				c.opts.OnLiveBusy()
			}
			return proof.Observation{}, err
		}
	}
	select {
	case <-lp.done:
		return lp.obs, nil
	case <-ctx.Done():
		return proof.Observation{}, ctx.Err()
	}
}

// registerPolicy records owner as a policy on conn and returns conn's
// accessor; it moves owner off the accessor of the connection it used
// before. False once closed.
func (c *Coalescer) registerPolicy(owner types.NamespacedName, conn kafka.Connection) (*connAccessor, bool) {
	return register(c, c.owners, owner, conn, func(prev *connAccessor) { prev.unregister(owner) })
}

// registerWatcher is registerPolicy for a connection owner.
func (c *Coalescer) registerWatcher(owner ConnectionOwner, conn kafka.Connection) (*connAccessor, bool) {
	return register(c, c.watchers, owner, conn, func(prev *connAccessor) { prev.unwatch(owner) })
}

// register records in byOwner (c.owners or c.watchers, guarded by c.mu)
// that owner uses conn and returns conn's accessor; leave takes owner off
// the accessor of the connection it used before, which retires if idle.
// False once closed.
func register[K comparable](c *Coalescer, byOwner map[K]string, owner K, conn kafka.Connection, leave func(*connAccessor)) (*connAccessor, bool) {
	key := conn.Key()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, false
	}
	var prev *connAccessor
	if k, ok := byOwner[owner]; ok && k != key {
		prev = c.accessors[k]
	}
	byOwner[owner] = key
	a := c.accessorLocked(conn)
	c.mu.Unlock()
	if prev != nil {
		leave(prev)
		c.retireIfIdle(prev)
	}
	return a, true
}

// accessorLocked returns the accessor of conn, creating it.
func (c *Coalescer) accessorLocked(conn kafka.Connection) *connAccessor {
	key := conn.Key()
	a := c.accessors[key]
	if a == nil {
		a = newConnAccessor(c, key, conn)
		c.accessors[key] = a
	}
	return a
}

// retireIfIdle closes the pooled client of an accessor nobody is
// registered on any more and that runs no pass (after a credential
// rotation, the client that still holds the old credentials), and drops
// the accessor once no live check runs on it either.
func (c *Coalescer) retireIfIdle(a *connAccessor) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.accessors[a.key] != a {
		return
	}
	forget, drop := a.retireIfIdle()
	if forget {
		c.observer.Forget(a.conn)
	}
	if drop {
		delete(c.accessors, a.key)
	}
}

// notifyPolicies tells the reconciler, outside any lock, that owners'
// observations are ready.
func (c *Coalescer) notifyPolicies(owners []types.NamespacedName) {
	c.mu.Lock()
	fn := c.notify
	c.mu.Unlock()
	if fn == nil {
		return
	}
	for _, o := range owners {
		fn(o)
	}
}

// notifyWatchers tells each connection owner's reconciler, outside any
// lock, that its cluster view is ready.
func (c *Coalescer) notifyWatchers(owners []ConnectionOwner) {
	c.mu.Lock()
	fns := maps.Clone(c.notifyFor)
	c.mu.Unlock()
	for _, o := range owners {
		if fn := fns[o.Kind]; fn != nil {
			fn(o)
		}
	}
}

// Registered is the number of policies registered for passes: a policy
// that was deleted or that lost its connection is no longer counted.
func (c *Coalescer) Registered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.owners)
}
