package coalesce

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// A connection's scheduler: the linger that gathers requests into one
// pass, the pass over every registered target, and the live single flight
// of ObserveNow. Each step holds only its accessor's lock, and notifies
// after releasing it.

// observationPass is one pass over a connection, scheduled or running.
type observationPass struct {
	targets map[string]kafka.Target // set at launch: every target registered then
	waiters map[types.NamespacedName]struct{}
	// waiting: the waiters by the target they waited for (deliver
	// notifies a target's without going through every waiter).
	waiting  map[string][]types.NamespacedName
	watchers map[ConnectionOwner]struct{} // connection owners waiting for it
	discover *kafka.Discovery             // set at launch
	started  time.Time                    // set at launch
	seq      uint64                       // set at launch: which of the connection's passes

	// What the cache keeps of it (targetState.keeps, keepLocked): the
	// targets it delivered unbuilt, how many still keep it, whether it has
	// ended (delivered every target) and whether what is left is being
	// built.
	delivered, kept int
	ended, building bool
}

// wait records owner as waiting for p's observation of target tk.
func (p *observationPass) wait(owner types.NamespacedName, tk string) {
	if _, ok := p.waiters[owner]; ok {
		return
	}
	p.waiters[owner] = struct{}{}
	if p.waiting == nil {
		p.waiting = make(map[string][]types.NamespacedName)
	}
	p.waiting[tk] = append(p.waiting[tk], owner)
}

// livePass is one ObserveNow pass, shared by its concurrent callers.
type livePass struct {
	done chan struct{}
	obs  proof.Observation
}

// scheduleLocked returns the pass that will run next, creating it (and its
// linger, when nothing runs) if needed; nil once the Coalescer is closed.
func (a *connAccessor) scheduleLocked() *observationPass {
	if a.next != nil {
		return a.next
	}
	if a.c.ctx.Err() != nil {
		return nil
	}
	a.next = &observationPass{waiters: make(map[types.NamespacedName]struct{}), watchers: make(map[ConnectionOwner]struct{})}
	if a.running == nil {
		a.c.wg.Add(1)
		a.timer = time.AfterFunc(a.c.opts.Linger, func() {
			defer a.c.wg.Done()
			a.mu.Lock()
			a.timer = nil
			a.launchLocked()
			a.mu.Unlock()
			a.c.retireIfIdle(a)
		})
	}
	return a.next
}

// launchLocked starts the scheduled pass with every target registered.
func (a *connAccessor) launchLocked() {
	if a.c.ctx.Err() != nil || a.retired || a.next == nil || a.running != nil {
		return
	}
	p := a.next
	a.next = nil
	if len(a.targets) == 0 && len(a.watchers) == 0 {
		return // the registry retires the accessor
	}
	p.discover = a.discoveryLocked()
	p.started = a.c.opts.now()
	a.passes++
	p.seq = a.passes
	p.targets = make(map[string]kafka.Target, len(a.targets))
	keys := make([]string, 0, len(a.targets))
	for tk, ts := range a.targets {
		p.targets[tk] = ts.target
		keys = append(keys, tk)
	}
	slices.Sort(keys)
	targets := make([]kafka.Target, 0, len(keys))
	for _, tk := range keys {
		targets = append(targets, p.targets[tk])
	}
	a.running = p
	a.c.wg.Add(1)
	go a.runPass(p, keys, targets)
}

func (a *connAccessor) runPass(p *observationPass, keys []string, targets []kafka.Target) {
	defer a.c.wg.Done()
	start := a.c.opts.now()
	ctx, cancel := context.WithTimeout(a.c.ctx, a.c.opts.PassTimeout)
	co := a.c.observer.ObserveCluster(ctx, a.conn, kafka.ClusterRequest{Targets: targets, Discover: p.discover,
		Deliver: func(i int, obs kafka.Observed) { a.deliver(p, keys[i], obs) }})
	cancel()
	results := co.Observations

	a.mu.Lock()
	done := a.c.opts.now()
	if len(results) == len(keys) {
		// An observer that answered without delivering (kafka.Observer
		// delivers every target and returns none here).
		for i, tk := range keys {
			// A live check that began after this pass may have ended
			// first: the cache keeps the observation that began last,
			// never moving back in time. What deliver cached (and its
			// owners may have read, and the cache dropped) stays as is.
			if ts := a.targets[tk]; ts != nil && ts.pass != p.seq && !ts.olderThan(p.started) {
				a.setLocked(ts, kafka.ObservedAs(results[i]), nil, done, p.started, p.seq)
			}
		}
	}
	co.Observations = nil
	p.ended = true
	a.keepLocked(p)
	a.cluster, a.clusterAt, a.clusterStart, a.hasView, a.discovered = co, done, p.started, true, p.discover != nil
	a.running = nil
	if a.next != nil {
		// Requests that came in while this pass ran: serve them now, with
		// one pass, without another linger.
		a.launchLocked()
	}
	a.mu.Unlock()
	a.c.retireIfIdle(a)

	a.c.log.V(1).Info("observed Kafka", "connection", a.conn.String(),
		"targets", len(targets), "discovery", p.discover != nil, "discovered", len(co.Discovered),
		"waiting", len(p.waiters)+len(p.watchers), "took", done.Sub(start).String())
	// p is no longer written: deliver ran inside ObserveCluster.
	a.c.notifyPolicies(slices.Collect(maps.Keys(p.waiters)))
	a.c.notifyWatchers(slices.Collect(maps.Keys(p.watchers)))
}

