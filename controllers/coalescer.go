package controllers

import (
	"context"
	"errors"
	"slices"
	"strings"
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

// CoalescerOptions tune a Coalescer. Zero values take the defaults.
type CoalescerOptions struct {
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

	now func() time.Time
}

// ErrCoalescerClosed is returned by ObserveNow after Close.
var ErrCoalescerClosed = errors.New("the observation coalescer is closed")

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
// A Coalescer is safe for concurrent use. It runs as a manager Runnable on
// every replica (the webhook needs it whether or not this replica leads);
// Close, or the end of Start, cancels the passes in flight.
type Coalescer struct {
	observer Observer
	opts     CoalescerOptions
	log      logr.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	conns    map[string]*connState // by Connection.Key()
	owners   map[types.NamespacedName]registration
	watchers map[ConnectionOwner]string // connection owner → connection key
	live     map[string]*livePass       // ObserveNow single flight, by connection and target key
	notify   func(types.NamespacedName)
	// clusterNotify, by owner kind, is called with each connection owner
	// whose requested cluster observation is ready.
	clusterNotify map[string]func(ConnectionOwner)
}

type registration struct {
	connKey   string
	targetKey string
}

// connState is one Kafka connection: who uses it, what they need, the last
// results, and the passes running or scheduled.
type connState struct {
	key     string
	conn    kafka.Connection
	owners  map[types.NamespacedName]string // owner → target key
	targets map[string]*targetState
	running *observationPass
	next    *observationPass // scheduled: lingering, or queued behind running
	timer   *time.Timer      // the linger of next, when nothing runs

	// watchers are the connections that watch the cluster itself, each
	// with the discovery it wants (nil: none).
	watchers map[ConnectionOwner]*kafka.Discovery
	// cluster is the last pass's view of the cluster (per-target
	// observations dropped), and when it completed.
	cluster      kafka.ClusterObservation
	clusterAt    time.Time
	clusterStart time.Time
	hasView      bool
	// discovered: the last view holds a discovery.
	discovered bool
}

type targetState struct {
	target  kafka.Target
	refs    int
	has     bool
	obs     proof.Observation
	at      time.Time // when the pass that produced obs completed
	started time.Time // when it started
}

type observationPass struct {
	targets  map[string]kafka.Target // set at launch: every target registered then
	waiters  map[types.NamespacedName]struct{}
	watchers map[ConnectionOwner]struct{} // connection owners waiting for it
	discover *kafka.Discovery             // set at launch
	started  time.Time                    // set at launch
}

type livePass struct {
	done chan struct{}
	obs  proof.Observation
}

// NewCoalescer returns a Coalescer observing through observer.
func NewCoalescer(observer Observer, opts CoalescerOptions) *Coalescer {
	if opts.PassTimeout <= 0 {
		opts.PassTimeout = 10 * time.Second
	}
	if opts.Linger <= 0 {
		opts.Linger = 100 * time.Millisecond
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	if opts.now == nil {
		opts.now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Coalescer{
		observer: observer,
		opts:     opts,
		log:      opts.Logger,
		ctx:      ctx,
		cancel:   cancel,
		conns:    make(map[string]*connState),
		owners:   make(map[types.NamespacedName]registration),
		watchers: make(map[ConnectionOwner]string),
		live:     make(map[string]*livePass),
	}
}

// SetClusterNotify sets the function called, outside any lock, with each
// connection owner of kind whose requested cluster observation is ready
// (each connection kind's reconciler points it at its own work queue).
func (c *Coalescer) SetClusterNotify(kind string, fn func(owner ConnectionOwner)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.clusterNotify == nil {
		c.clusterNotify = make(map[string]func(ConnectionOwner))
	}
	c.clusterNotify[kind] = fn
}

// RequestCluster registers owner as watching conn's cluster, with
// discovery when d is not nil, and returns the last pass's view of the
// cluster (brokers, offsets retention, discovered groups) with its age
// when that pass is no older than maxAge (and holds a discovery, when one
// is asked). Otherwise it schedules a pass (joined by every policy target
// registered on the connection) and notifies owner when it completes. It
// never blocks on Kafka.
func (c *Coalescer) RequestCluster(owner ConnectionOwner, conn kafka.Connection, d *kafka.Discovery, maxAge time.Duration, notBefore time.Time) (kafka.ClusterObservation, time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return kafka.ClusterObservation{}, 0, false
	}
	key := conn.Key()
	if prev, ok := c.watchers[owner]; ok && prev != key {
		c.unwatchLocked(owner)
	}
	cs := c.connLocked(key, conn)
	cs.watchers[owner] = d
	c.watchers[owner] = key
	if cs.hasView && (d == nil || cs.discovered) && !cs.clusterStart.Before(notBefore) {
		if age := c.opts.now().Sub(cs.clusterAt); age <= maxAge {
			return cs.cluster, max(age, 0), true
		}
	}
	if r := cs.running; r != nil && (d == nil || r.discover != nil) && !r.started.Before(notBefore) {
		r.watchers[owner] = struct{}{}
		return kafka.ClusterObservation{}, 0, false
	}
	c.scheduleLocked(cs).watchers[owner] = struct{}{}
	return kafka.ClusterObservation{}, 0, false
}

// UnregisterCluster forgets a connection owner (deleted, or its spec no
// longer resolves).
func (c *Coalescer) UnregisterCluster(owner ConnectionOwner) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unwatchLocked(owner)
}

func (c *Coalescer) unwatchLocked(owner ConnectionOwner) {
	key, ok := c.watchers[owner]
	if !ok {
		return
	}
	delete(c.watchers, owner)
	if cs := c.conns[key]; cs != nil {
		delete(cs.watchers, owner)
		c.maybeRetireLocked(cs)
	}
}

// connLocked returns the state of the connection with key, creating it.
func (c *Coalescer) connLocked(key string, conn kafka.Connection) *connState {
	cs := c.conns[key]
	if cs == nil {
		cs = &connState{
			key:      key,
			conn:     conn,
			owners:   make(map[types.NamespacedName]string),
			targets:  make(map[string]*targetState),
			watchers: make(map[ConnectionOwner]*kafka.Discovery),
		}
		c.conns[key] = cs
	}
	return cs
}

// discovery merges what the watchers of cs want: nil when none wants
// discovery, every group when one wants them all, else the groups any
// one's Match accepts.
func (cs *connState) discovery() *kafka.Discovery {
	var matches []func(string) bool
	wanted := false
	for _, d := range cs.watchers {
		if d == nil {
			continue
		}
		if d.Match == nil {
			return &kafka.Discovery{}
		}
		wanted = true
		matches = append(matches, d.Match)
	}
	if !wanted {
		return nil
	}
	return &kafka.Discovery{Match: func(g string) bool {
		for _, m := range matches {
			if m(g) {
				return true
			}
		}
		return false
	}}
}

// SetNotify sets the function called, outside any lock, with each owner
// whose requested observation is ready. The reconciler points it at its
// work queue.
func (c *Coalescer) SetNotify(fn func(owner types.NamespacedName)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notify = fn
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
	for _, cs := range c.conns {
		if cs.timer != nil && cs.timer.Stop() {
			cs.timer = nil
			c.wg.Done() // the linger that will not fire
		}
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
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return proof.Observation{}, 0, false
	}
	cs, tk := c.registerLocked(owner, conn, target)
	ts := cs.targets[tk]
	if ts.has && !ts.started.Before(notBefore) {
		if age := c.opts.now().Sub(ts.at); age <= maxAge {
			return ts.obs, max(age, 0), true
		}
	}
	if r := cs.running; r != nil && !r.started.Before(notBefore) {
		if _, ok := r.targets[tk]; ok {
			r.waiters[owner] = struct{}{}
			return proof.Observation{}, 0, false
		}
	}
	c.scheduleLocked(cs).waiters[owner] = struct{}{}
	return proof.Observation{}, 0, false
}

// Unregister forgets owner's target (the policy was deleted, or it no
// longer names a usable connection). A connection nobody uses any more has
// its pooled Kafka client closed.
func (c *Coalescer) Unregister(owner types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unregisterLocked(owner)
}

// ObserveNow observes one target on conn now, for the admission webhook's
// live re-check of a policy whose status is not fresh. It blocks until the
// observation completes or ctx ends (give it the webhook's deadline);
// concurrent calls for the same connection and target share one Kafka
// pass. The pass is bounded by PassTimeout, not by ctx, so a caller that
// gives up leaves it to finish for the next caller. It observes only this
// target, not the whole connection (a live check must be quick), and it
// updates the target's cached observation, notifying the policies that
// share it, so their status reflects what the webhook saw.
func (c *Coalescer) ObserveNow(ctx context.Context, conn kafka.Connection, target kafka.Target) (proof.Observation, error) {
	target = normalizeTarget(target)
	key, tk := conn.Key(), targetKey(target)
	lk := key + "\x00" + tk
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return proof.Observation{}, ErrCoalescerClosed
	}
	lp := c.live[lk]
	if lp == nil {
		lp = &livePass{done: make(chan struct{})}
		c.live[lk] = lp
		c.wg.Add(1)
		go c.runLive(lk, key, tk, conn, target, lp)
	}
	c.mu.Unlock()

	select {
	case <-lp.done:
		return lp.obs, nil
	case <-ctx.Done():
		return proof.Observation{}, ctx.Err()
	}
}

