package coalesce

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/retentionguard/retention-guard/internal/kafka"
)

// connAccessor is one Kafka connection's share of the Coalescer (Cluster
// API's clusterAccessor): who uses the connection and what they need, the
// scheduler of its passes, and the cache of their results, under its own
// lock. Passes, lingers and notifications of one connection never wait on
// another's.
type connAccessor struct {
	c    *Coalescer // the observer, the options, the lifetime (ctx, wg) and the notifications
	key  string     // conn.Key()
	conn kafka.Connection

	mu sync.Mutex
	// retired: dropped from the registry; whoever still holds the
	// accessor asks the registry again.
	retired bool
	// registered: a policy or a connection owner registered since the
	// pooled client was last forgotten.
	registered bool

	owners   map[types.NamespacedName]ownerState  // policy → its target's key, and what it read of it
	targets  map[string]*targetState              // by target key
	watchers map[ConnectionOwner]*kafka.Discovery // connection owners watching the cluster, each with the discovery it wants (nil: none)

	// The scheduler: at most one pass runs; next gathers the requests
	// for the one after (lingering, or queued behind running).
	running *observationPass
	next    *observationPass
	timer   *time.Timer // the linger of next, when nothing runs

	// The cluster view of the last pass (per-target observations
	// dropped), when it began and completed, and whether it holds a
	// discovery.
	cluster      kafka.ClusterObservation
	clusterAt    time.Time
	clusterStart time.Time
	hasView      bool
	discovered   bool

	live  map[string]*livePass // ObserveNow single flight, by target key
	slots chan struct{}        // one value per live pass running: at most Options.LiveChecks

	passes uint64 // passes launched, numbering them
}

// targetState is one registered target and its cached observation.
//
// The cache holds an observation only until every policy registered on
// the target has reconciled with it (issue 26): the proof is then in each
// status, and 24 partitions of offsets and timestamps per policy would
// otherwise stay in the heap until the next pass replaces them. When and
// how it was taken (at, started) stay: a policy that reconciles again
// before its next check (a spec, CronJob, Secret or namespace change)
// would have been served the dropped observation, and is served a fresh
// one of its target alone (the live single flight) rather than a pass of
// the whole connection.
//
// A pass's observation is cached as the pass delivered it (issue 34): a
// kafka.Observed, built when an owner reads it, which keeps the pass's
// own state (about 400 bytes a partition) rather than an observation per
// target (about 650). So the cache keeps, per connection, about one
// pass's state until its targets are read or replaced by the next pass's;
// and once most of a pass's targets have been read, those left unread
// (a policy with a longer checkInterval than its neighbours, say) are
// built and the pass let go (keepLocked).
type targetState struct {
	target  kafka.Target
	refs    int
	has     bool           // obs is held
	obs     kafka.Observed // the last observation, while has
	at      time.Time      // when the pass that produced the last observation completed (zero: none yet)
	started time.Time      // when it started
	seq     uint64         // counts the observations cached, so an owner knows which it read
	unread  int            // registered owners that have not read obs
	pass    uint64         // the pass that delivered the last observation (0: a live check)
	// keeps: the pass whose state obs keeps, unbuilt; nil when obs is
	// built (a live check's) or none is held.
	keeps *observationPass
}

// ownerState is one policy's registration: its target and the last of
// that target's observations (targetState.seq) it was served.
type ownerState struct {
	tk   string
	read uint64
}

// setLocked caches obs as ts's observation, for every registered owner to
// read; keeps is the pass whose state obs keeps unbuilt (nil: obs is
// built).
func (a *connAccessor) setLocked(ts *targetState, obs kafka.Observed, keeps *observationPass, at, started time.Time, pass uint64) {
	a.releaseLocked(ts)
	ts.has, ts.obs, ts.at, ts.started, ts.pass = true, obs, at, started, pass
	ts.seq++
	ts.unread = ts.refs
	if keeps != nil {
		ts.keeps = keeps
		keeps.kept++
		keeps.delivered++
	}
}

// dropIfReadLocked drops ts's observation once every registered owner
// has read it.
func (a *connAccessor) dropIfReadLocked(ts *targetState) {
	if ts.has && ts.unread <= 0 {
		a.releaseLocked(ts)
		ts.has, ts.obs = false, kafka.Observed{}
	}
}

