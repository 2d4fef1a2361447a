package controllers

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// pendingRecheck is the value of the retentionguard.io/requestedAt
// annotation when a status has not answered it yet, else "".
func pendingRecheck(annotations map[string]string, handled string) string {
	v := annotations[rgv1.RequestedAtAnnotation]
	if v == "" || v == handled {
		return ""
	}
	return v
}

// rechecks remembers since when each object's pending requestedAt value
// has been seen, so that only an observation started after it answers it
// (the Coalescer's RequestSince).
type rechecks struct {
	mu sync.Mutex
	m  map[string]recheck
}

type recheck struct {
	value string
	since time.Time
}

// since returns when value was first seen for key (now, the first time).
func (r *rechecks) since(key string, value string, now time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = make(map[string]recheck)
	}
	if c, ok := r.m[key]; ok && c.value == value {
		return c.since
	}
	r.m[key] = recheck{value: value, since: now}
	return now
}

func (r *rechecks) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, key)
}

func policyRecheckKey(k types.NamespacedName) string { return "policy/" + k.String() }
