package controllers

import (
	"context"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/assemble"
	"github.com/retentionguard/retention-guard/internal/proof"
	"github.com/retentionguard/retention-guard/internal/workloads"
)

// gapRecheck is how long a policy's gap check stands while the group's
// members and the policy's selector stay the same.
const gapRecheck = 10 * time.Minute

// gapMemo keeps each policy's last gap check, so the pods at its group's
// member hosts are looked up again only when the members or the selector
// change, or gapRecheck has passed: a few uncached reads per change, not
// per check.
type gapMemo struct {
	mu sync.Mutex
	m  map[types.NamespacedName]gapEntry
}

type gapEntry struct {
	key      string
	at       time.Time
	warnings []consumerGap
	held     []assemble.ScaledToZero
}

// The warningFacts type and reasons of a consumer gap (a configWarning).
const (
	// WarningConsumerWorkload: a live member of the group runs in a
	// workload the policy does not guard.
	WarningConsumerWorkload = "consumerWorkload"
	// WarningReasonNotSelected: the workload is in the policy's namespace
	// and spec.selector misses its pod template.
	WarningReasonNotSelected = "NotSelected"
	// WarningReasonOtherNamespace: the workload is in another namespace,
	// which a policy never guards.
	WarningReasonOtherNamespace = "OtherNamespace"
)

// consumerGap is one gap: its prose (a configWarning) and its fact (a
// warningFact), compared by the status's change detection.
type consumerGap struct {
	Message string
	Fact    rgv1.WarningFact
}

// newConsumerGap is the gap m (from workloads.Gaps) for a policy of
// namespace.
func newConsumerGap(m workloads.Match, namespace string) consumerGap {
	reason := WarningReasonNotSelected
	if m.Workload.Namespace != namespace {
		reason = WarningReasonOtherNamespace
	}
	return consumerGap{
		Message: workloads.GapMessage(m, namespace),
		Fact:    rgv1.WarningFact{Type: WarningConsumerWorkload, Reason: reason, Subject: m.Workload.String()},
	}
}

func (g *gapMemo) get(key types.NamespacedName, k string, now time.Time) (gapEntry, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	e, ok := g.m[key]
	if !ok || e.key != k || now.Sub(e.at) >= gapRecheck {
		return gapEntry{}, false
	}
	return e, true
}

func (g *gapMemo) put(key types.NamespacedName, k string, now time.Time, warnings []consumerGap, held []assemble.ScaledToZero) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = make(map[types.NamespacedName]gapEntry)
	}
	g.m[key] = gapEntry{key: k, at: now, warnings: warnings, held: held}
}

func (g *gapMemo) forget(key types.NamespacedName) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.m, key)
}

// consumerGaps warns of the workloads a live member of the policy's group
// runs in, or a KEDA trigger on the policy's cluster declares its
// consumer (parked at zero too), that the policy does not guard
// (workloads.Gaps): their rollouts go unchecked. It also returns the
// workloads the policy guards that KEDA holds at zero while the group
// has no member (workloads.Index.HeldAtZero): their offsets count down
// until KEDA sees lag. Nil without a workload reader; a read that fails
// warns of nothing (logged). A KEDA object changed since is seen at the
// next recheck (gapRecheck), or as soon as the group's members change.
func (r *ConsumerRetentionPolicyReconciler) consumerGaps(ctx context.Context, policy *rgv1.ConsumerRetentionPolicy, obs *proof.Observation, servers []string, now time.Time) ([]consumerGap, []assemble.ScaledToZero) {
	if r.Workloads == nil {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(&policy.Spec.Selector)
	if err != nil {
		return nil, nil // the CRD refuses such selectors; the webhook reports them
	}
	addrs := memberHosts(obs.Group.Members)
	var hosts []string
	for _, a := range addrs {
		hosts = append(hosts, a.String())
	}
	slices.Sort(hosts)
	key := types.NamespacedName{Namespace: policy.Namespace, Name: policy.Name}
	// len(members): a group that empties (KEDA scaled it in) is checked
	// again at once, members on no known host or not.
	memoKey := strings.Join(slices.Compact(hosts), ",") + "|" + strconv.Itoa(len(obs.Group.Members)) + "|" + sel.String() + "|" + policy.Spec.GroupID + "|" + strings.Join(servers, ",")
	if e, ok := r.gapChecks.get(key, memoKey, now); ok {
		return e.warnings, e.held
	}
	var snap workloads.Snapshot
	err = r.Workloads.PodsAt(ctx, addrs, &snap)
	if err == nil {
		err = r.Workloads.OwningWorkloads(ctx, &snap)
	}
	if err == nil {
		err = r.Workloads.DeclaredConsumers(ctx, &snap)
	}
	if err != nil {
		logf.FromContext(ctx).Error(err, "reading the workloads of the group's live members; no gap warnings")
		return nil, nil
	}
	snap.Servers = servers
	idx := workloads.NewIndex(snap)
	var warnings []consumerGap
	for _, m := range idx.Gaps(policy.Namespace, sel, policy.Spec.GroupID, obs.Group.Members) {
		warnings = append(warnings, newConsumerGap(m, policy.Namespace))
	}
	var held []assemble.ScaledToZero
	for _, h := range idx.HeldAtZero(policy.Namespace, sel, policy.Spec.GroupID, obs.Group.Members) {
		held = append(held, assemble.ScaledToZero{
			Workload:   rgv1.KindName{Kind: string(h.Workload.Kind), Name: h.Workload.Name},
			Scaler:     rgv1.KindName{Kind: string(h.Scaler.Kind), Name: h.Scaler.Name},
			LastActive: h.LastActive,
		})
	}
	r.gapChecks.put(key, memoKey, now, warnings, held)
	return warnings, held
}

// memberHosts are the members' addresses, where the broker reported one.
func memberHosts(members []proof.GroupMember) []netip.Addr {
	var out []netip.Addr
	for _, m := range members {
		if m.Host.IsValid() {
			out = append(out, m.Host)
		}
	}
	return out
}