func (c *Coalescer) runLive(lk, key, tk string, conn kafka.Connection, target kafka.Target, lp *livePass) {
	defer c.wg.Done()
	started := c.opts.now()
	ctx, cancel := context.WithTimeout(c.ctx, c.opts.PassTimeout)
	obs := c.observer.ObserveCluster(ctx, conn, kafka.ClusterRequest{Targets: []kafka.Target{target}}).Observations
	cancel()
	if len(obs) == 1 {
		lp.obs = obs[0]
	}

	c.mu.Lock()
	delete(c.live, lk)
	var owners []types.NamespacedName
	if cs := c.conns[key]; cs != nil && len(obs) == 1 {
		if ts := cs.targets[tk]; ts != nil && (!ts.has || !started.Before(ts.started)) {
			ts.has, ts.obs, ts.at, ts.started = true, lp.obs, c.opts.now(), started
			for o, otk := range cs.owners {
				if otk == tk {
					owners = append(owners, o)
				}
			}
		}
	}
	notify := c.notify
	c.mu.Unlock()
	close(lp.done)
	if notify != nil {
		for _, o := range owners {
			notify(o)
		}
	}
}

func (c *Coalescer) registerLocked(owner types.NamespacedName, conn kafka.Connection, target kafka.Target) (*connState, string) {
	key, tk := conn.Key(), targetKey(target)
	if reg, ok := c.owners[owner]; ok {
		if reg.connKey == key && reg.targetKey == tk {
			return c.conns[key], tk
		}
		c.unregisterLocked(owner)
	}
	cs := c.connLocked(key, conn)
	ts := cs.targets[tk]
	if ts == nil {
		ts = &targetState{target: normalizeTarget(target)}
		cs.targets[tk] = ts
	}
	ts.refs++
	cs.owners[owner] = tk
	c.owners[owner] = registration{connKey: key, targetKey: tk}
	return cs, tk
}

