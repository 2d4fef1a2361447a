package workloads

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// generatedLabels are the labels Kubernetes adds to a Job's pod template
// (its selector's): they name one Job, never the consumers across runs.
var generatedLabels = []string{"controller-uid", "job-name", "batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name"}

// PolicySelector is the label selection (matchLabels) a policy guarding w
// selects its pod template with: the template labels w's own selector
// uses (spec.selector.matchLabels) for a Deployment, StatefulSet or
// Rollout; the template's labels without those Kubernetes generates for a
// Job or CronJob (and for a selector of matchExpressions only). Empty when
// the template has no label to select.
func PolicySelector(w *Workload) map[string]string {
	tmpl := w.Template.Labels
	out := map[string]string{}
	for k, v := range w.Selector {
		if tmpl[k] == v {
			out[k] = v
		}
	}
	if len(out) > 0 {
		return out
	}
	for k, v := range tmpl {
		if !slices.Contains(generatedLabels, k) {
			out[k] = v
		}
	}
	return out
}

// Selection is one policy's selector for a group's workloads in one
// namespace.
type Selection struct {
	Namespace string
	// MatchLabels selects the pod templates of Workloads; empty when they
	// have no label to select (NoLabels).
	MatchLabels map[string]string
	Workloads   []Ref
	// AlsoSelects are the namespace's other workloads the selector
	// selects too: a policy with it would guard them as well.
	AlsoSelects []Ref
}

// Selections lays out the policies a group's matches need: one per
// namespace — the workload's PolicySelector, or for several workloads the
// template labels they share when those select them and no other workload
// — else one per workload. A workload whose template has no label
// gets a Selection with empty MatchLabels.
func (idx *Index) Selections(matches []Match) []Selection {
	byNS := map[string][]Ref{}
	var namespaces []string
	for _, m := range matches {
		if _, ok := byNS[m.Workload.Namespace]; !ok {
			namespaces = append(namespaces, m.Workload.Namespace)
		}
		byNS[m.Workload.Namespace] = append(byNS[m.Workload.Namespace], m.Workload)
	}
	slices.Sort(namespaces)
	var out []Selection
	for _, ns := range namespaces {
		refs := byNS[ns]
		if len(refs) > 1 {
			if common := idx.commonLabels(refs); len(common) > 0 {
				if also := idx.alsoSelects(ns, common, refs); len(also) == 0 {
					out = append(out, Selection{Namespace: ns, MatchLabels: common, Workloads: refs})
					continue
				}
			}
		}
		for _, ref := range refs {
			w, _ := idx.Workload(ref)
			sel := PolicySelector(w)
			s := Selection{Namespace: ns, MatchLabels: sel, Workloads: []Ref{ref}}
			if len(sel) > 0 {
				s.AlsoSelects = idx.alsoSelects(ns, sel, s.Workloads)
			}
			out = append(out, s)
		}
	}
	return out
}

// commonLabels is the intersection of the workloads' pod template labels
// (without those Kubernetes generates).
func (idx *Index) commonLabels(refs []Ref) map[string]string {
	var common map[string]string
	for _, ref := range refs {
		w, ok := idx.Workload(ref)
		if !ok {
			return nil
		}
		sel := maps.Clone(w.Template.Labels)
		for _, k := range generatedLabels {
			delete(sel, k)
		}
		if common == nil {
			common = maps.Clone(sel)
			continue
		}
		for k, v := range common {
			if sel[k] != v {
				delete(common, k)
			}
		}
	}
	return common
}

