package controllers

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// Events of connections: one per change of Ready, never one per check.
const (
	// EventReasonConnected: Ready became True (first observation, or
	// recovered).
	EventReasonConnected = "Connected"
	// EventActionObserve is the events.k8s.io action of a connection's
	// events.
	EventActionObserve = "Observe"
)

// lastReady remembers the Ready status this process last saw per
// connection (by UID), so each change records one event.
type lastReady struct {
	mu sync.Mutex
	m  map[types.NamespacedName]uidReady
}

type uidReady struct {
	uid    types.UID
	status metav1.ConditionStatus
	reason string
}

// transition records ready and returns the event its change deserves, or
// nil: Normal Connected when it becomes True, Warning with its reason when
// it becomes False (a spec problem, the cluster unreachable, credentials
// refused). Unknown (pending) records nothing.
func (l *lastReady) transition(key types.NamespacedName, uid types.UID, ready metav1.Condition) *eventSpec {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = make(map[types.NamespacedName]uidReady)
	}
	prev, seen := l.m[key]
	if seen && prev.uid != uid {
		seen = false
	}
	if ready.Status == metav1.ConditionUnknown {
		return nil
	}
	l.m[key] = uidReady{uid: uid, status: ready.Status, reason: ready.Reason}
	if seen && prev.status == ready.Status && prev.reason == ready.Reason {
		return nil
	}
	if ready.Status == metav1.ConditionTrue {
		if seen && prev.status == metav1.ConditionTrue {
			return nil
		}
		return &eventSpec{Type: corev1.EventTypeNormal, Reason: EventReasonConnected, Note: proof.Truncate(ready.Message, maxEventNote)}
	}
	return &eventSpec{Type: corev1.EventTypeWarning, Reason: ready.Reason, Note: proof.Truncate(ready.Message, maxEventNote)}
}

func (l *lastReady) forget(key types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, key)
}