// releaseLocked lets go of the pass ts's observation keeps, if any (it is
// dropped, replaced, or its target forgotten), and builds what the pass's
// other targets still keep of it once fewer than half of them do: built,
// those cost less than the pass they keep whole (keepLocked).
func (a *connAccessor) releaseLocked(ts *targetState) {
	p := ts.keeps
	if p == nil {
		return
	}
	ts.keeps = nil
	p.kept--
	a.keepLocked(p)
}

// keepLocked builds, in a goroutine of its own (building takes no lock),
// the observations that still keep pass p once p has delivered every
// target and fewer than half of them still keep it: a built observation
// costs about 1.6 times its target's share of the pass's state
// (kafka.BenchmarkPassKeptForItsTargets), so building fewer than half of
// them costs less than the pass, and the pass is freed. Not while another
// pass runs: that one replaces them.
func (a *connAccessor) keepLocked(p *observationPass) {
	if !p.ended || p.building || p.kept <= 0 || 2*p.kept >= p.delivered || a.c.ctx.Err() != nil {
		return
	}
	if a.running != nil {
		// The pass running replaces them soon; building them now would
		// add to what that pass holds at its peak.
		return
	}
	p.building = true
	a.c.wg.Add(1)
	go a.build(p)
}

// build replaces each cached observation that keeps pass p with one built,
// unless it changed meanwhile.
func (a *connAccessor) build(p *observationPass) {
	defer a.c.wg.Done()
	type keeper struct {
		ts  *targetState
		seq uint64
		obs kafka.Observed
	}
	var keepers []keeper
	a.mu.Lock()
	for _, ts := range a.targets {
		if ts.keeps == p {
			keepers = append(keepers, keeper{ts, ts.seq, ts.obs})
		}
	}
	a.mu.Unlock()
	built := make([]kafka.Observed, len(keepers))
	for i, k := range keepers {
		built[i] = kafka.ObservedAs(k.obs.Observation())
	}
	a.mu.Lock()
	for i, k := range keepers {
		if k.ts.keeps == p && k.ts.seq == k.seq {
			k.ts.obs, k.ts.keeps = built[i], nil
			p.kept--
		}
	}
	a.mu.Unlock()
}

// olderThan says whether an observation that started at started is older
// than the target's last one (which the cache never moves back from).
func (ts *targetState) olderThan(started time.Time) bool {
	return !ts.at.IsZero() && started.Before(ts.started)
}

func newConnAccessor(c *Coalescer, key string, conn kafka.Connection) *connAccessor {
	return &connAccessor{
		c:        c,
		key:      key,
		conn:     conn,
		owners:   make(map[types.NamespacedName]ownerState),
		targets:  make(map[string]*targetState),
		watchers: make(map[ConnectionOwner]*kafka.Discovery),
		live:     make(map[string]*livePass),
		slots:    make(chan struct{}, c.opts.LiveChecks),
	}
}

// request registers owner's target and answers it from the cache, or
// joins the running pass when that covers the target and began no earlier
// than notBefore, or joins the scheduled pass; else, when the cache
// dropped an observation owner would have been served (every owner had
// read it), it observes the target alone in a free live slot, and
// otherwise it schedules the next pass. ok is false when the accessor was retired: ask the registry
// again. The observation is built by the caller, outside the lock.
func (a *connAccessor) request(owner types.NamespacedName, target kafka.Target, maxAge time.Duration, notBefore time.Time) (obs kafka.Observed, age time.Duration, fresh, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.retired {
		return kafka.Observed{}, 0, false, false
	}
	tk := a.registerLocked(owner, target)
	ts := a.targets[tk]
	wouldServe := !ts.at.IsZero() && !ts.started.Before(notBefore) && a.c.opts.now().Sub(ts.at) <= maxAge
	if wouldServe && ts.has {
		if o := a.owners[owner]; o.read != ts.seq {
			o.read = ts.seq
			a.owners[owner] = o
			ts.unread--
		}
		obs, age := ts.obs, max(a.c.opts.now().Sub(ts.at), 0)
		a.dropIfReadLocked(ts)
		return obs, age, true, true
	}
	if r := a.running; r != nil && !r.started.Before(notBefore) {
		if _, covered := r.targets[tk]; covered {
			r.wait(owner, tk)
			return kafka.Observed{}, 0, false, true
		}
	}
	if wouldServe && a.next == nil {
		// Read and dropped: this target alone, not every target of the
		// connection, when a live slot is free (its owners are notified
		// when it completes); else the next pass serves it.
		if _, ok, _ := a.tryLiveLocked(tk, ts.target); ok {
			return kafka.Observed{}, 0, false, true
		}
	}
	if p := a.scheduleLocked(); p != nil {
		p.wait(owner, tk)
	}
	return kafka.Observed{}, 0, false, true
}

