package controllers

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"

	"github.com/retentionguard/retention-guard/internal/writerule"
)

// A policy's first proof costs one API write (issue 26): many policies
// proven at once (an install, a restart after their statuses were
// cleared, a GitOps sync of hundreds) are bounded by the client's QPS,
// and today's second write per policy doubled the time to prove them all.
//
//   - The pending status (Reconciling=True, Ready=Unknown ProofPending) is
//     written only when the observation has not come writerule.PendingGrace after
//     the first reconcile that waits for it: the Coalescer usually serves
//     it within a pass (milliseconds to seconds), and the proof is then the
//     policy's first write. A pass that hangs (a broker that accepts
//     connections and never answers) still shows Reconciling after
//     the grace, for kstatus and Argo CD. Whether a pending status is owed
//     and held is the write rule's (writerule.OwesPending, ReasonPendingHeld).
//   - The Normal Proven event of a routine first proof has its own budget
//     (firstProofs.events): a person who applies a policy sees it, a burst
//     of thousands does not send thousands of events. Every event a person
//     acts on (Violated, Unknown, Recovered, loss) is never shed.

// firstProofs holds back the pending status of policies whose
// observation is on its way, and budgets first-proof events.
type firstProofs struct {
	mu sync.Mutex
	// waiting: the policies whose pending status is held; true once
	// writerule.PendingGrace has passed (the next reconcile writes it).
	waiting map[types.NamespacedName]bool
	// enqueue reconciles a policy (the reconciler's work queue); nil: the
	// pending status is never held.
	enqueue func(types.NamespacedName)
	grace   time.Duration // writerule.PendingGrace; tests shorten it
	// events is the budget of routine first-proof events: 100 at once,
	// then 10 per second.
	events *rate.Limiter
}

// setEnqueue points the end of a hold at the reconciler's work queue.
func (f *firstProofs) setEnqueue(fn func(types.NamespacedName)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.enqueue = fn
}

// hold says whether this reconcile, which found no observation and no
// spec problem (pending), should write nothing yet; a reconcile that is
// not pending (an observation or a spec problem came) ends the hold.
func (f *firstProofs) hold(key types.NamespacedName, pending bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !pending {
		delete(f.waiting, key)
		return false
	}
	if f.enqueue == nil {
		return false
	}
	expired, waiting := f.waiting[key]
	switch {
	case expired:
		return false
	case waiting:
		return true
	}
	if f.waiting == nil {
		f.waiting = make(map[types.NamespacedName]bool)
	}
	f.waiting[key] = false
	grace := f.grace
	if grace <= 0 {
		grace = writerule.PendingGrace
	}
	enqueue := f.enqueue
	time.AfterFunc(grace, func() {
		f.mu.Lock()
		_, still := f.waiting[key]
		if still {
			f.waiting[key] = true
		}
		f.mu.Unlock()
		if still {
			enqueue(key)
		}
	})
	return true
}

// forget drops a deleted policy's hold.
func (f *firstProofs) forget(key types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.waiting, key)
}

// event returns ev, or nil for a first-proof Proven event over its
// budget (the Ready condition and retentionguard_policy_verdict say the
// same).
func (f *firstProofs) event(ev *eventSpec) *eventSpec {
	if ev == nil || ev.Reason != EventReasonProven {
		return ev
	}
	f.mu.Lock()
	if f.events == nil {
		f.events = rate.NewLimiter(10, 100)
	}
	allow := f.events.Allow()
	f.mu.Unlock()
	if allow {
		return ev
	}
	return nil
}
