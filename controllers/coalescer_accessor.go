package controllers

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/proof"
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

	owners   map[types.NamespacedName]string      // policy → its target's key
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

	live map[string]*livePass // ObserveNow single flight, by target key
}

// targetState is one registered target and its cached observation.
type targetState struct {
	target  kafka.Target
	refs    int
	has     bool
	obs     proof.Observation
	at      time.Time // when the pass that produced obs completed
	started time.Time // when it started
}

func newConnAccessor(c *Coalescer, key string, conn kafka.Connection) *connAccessor {
	return &connAccessor{
		c:        c,
		key:      key,
		conn:     conn,
		owners:   make(map[types.NamespacedName]string),
		targets:  make(map[string]*targetState),
		watchers: make(map[ConnectionOwner]*kafka.Discovery),
		live:     make(map[string]*livePass),
	}
}

// request registers owner's target and answers it from the cache, or
// joins the running pass when that covers the target and began no earlier
// than notBefore, or schedules the next pass. ok is false when the
// accessor was retired: ask the registry again.
func (a *connAccessor) request(owner types.NamespacedName, target kafka.Target, maxAge time.Duration, notBefore time.Time) (obs proof.Observation, age time.Duration, fresh, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.retired {
		return proof.Observation{}, 0, false, false
	}
	tk := a.registerLocked(owner, target)
	ts := a.targets[tk]
	if ts.has && !ts.started.Before(notBefore) {
		if age := a.c.opts.now().Sub(ts.at); age <= maxAge {
			return ts.obs, max(age, 0), true, true
		}
	}
	if r := a.running; r != nil && !r.started.Before(notBefore) {
		if _, covered := r.targets[tk]; covered {
			r.waiters[owner] = struct{}{}
			return proof.Observation{}, 0, false, true
		}
	}
	if p := a.scheduleLocked(); p != nil {
		p.waiters[owner] = struct{}{}
	}
	return proof.Observation{}, 0, false, true
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
		if prev == tk {
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
	a.owners[owner] = tk
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
	tk, ok := a.owners[owner]
	if !ok {
		return
	}
	delete(a.owners, owner)
	if ts := a.targets[tk]; ts != nil {
		if ts.refs--; ts.refs <= 0 {
			delete(a.targets, tk)
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