// requestCluster registers owner as watching the cluster, with discovery
// d, and answers it from the last view, or joins the running pass, or
// schedules the next one. ok is false when the accessor was retired.
func (a *connAccessor) requestCluster(owner ConnectionOwner, d *kafka.Discovery, maxAge time.Duration, notBefore time.Time) (co kafka.ClusterObservation, age time.Duration, fresh, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.retired {
		return kafka.ClusterObservation{}, 0, false, false
	}
	a.watchers[owner] = d
	a.registered = true
	if a.hasView && (d == nil || a.discovered) && !a.clusterStart.Before(notBefore) {
		if age := a.c.opts.now().Sub(a.clusterAt); age <= maxAge {
			return a.cluster, max(age, 0), true, true
		}
	}
	if r := a.running; r != nil && (d == nil || r.discover != nil) && !r.started.Before(notBefore) {
		r.watchers[owner] = struct{}{}
		return kafka.ClusterObservation{}, 0, false, true
	}
	if p := a.scheduleLocked(); p != nil {
		p.watchers[owner] = struct{}{}
	}
	return kafka.ClusterObservation{}, 0, false, true
}

// registerLocked records owner's target, moving owner off the target it
// had, and returns the target's key.
func (a *connAccessor) registerLocked(owner types.NamespacedName, target kafka.Target) string {
	tk := targetKey(target)
	if prev, ok := a.owners[owner]; ok {
		if prev.tk == tk {
			return tk
		}
		a.unregisterLocked(owner)
	}
	ts := a.targets[tk]
	if ts == nil {
		ts = &targetState{target: normalizeTarget(target)}
		a.targets[tk] = ts
	}
	ts.refs++
	if ts.has {
		ts.unread++ // a newcomer has not read it
	}
	a.owners[owner] = ownerState{tk: tk}
	a.registered = true
	return tk
}

// unregister forgets owner's target.
func (a *connAccessor) unregister(owner types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.unregisterLocked(owner)
}

func (a *connAccessor) unregisterLocked(owner types.NamespacedName) {
	o, ok := a.owners[owner]
	if !ok {
		return
	}
	delete(a.owners, owner)
	if ts := a.targets[o.tk]; ts != nil {
		if ts.refs--; ts.refs <= 0 {
			a.releaseLocked(ts)
			delete(a.targets, o.tk)
			return
		}
		if ts.has && o.read != ts.seq {
			ts.unread--
			a.dropIfReadLocked(ts)
		}
	}
}

// unwatch forgets a connection owner.
func (a *connAccessor) unwatch(owner ConnectionOwner) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.watchers, owner)
}

// retireIfIdle tells the registry, once nobody is registered and no pass
// runs, to forget the pooled client (when someone had registered since it
// was last forgotten) and to drop the accessor (when no live check runs on
// it either; a live check's callers keep sharing its pass). The scheduled
// pass, which nobody waits for any more, is dropped with its linger.
func (a *connAccessor) retireIfIdle() (forget, drop bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.retired || len(a.owners) > 0 || len(a.watchers) > 0 || a.running != nil {
		return false, false
	}
	a.stopLingerLocked()
	a.next = nil
	if forget = a.registered; forget {
		// What the forgotten client read is not served to whoever
		// registers next.
		a.registered = false
		a.cluster, a.clusterAt, a.clusterStart, a.hasView, a.discovered = kafka.ClusterObservation{}, time.Time{}, time.Time{}, false, false
	}
	if len(a.live) > 0 {
		return forget, false
	}
	a.retired = true
	return forget, true
}

// stopLinger stops the linger of the scheduled pass, if it has not fired.
func (a *connAccessor) stopLinger() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stopLingerLocked()
}

func (a *connAccessor) stopLingerLocked() {
	if a.timer != nil && a.timer.Stop() {
		a.timer = nil
		a.c.wg.Done() // the linger that will not fire
	}
}

// discoveryLocked merges what the watchers want (discovery.go's rule).
func (a *connAccessor) discoveryLocked() *kafka.Discovery {
	return mergeDiscovery(a.watchers)
}