// alsoSelects lists the workloads of namespace ns, other than refs, whose
// pod template matchLabels selects.
func (idx *Index) alsoSelects(ns string, matchLabels map[string]string, refs []Ref) []Ref {
	sel := labels.SelectorFromSet(matchLabels)
	var out []Ref
	for i := range idx.workloads {
		w := &idx.workloads[i]
		if w.Ref.Namespace != ns || slices.Contains(refs, w.Ref) {
			continue
		}
		if sel.Matches(labels.Set(w.Template.Labels)) {
			out = append(out, w.Ref)
		}
	}
	slices.SortFunc(out, func(a, b Ref) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// Unselected are the unselected consumers: the workloads a live member of
// a group runs in (MemberHost evidence, Certain) or a KEDA trigger declares
// the group's consumer (Declared, a parked one too) that a policy of
// namespace, selecting pod templates with sel, does not guard: their
// template is not selected, or they live in another namespace (a policy
// guards only its own). Their rollouts go unchecked. A match by a
// variable's name alone is not surely the group's consumer and is not
// reported.
func (idx *Index) Unselected(namespace string, sel labels.Selector, group string, members []proof.GroupMember) []Match {
	var out []Match
	for _, m := range idx.Match(group, members).Workloads {
		if m.Confidence < Declared {
			continue
		}
		w, ok := idx.Workload(m.Workload)
		if !ok {
			continue
		}
		if m.Workload.Namespace != namespace || !sel.Matches(labels.Set(w.Template.Labels)) {
			out = append(out, m)
		}
	}
	return out
}

// UnselectedMessage says an unselected consumer Unselected found for a
// policy of namespace.
func UnselectedMessage(m Match, namespace string) string {
	if m.Workload.Namespace != namespace {
		return fmt.Sprintf("%s in namespace %s consumes the group (%s) but a policy guards only its own namespace: "+
			"add a policy for the group in %s", m.Workload, m.Workload.Namespace, m.Evidence[0], m.Workload.Namespace)
	}
	return fmt.Sprintf("%s consumes the group (%s) but spec.selector does not select its pod template: "+
		"its rollouts are not guarded; widen the selector", m.Workload, m.Evidence[0])
}

// ScaledToZero is a workload of the policy's that KEDA holds at zero: a
// KEDA trigger declares the group for it, the policy guards it, and it
// runs no pods by its spec.
type ScaledToZero struct {
	Workload Ref
	// Scaler is the ScaledObject or ScaledJob holding it.
	Scaler Ref
	// LastActive is the scaler's status.lastActiveTime; zero when KEDA
	// wrote none.
	LastActive time.Time
}

// HeldAtZero are the workloads a policy of namespace, selecting pod
// templates with sel, guards that KEDA holds at zero for group while
// the group has no member: a ScaledObject's target at 0 replicas (KEDA
// scaled it in for want of lag), or a ScaledJob (its Jobs run only on
// lag). A group with members is not parked, whatever its scalers say
// (they may be another workload's). A consumer parked so is an Empty
// group, and
// KEDA starts it again only on new lag: if the topic is quiet for
// offsets.retention.minutes, the offsets expire first (seed 003 under
// KEDA). Sorted by workload.
func (idx *Index) HeldAtZero(namespace string, sel labels.Selector, group string, members []proof.GroupMember) []ScaledToZero {
	if len(members) > 0 {
		return nil
	}
	var out []ScaledToZero
	for _, m := range idx.Match(group, nil).Workloads {
		w, ok := idx.Workload(m.Workload)
		if !ok || m.Workload.Namespace != namespace || !sel.Matches(labels.Set(w.Template.Labels)) {
			continue
		}
		for _, ev := range m.Evidence {
			var parked bool
			switch ev.Kind {
			case EvidenceScaledObject:
				parked = w.Replicas == 0
			case EvidenceScaledJob:
				parked = true
			default:
				continue
			}
			if parked {
				scaler := Ref{Kind(ev.Kind), m.Workload.Namespace, ev.Scaler}
				out = append(out, ScaledToZero{Workload: m.Workload, Scaler: scaler, LastActive: idx.lastActive[scaler]})
				break
			}
		}
	}
	slices.SortFunc(out, func(a, b ScaledToZero) int {
		return cmp.Or(strings.Compare(a.Workload.String(), b.Workload.String()), strings.Compare(a.Scaler.String(), b.Scaler.String()))
	})
	return out
}

// MemberHosts are the members' addresses, where the broker reported one:
// where to look up the pods a group's live members run in.
func MemberHosts(members []proof.GroupMember) []netip.Addr {
	var out []netip.Addr
	for _, m := range members {
		if m.Host.IsValid() {
			out = append(out, m.Host)
		}
	}
	return out
}
