package webhook

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
)

// selectorCache keeps each policy's parsed spec.selector, keyed by UID and
// valid for one generation (spec changes move it; the reconciler's status
// writes, which move resourceVersion every check, do not), so the hot path
// matches labels without
// parsing or allocating. Entries of deleted policies are dropped by forget
// (Setup wires it to the informer's delete events).
type selectorCache struct {
	mu sync.RWMutex
	m  map[types.UID]parsedSelector
}

type parsedSelector struct {
	generation int64
	selector   labels.Selector
	err        error
}

func newSelectorCache() *selectorCache {
	return &selectorCache{m: make(map[types.UID]parsedSelector)}
}

// selector returns the policy's parsed selector, parsing it at most once
// per generation.
func (c *selectorCache) selector(p *rgv1.ConsumerRetentionPolicy) (labels.Selector, error) {
	if p.UID == "" { // not from an API server (unit tests): nothing to key on
		return metav1.LabelSelectorAsSelector(&p.Spec.Selector)
	}
	c.mu.RLock()
	e, ok := c.m[p.UID]
	c.mu.RUnlock()
	if ok && e.generation == p.Generation {
		return e.selector, e.err
	}
	sel, err := metav1.LabelSelectorAsSelector(&p.Spec.Selector)
	c.mu.Lock()
	c.m[p.UID] = parsedSelector{generation: p.Generation, selector: sel, err: err}
	c.mu.Unlock()
	return sel, err
}

// forget drops a deleted policy's entry.
func (c *selectorCache) forget(uid types.UID) {
	c.mu.Lock()
	delete(c.m, uid)
	c.mu.Unlock()
}

func (c *selectorCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}

// matchPolicies returns the policies whose selector matches the new pod
// template's labels or the old one's (for a CREATE, pass the new labels
// twice): a template change that drops the selected label still meets the
// policy that guarded it. policies are the
// namespace's policies (the caller lists them by namespace); a policy whose
// selector does not parse is reported in invalid and matches nothing (the
// API server's schema makes this rare; the reconciler reports it on the
// policy).
func matchPolicies(sc *selectorCache, policies []*rgv1.ConsumerRetentionPolicy, cur, old map[string]string) (matched []*rgv1.ConsumerRetentionPolicy, invalid []*rgv1.ConsumerRetentionPolicy) {
	for _, p := range policies {
		sel, err := sc.selector(p)
		if err != nil {
			invalid = append(invalid, p)
			continue
		}
		if sel.Empty() {
			// An empty selector would match every workload; the CRD's CEL
			// refuses it, and the guard does not widen itself on its own.
			continue
		}
		if sel.Matches(labels.Set(cur)) || sel.Matches(labels.Set(old)) {
			matched = append(matched, p)
		}
	}
	return matched, invalid
}
