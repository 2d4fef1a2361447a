package gather

import (
	"context"
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

// An unselected consumer is a workload a live member of a policy's group
// runs in (or that a KEDA trigger on the policy's cluster declares as the
// group's consumer) that the policy's selector misses: its rollouts go
// unchecked. The status and the live proof warn of each (a configWarning
// and a warningFact of type consumerWorkload).

// unselectedRecheck is how long a policy's unselected-consumer check
// stands while the group's members and the policy's selector stay the
// same.
const unselectedRecheck = 10 * time.Minute

// unselectedMemo keeps each policy's last unselected-consumer check, so
// the pods at its group's member hosts are looked up again only when the
// members or the selector change, or unselectedRecheck has passed: a few
// uncached reads per change, not per check. The reconciler forgets a
// deleted policy; entries past unselectedRecheck are dropped once per
// unselectedRecheck (put), so a replica that only live-checks, and never
// hears of deletions, holds no more than the policies it checked lately.
type unselectedMemo struct {
	mu     sync.Mutex
	m      map[types.NamespacedName]unselectedEntry
	purged time.Time
}

type unselectedEntry struct {
	key        string
	at         time.Time
	unselected []UnselectedConsumer
	held       []assemble.ScaledToZero
}

// The warningFacts type and reasons of an unselected consumer (a
// configWarning).
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

// UnselectedConsumer is one unselected consumer: its prose (a
// configWarning) and its fact (a warningFact), compared by the status's
// change detection.
type UnselectedConsumer struct {
	Message string
	Fact    rgv1.WarningFact
}

// newUnselectedConsumer is the unselected consumer m (from
// workloads.Index.Unselected) for a policy of namespace.
func newUnselectedConsumer(m workloads.Match, namespace string) UnselectedConsumer {
	reason := WarningReasonNotSelected
	if m.Workload.Namespace != namespace {
		reason = WarningReasonOtherNamespace
	}
	return UnselectedConsumer{
		Message: workloads.UnselectedMessage(m, namespace),
		Fact:    rgv1.WarningFact{Type: WarningConsumerWorkload, Reason: reason, Subject: m.Workload.String()},
	}
}

func (g *unselectedMemo) get(key types.NamespacedName, k string, now time.Time) (unselectedEntry, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	e, ok := g.m[key]
	if !ok || e.key != k || now.Sub(e.at) >= unselectedRecheck {
		return unselectedEntry{}, false
	}
	return e, true
}

func (g *unselectedMemo) put(key types.NamespacedName, k string, now time.Time, unselected []UnselectedConsumer, held []assemble.ScaledToZero) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = make(map[types.NamespacedName]unselectedEntry)
	}
	if now.Sub(g.purged) >= unselectedRecheck {
		for k, e := range g.m {
			if now.Sub(e.at) >= unselectedRecheck {
				delete(g.m, k)
			}
		}
		g.purged = now
	}
	g.m[key] = unselectedEntry{key: k, at: now, unselected: unselected, held: held}
}

func (g *unselectedMemo) forget(key types.NamespacedName) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.m, key)
}

// unselectedConsumers warns of the workloads a live member of the policy's
// group runs in, or a KEDA trigger on the policy's cluster declares its
// consumer (parked at zero too), that the policy does not guard
// (workloads.Index.Unselected): their rollouts go unchecked. It also returns the
// workloads the policy guards that KEDA holds at zero while the group
// has no member (workloads.Index.HeldAtZero): their offsets count down
// until KEDA sees lag. Nil without a workload reader; a read that fails
// warns of nothing (logged). A KEDA object changed since is seen at the
// next recheck (unselectedRecheck), or as soon as the group's members
// change.
func (g *Gatherer) unselectedConsumers(ctx context.Context, policy *rgv1.ConsumerRetentionPolicy, obs *proof.Observation, servers []string, now time.Time) ([]UnselectedConsumer, []assemble.ScaledToZero) {
	if g.Workloads == nil {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(&policy.Spec.Selector)
	if err != nil {
		return nil, nil // the CRD refuses such selectors; the webhook reports them
	}
	addrs := workloads.MemberHosts(obs.Group.Members)
	var hosts []string
	for _, a := range addrs {
		hosts = append(hosts, a.String())
	}
	slices.Sort(hosts)
	key := types.NamespacedName{Namespace: policy.Namespace, Name: policy.Name}
	// len(members): a group that empties (KEDA scaled it in) is checked
	// again at once, members on no known host or not.
	memoKey := strings.Join(slices.Compact(hosts), ",") + "|" + strconv.Itoa(len(obs.Group.Members)) + "|" + sel.String() + "|" + policy.Spec.GroupID + "|" + strings.Join(servers, ",")
	if e, ok := g.unselected.get(key, memoKey, now); ok {
		return e.unselected, e.held
	}
	var snap workloads.Snapshot
	err = g.Workloads.PodsAt(ctx, addrs, &snap)
	if err == nil {
		err = g.Workloads.OwningWorkloads(ctx, &snap)
	}
	if err == nil {
		err = g.Workloads.DeclaredConsumers(ctx, &snap)
	}
	if err != nil {
		logf.FromContext(ctx).Error(err, "reading the workloads of the group's live members; no unselected-consumer warnings")
		return nil, nil
	}
	snap.Servers = servers
	idx := workloads.NewIndex(snap)
	var unselected []UnselectedConsumer
	for _, m := range idx.Unselected(policy.Namespace, sel, policy.Spec.GroupID, obs.Group.Members) {
		unselected = append(unselected, newUnselectedConsumer(m, policy.Namespace))
	}
	var held []assemble.ScaledToZero
	for _, h := range idx.HeldAtZero(policy.Namespace, sel, policy.Spec.GroupID, obs.Group.Members) {
		held = append(held, assemble.ScaledToZero{
			Workload:   rgv1.KindName{Kind: string(h.Workload.Kind), Name: h.Workload.Name},
			Scaler:     rgv1.KindName{Kind: string(h.Scaler.Kind), Name: h.Scaler.Name},
			LastActive: h.LastActive,
		})
	}
	g.unselected.put(key, memoKey, now, unselected, held)
	return unselected, held
}