func (c *Coalescer) unregisterLocked(owner types.NamespacedName) {
	reg, ok := c.owners[owner]
	if !ok {
		return
	}
	delete(c.owners, owner)
	cs := c.conns[reg.connKey]
	if cs == nil {
		return
	}
	delete(cs.owners, owner)
	if ts := cs.targets[reg.targetKey]; ts != nil {
		if ts.refs--; ts.refs <= 0 {
			delete(cs.targets, reg.targetKey)
		}
	}
	c.maybeRetireLocked(cs)
}

// maybeRetireLocked drops a connection nobody uses once no pass runs on it,
// and closes its pooled client (after a credential rotation, the client
// that still holds the old credentials).
func (c *Coalescer) maybeRetireLocked(cs *connState) {
	if len(cs.owners) > 0 || len(cs.watchers) > 0 || cs.running != nil || c.conns[cs.key] != cs {
		return
	}
	if cs.timer != nil && cs.timer.Stop() {
		cs.timer = nil
		c.wg.Done()
	}
	delete(c.conns, cs.key)
	c.observer.Forget(cs.conn)
}

// scheduleLocked returns the pass that will run next on cs, creating it
// (and its linger timer, when nothing runs) if needed.
func (c *Coalescer) scheduleLocked(cs *connState) *observationPass {
	if cs.next != nil {
		return cs.next
	}
	cs.next = &observationPass{waiters: make(map[types.NamespacedName]struct{}), watchers: make(map[ConnectionOwner]struct{})}
	if cs.running == nil {
		c.wg.Add(1)
		cs.timer = time.AfterFunc(c.opts.Linger, func() {
			defer c.wg.Done()
			c.mu.Lock()
			defer c.mu.Unlock()
			cs.timer = nil
			c.launchLocked(cs)
		})
	}
	return cs.next
}