// deliver caches one target's observation as soon as the pass has it and
// notifies the owners waiting for that target, before the pass ends: a
// target whose business cursor is slow to read holds back no neighbour.
func (a *connAccessor) deliver(p *observationPass, tk string, obs kafka.Observed) {
	a.mu.Lock()
	var ready []types.NamespacedName
	if ts := a.targets[tk]; ts != nil && !ts.olderThan(p.started) {
		a.setLocked(ts, obs, p, a.c.opts.now(), p.started, p.seq)
		for _, o := range p.waiting[tk] {
			// An owner that moved to another target since is notified
			// when the pass ends.
			if _, waits := p.waiters[o]; waits && a.owners[o].tk == tk {
				ready = append(ready, o)
				delete(p.waiters, o) // notified once, now
			}
		}
		delete(p.waiting, tk)
	}
	a.mu.Unlock()
	a.c.notifyPolicies(ready)
}

// observeLive returns the live pass of the normalized target tk, joining
// the one running or starting one in a free live slot; when every slot is
// busy it waits for one until shortly before ctx ends, and then returns a
// *BusyError. It returns nil when the accessor was retired (ask the
// registry again), and ErrCoalescerClosed when the Coalescer closed
// meanwhile.
func (a *connAccessor) observeLive(ctx context.Context, tk string, target kafka.Target) (*livePass, error) {
	a.mu.Lock()
	if a.retired {
		a.mu.Unlock()
		return nil, nil
	}
	if lp, ok, err := a.tryLiveLocked(tk, target); ok || err != nil {
		a.mu.Unlock()
		return lp, err
	}
	a.mu.Unlock()
	wait, cancel := slotWait(ctx)
	defer cancel()
	select {
	case a.slots <- struct{}{}:
	case <-wait.Done():
		if err := ctx.Err(); errors.Is(err, context.Canceled) {
			return nil, err // the caller went away: not a busy connection
		}
		return nil, &BusyError{Limit: cap(a.slots)}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch lp := a.live[tk]; {
	case a.retired:
		<-a.slots
		return nil, nil
	case lp != nil:
		// Another caller started this target's pass while we waited.
		<-a.slots
		return lp, nil
	}
	return a.startLiveLocked(tk, target)
}

// slotWait is the context a wait for a live slot ends with: ctx, less a
// tenth of what is left of it (at most 50ms), so that a caller racing its
// own deadline (the webhook) gets the BusyError, which says why, before
// its deadline, which does not.
func slotWait(ctx context.Context) (context.Context, context.CancelFunc) {
	d, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	margin := min(time.Until(d)/10, 50*time.Millisecond)
	return context.WithDeadline(ctx, d.Add(-margin))
}

// tryLiveLocked returns the live pass of the normalized target tk: the
// one running, or one it starts in a free live slot. ok is false when
// every slot is busy.
func (a *connAccessor) tryLiveLocked(tk string, target kafka.Target) (lp *livePass, ok bool, err error) {
	if lp := a.live[tk]; lp != nil {
		return lp, true, nil
	}
	select {
	case a.slots <- struct{}{}:
	default:
		return nil, false, nil
	}
	lp, err = a.startLiveLocked(tk, target)
	return lp, true, err
}

// startLiveLocked starts the live pass of tk in the slot the caller took
// (runLive gives it back), or gives the slot back once the Coalescer is
// closed.
func (a *connAccessor) startLiveLocked(tk string, target kafka.Target) (*livePass, error) {
	if a.c.ctx.Err() != nil {
		<-a.slots
		return nil, ErrCoalescerClosed
	}
	lp := &livePass{done: make(chan struct{})}
	a.live[tk] = lp
	a.c.wg.Add(1)
	go a.runLive(tk, target, lp)
	return lp, nil
}

func (a *connAccessor) runLive(tk string, target kafka.Target, lp *livePass) {
	defer a.c.wg.Done()
	started := a.c.opts.now()
	ctx, cancel := context.WithTimeout(a.c.ctx, a.c.opts.PassTimeout)
	obs := a.c.observer.ObserveCluster(ctx, a.conn, kafka.ClusterRequest{Targets: []kafka.Target{target}}).Observations
	cancel()
	if len(obs) == 1 {
		lp.obs = obs[0]
	}

	a.mu.Lock()
	delete(a.live, tk)
	<-a.slots
	var owners []types.NamespacedName
	if ts := a.targets[tk]; ts != nil && len(obs) == 1 && !ts.olderThan(started) {
		a.setLocked(ts, kafka.ObservedAs(lp.obs), nil, a.c.opts.now(), started, 0)
		for o, os := range a.owners {
			if os.tk == tk {
				owners = append(owners, o)
			}
		}
	}
	a.mu.Unlock()
	close(lp.done)
	a.c.retireIfIdle(a) // a live check on a connection nobody registered leaves nothing behind
	a.c.notifyPolicies(owners)
}
