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
	Observe(ctx context.Context, conn kafka.Connection, targets []kafka.Target) []proof.Observation
	Forget(conn kafka.Connection)
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

	mu     sync.Mutex
	closed bool
	conns  map[string]*connState // by Connection.Key()
	owners map[types.NamespacedName]registration
	live   map[string]*livePass // ObserveNow single flight, by connection and target key
	notify func(types.NamespacedName)
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
}

type targetState struct {
	target kafka.Target
	refs   int
	has    bool
	obs    proof.Observation
	at     time.Time // when the pass that produced obs completed
}

type observationPass struct {
	targets map[string]kafka.Target // set at launch: every target registered then
	waiters map[types.NamespacedName]struct{}
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
		live:     make(map[string]*livePass),
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
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return proof.Observation{}, 0, false
	}
	cs, tk := c.registerLocked(owner, conn, target)
	ts := cs.targets[tk]
	if ts.has {
		if age := c.opts.now().Sub(ts.at); age <= maxAge {
			return ts.obs, max(age, 0), true
		}
	}
	if r := cs.running; r != nil {
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
	ctx, cancel := context.WithTimeout(c.ctx, c.opts.PassTimeout)
	obs := c.observer.Observe(ctx, conn, []kafka.Target{target})
	cancel()
	if len(obs) == 1 {
		lp.obs = obs[0]
	}

	c.mu.Lock()
	delete(c.live, lk)
	var owners []types.NamespacedName
	if cs := c.conns[key]; cs != nil && len(obs) == 1 {
		if ts := cs.targets[tk]; ts != nil {
			ts.has, ts.obs, ts.at = true, lp.obs, c.opts.now()
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
	cs := c.conns[key]
	if cs == nil {
		cs = &connState{
			key:     key,
			conn:    conn,
			owners:  make(map[types.NamespacedName]string),
			targets: make(map[string]*targetState),
		}
		c.conns[key] = cs
	}
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
	if len(cs.owners) > 0 || cs.running != nil || c.conns[cs.key] != cs {
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
	cs.next = &observationPass{waiters: make(map[types.NamespacedName]struct{})}
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
	if c.conns[cs.key] != cs || len(cs.targets) == 0 {
		c.maybeRetireLocked(cs)
		return
	}
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
	results := c.observer.Observe(ctx, cs.conn, targets)
	cancel()

	c.mu.Lock()
	done := c.opts.now()
	if len(results) == len(keys) {
		for i, tk := range keys {
			if ts := cs.targets[tk]; ts != nil {
				ts.has, ts.obs, ts.at = true, results[i], done
			}
		}
	}
	cs.running = nil
	if cs.next != nil {
		// Requests that came in while this pass ran: serve them now, with
		// one pass, without another linger.
		c.launchLocked(cs)
	}
	c.maybeRetireLocked(cs)
	notify := c.notify
	c.mu.Unlock()

	c.log.V(1).Info("observed Kafka for policies", "connection", cs.conn.String(),
		"targets", len(targets), "waiting", len(p.waiters), "took", done.Sub(start).String())
	if notify != nil {
		for o := range p.waiters {
			notify(o)
		}
	}
}

// targetKey identifies a target: its group, its sorted, deduplicated
// topics, and whether it reads __consumer_offsets.
func targetKey(t kafka.Target) string {
	n := normalizeTarget(t)
	k := n.Group + "\x00" + strings.Join(n.Topics, "\x00")
	if n.ReadOffsetsTopic {
		k += "\x00\x01offsets-topic"
	}
	return k
}

func normalizeTarget(t kafka.Target) kafka.Target {
	topics := slices.Clone(t.Topics)
	slices.Sort(topics)
	return kafka.Target{Group: t.Group, Topics: slices.Compact(topics), ReadOffsetsTopic: t.ReadOffsetsTopic}
}