// launchLocked starts cs.next with every target registered on cs.
func (c *Coalescer) launchLocked(cs *connState) {
	if c.closed || cs.next == nil || cs.running != nil {
		return
	}
	p := cs.next
	cs.next = nil
	if c.conns[cs.key] != cs || (len(cs.targets) == 0 && len(cs.watchers) == 0) {
		c.maybeRetireLocked(cs)
		return
	}
	p.discover = cs.discovery()
	p.started = c.opts.now()
	p.targets = make(map[string]kafka.Target, len(cs.targets))
	keys := make([]string, 0, len(cs.targets))
	for tk, ts := range cs.targets {
		p.targets[tk] = ts.target
		keys = append(keys, tk)
	}
	slices.Sort(keys)
	targets := make([]kafka.Target, 0, len(keys))
	for _, tk := range keys {
		targets = append(targets, p.targets[tk])
	}
	cs.running = p
	c.wg.Add(1)
	go c.runPass(cs, p, keys, targets)
}

func (c *Coalescer) runPass(cs *connState, p *observationPass, keys []string, targets []kafka.Target) {
	defer c.wg.Done()
	start := c.opts.now()
	ctx, cancel := context.WithTimeout(c.ctx, c.opts.PassTimeout)
	co := c.observer.ObserveCluster(ctx, cs.conn, kafka.ClusterRequest{Targets: targets, Discover: p.discover,
		Deliver: func(i int, obs proof.Observation) { c.deliver(cs, p, keys[i], obs) }})
	cancel()
	results := co.Observations

	c.mu.Lock()
	done := c.opts.now()
	if len(results) == len(keys) {
		for i, tk := range keys {
			// A live check that began after this pass may have ended
			// first: the cache keeps the observation that began last,
			// never moving back in time.
			if ts := cs.targets[tk]; ts != nil && (!ts.has || !p.started.Before(ts.started)) {
				ts.has, ts.obs, ts.at, ts.started = true, results[i], done, p.started
			}
		}
	}
	co.Observations = nil
	cs.cluster, cs.clusterAt, cs.clusterStart, cs.hasView, cs.discovered = co, done, p.started, true, p.discover != nil
	cs.running = nil
	if cs.next != nil {
		// Requests that came in while this pass ran: serve them now, with
		// one pass, without another linger.
		c.launchLocked(cs)
	}
	c.maybeRetireLocked(cs)
	notify := c.notify
	clusterNotify := make(map[string]func(ConnectionOwner), len(c.clusterNotify))
	for k, fn := range c.clusterNotify {
		clusterNotify[k] = fn
	}
	c.mu.Unlock()

	c.log.V(1).Info("observed Kafka", "connection", cs.conn.String(),
		"targets", len(targets), "discovery", p.discover != nil, "discovered", len(co.Discovered),
		"waiting", len(p.waiters)+len(p.watchers), "took", done.Sub(start).String())
	if notify != nil {
		for o := range p.waiters {
			notify(o)
		}
	}
	for o := range p.watchers {
		if fn := clusterNotify[o.Kind]; fn != nil {
			fn(o)
		}
	}
}

// deliver caches one target's observation as soon as the pass has it and
// notifies the owners waiting for that target, before the pass ends: a
// target whose business cursor is slow to read holds back no neighbour.
func (c *Coalescer) deliver(cs *connState, p *observationPass, tk string, obs proof.Observation) {
	c.mu.Lock()
	var ready []types.NamespacedName
	if ts := cs.targets[tk]; ts != nil {
		ts.has, ts.obs, ts.at, ts.started = true, obs, c.opts.now(), p.started
		for o := range p.waiters {
			if cs.owners[o] == tk {
				ready = append(ready, o)
				delete(p.waiters, o) // notified once, now
			}
		}
	}
	notify := c.notify
	c.mu.Unlock()
	if notify != nil {
		for _, o := range ready {
			notify(o)
		}
	}
}

// targetKey identifies a target: its group, its sorted, deduplicated
// topics, whether it reads __consumer_offsets, and its business cursor
// (the cursor's own key: database, query and group, no secrets).
func targetKey(t kafka.Target) string {
	n := normalizeTarget(t)
	k := n.Group + "\x00" + strings.Join(n.Topics, "\x00")
	if n.ReadOffsetsTopic {
		k += "\x00\x01offsets-topic"
	}
	if n.Cursor != nil {
		k += "\x00\x02cursor\x00" + n.Cursor.Key()
	}
	return k
}

func normalizeTarget(t kafka.Target) kafka.Target {
	topics := slices.Clone(t.Topics)
	slices.Sort(topics)
	return kafka.Target{Group: t.Group, Topics: slices.Compact(topics), ReadOffsetsTopic: t.ReadOffsetsTopic, Cursor: t.Cursor}
}
