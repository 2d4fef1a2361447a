// Package shard is a manager's share of the policies and connections when
// several managers split them by label (--watch-label-selector, Flux's
// model; docs/scaling.md): the selector, and the short stable name derived
// from it that labels the shard's heartbeat Leases and names its leader
// election.
package shard

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Shard is what one manager instance selects. The zero value (and a nil
// *Shard) selects everything: one manager, as without sharding.
type Shard struct {
	selector labels.Selector
	raw      string
	name     string
}

// Parse parses a Kubernetes label selector (the --watch-label-selector
// syntax: "retentionguard.io/shard=a", "retentionguard.io/shard notin
// (a,b)"). Empty: every object, no shard.
func Parse(raw string) (*Shard, error) {
	if raw == "" {
		return &Shard{}, nil
	}
	sel, err := labels.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%q is not a label selector: %w", raw, err)
	}
	if sel.Empty() {
		return &Shard{}, nil
	}
	// The canonical form: two spellings of one selector are one shard.
	canon := sel.String()
	sum := sha256.Sum256([]byte(canon))
	return &Shard{selector: sel, raw: canon, name: hex.EncodeToString(sum[:5])}, nil
}

// Sharded reports whether the shard selects by label.
func (s *Shard) Sharded() bool { return s != nil && s.selector != nil }

// Selector is the label selector; nil when not sharded.
func (s *Shard) Selector() labels.Selector {
	if !s.Sharded() {
		return nil
	}
	return s.selector
}

// String is the selector in its canonical form; "" when not sharded.
func (s *Shard) String() string {
	if !s.Sharded() {
		return ""
	}
	return s.raw
}

// Name is a short stable name of the selector (10 hex digits of its
// SHA-256), a valid label value and name suffix; "" when not sharded.
func (s *Shard) Name() string {
	if !s.Sharded() {
		return ""
	}
	return s.name
}

// Selects reports whether the shard owns an object with these labels.
func (s *Shard) Selects(l map[string]string) bool {
	return !s.Sharded() || s.selector.Matches(labels.Set(l))
}

// Owns reports whether the shard owns o.
func (s *Shard) Owns(o client.Object) bool { return s.Selects(o.GetLabels()) }

// Predicate passes the events of objects the shard owns (for an update:
// when the object before or after the change is owned, so an object
// leaving the shard is seen leaving).
func (s *Shard) Predicate() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return s.Owns(e.Object) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return s.Owns(e.Object) },
		GenericFunc: func(e event.GenericEvent) bool { return s.Owns(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return s.Owns(e.ObjectOld) || s.Owns(e.ObjectNew) },
	}
}

// SelectorAnnotation on a heartbeat Lease is the selector of the shard
// that renews it: the Lease vouches only for the policies it selects
// (Vouches).
const SelectorAnnotation = "retentionguard.io/shard-selector"

// parsed caches the selectors of Leases' annotations (a handful: one per
// shard) for Vouches, which runs per admission.
var parsed sync.Map // string -> labels.Selector, nil when unparsable

// Vouches reports whether a heartbeat Lease with this SelectorAnnotation
// (the Lease's annotations) may confirm the proof of a policy with these
// labels: a Lease without the annotation (an unsharded manager's) vouches
// for every policy; a shard's only for the policies it selects, so that a
// policy relabelled to another shard is no longer confirmed by its old
// shard's Lease (its proof is then as fresh as its checkedAt until the new
// shard names its own Lease). An unparsable annotation vouches for none.
func Vouches(leaseAnnotations, policyLabels map[string]string) bool {
	raw, ok := leaseAnnotations[SelectorAnnotation]
	if !ok || raw == "" {
		return true
	}
	v, ok := parsed.Load(raw)
	if !ok {
		sel, err := labels.Parse(raw)
		if err != nil {
			sel = nil
		}
		v, _ = parsed.LoadOrStore(raw, sel)
	}
	sel, _ := v.(labels.Selector)
	return sel != nil && sel.Matches(labels.Set(policyLabels))
}
