package heartbeat

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/freshness"
	"github.com/retentionguard/retention-guard/internal/shard"
)

// A policy's status is written when its proof changes, not on every check
// (at 5,000 policies and a 1m interval, writing every check was 83 status
// patches a second for nothing new). What the status no longer says — that
// the proof was re-checked a moment ago — a heartbeat says for many
// policies at once: one coordination.k8s.io Lease per Kafka cluster and
// checkInterval, in the manager's namespace, named in each policy's
// status.heartbeat. The leader sets a Lease's spec.renewTime to the oldest
// observation that re-proved a policy naming it, once every such policy has
// been re-proved by this process and its status written when it changed.
// So renewTime never claims more than is true: a policy whose check is
// pending, failing or not yet done since this process started holds its
// Lease back, and the webhook then finds the proofs stale and checks live.
//
//   - Two replicas: only the leader renews (Leases needs leader
//     election); every replica's webhook reads the Leases from its cache.
//   - A new leader knows no confirmation until it has re-proved every
//     policy of a Lease itself (about one interval); meanwhile the Lease
//     keeps the old leader's last renewTime and ages.
//   - A manager that is down renews nothing: after 2 × checkInterval + 30s
//     the proofs are stale (internal/freshness: the webhook's rule, whose
//     window each Lease's leaseDurationSeconds says, for people).
//   - A Kafka cluster that stops answering turns its policies' proofs
//     Unknown: a change, written, and confirmed like any other.

// Label marks the Leases Leases maintains (value "true"); the
// manager's cache holds only those.
const Label = "retentionguard.io/heartbeat"

// Annotations on a heartbeat Lease, for people.
const (
	heartbeatServersAnnotation  = "retentionguard.io/bootstrap-servers"
	heartbeatIntervalAnnotation = "retentionguard.io/check-interval"
)

// heartbeatTick is how often the leader renews Leases that are due.
const heartbeatTick = 5 * time.Second

// LeaseName names the Lease of the policies on a Kafka cluster
// (its bootstrap servers, in any order and case) with one checkInterval.
// Credentials are not part of it: policies that reach one cluster with
// different credentials share the Lease (it waits for all of them).
func LeaseName(servers []string, interval time.Duration) string {
	return "retention-guard-heartbeat-" + heartbeatHash(servers, interval)
}

func heartbeatHash(servers []string, interval time.Duration) string {
	norm := make([]string, 0, len(servers))
	for _, s := range servers {
		norm = append(norm, strings.ToLower(strings.TrimSpace(s)))
	}
	slices.Sort(norm)
	sum := sha256.Sum256([]byte(strings.Join(slices.Compact(norm), ",") + "|" + interval.String()))
	return hex.EncodeToString(sum[:6])
}

// Leases renews the heartbeat Leases. The reconciler reports each
// policy it re-proved (Confirm) and each it stops proving (Forget); Start
// runs on the leader only and renews the Leases that are due.
type Leases struct {
	// Client reads policies and Leases from the manager's cache and
	// writes Leases.
	Client client.Client
	// Namespace holds the Leases: the manager's.
	Namespace string
	// Identity is written as the Leases' holderIdentity. Default: the
	// host name.
	Identity string
	// Logger logs renewals at V(1) and failures.
	Logger logr.Logger
	// Tick is how often due Leases are renewed. Default 5s.
	Tick time.Duration
	// Shard is the manager's (--watch-label-selector); nil: unsharded.
	// A shard's Leases carry its name (rgv1.ShardLabel) and selector
	// (shard.SelectorAnnotation); it renews and deletes only those, from
	// the confirmations of the policies it selects.
	Shard *shard.Shard

	mu        sync.Mutex
	confirmed map[types.NamespacedName]confirmation
	// written is the renewTime this process last wrote to each Lease: the
	// cache may not show its own write by the next tick, and a Lease is
	// written once per renewTime, not again because the cache is behind.
	written map[string]metav1.MicroTime
	// now is the clock (tests).
	now func() time.Time
}

// confirmation is the last check of a policy whose status agreed with its
// proof (or was written to).
type confirmation struct {
	uid      types.UID
	lease    string
	at       time.Time // the observation's time
	servers  []string
	interval time.Duration
}

// ShardLeaseName names a shard's Lease of the policies on a Kafka cluster
// with one checkInterval: LeaseName, suffixed with the shard's name when
// sharded, so that two shards with policies on one cluster never renew
// the same Lease (each renews it only for its own policies).
func ShardLeaseName(s *shard.Shard, servers []string, interval time.Duration) string {
	if !s.Sharded() {
		return LeaseName(servers, interval)
	}
	return LeaseName(servers, interval) + "-" + s.Name()
}

// Reference is the heartbeat a policy on servers with interval names.
func (h *Leases) Reference(servers []string, interval time.Duration) *rgv1.HeartbeatReference {
	return &rgv1.HeartbeatReference{Namespace: h.Namespace, Name: ShardLeaseName(h.Shard, servers, interval)}
}

// owns reports whether the Lease is this shard's: its shard label is the
// shard's name ("" or none for an unsharded manager's Leases).
func (h *Leases) owns(l *coordinationv1.Lease) bool {
	return l.Labels[rgv1.ShardLabel] == h.Shard.Name()
}

// Confirm records that the policy's status holds the proof of an
// observation made at observedAt (it was equal, or written).
func (h *Leases) Confirm(key types.NamespacedName, uid types.UID, ref *rgv1.HeartbeatReference, servers []string,
	interval time.Duration, observedAt time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.confirmed == nil {
		h.confirmed = make(map[types.NamespacedName]confirmation)
	}
	h.confirmed[key] = confirmation{uid: uid, lease: ref.Name, at: observedAt, servers: servers, interval: interval}
}

// Forget drops a policy that is deleted or no longer observed.
func (h *Leases) Forget(key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.confirmed, key)
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: only the
// leader proves, so only it may renew.
func (h *Leases) NeedLeaderElection() bool { return true }

// Start renews due Leases every Tick until ctx ends.
func (h *Leases) Start(ctx context.Context) error {
	if h.Identity == "" {
		h.Identity, _ = os.Hostname()
	}
	if h.Logger.GetSink() == nil {
		h.Logger = logr.Discard()
	}
	if h.Tick <= 0 {
		h.Tick = heartbeatTick
	}
	t := time.NewTicker(h.Tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := h.renew(ctx); err != nil && ctx.Err() == nil {
			h.Logger.Error(err, "renewing heartbeat Leases")
		}
	}
}

// leaseDue is what a Lease should say.
type leaseDue struct {
	renew    time.Time
	servers  []string
	interval time.Duration
}

// dueRenewals decides, from the cached policies and this process's
// confirmations, the renewTime each heartbeat Lease may carry: the oldest
// confirmation of the policies that name it (in their status, or by this
// process's last confirmation). A Lease named by a policy that has no
// confirmation for it (not checked yet, or its check failed, or it moved
// to another Lease) gets none. Policies whose status is not of their
// current generation are skipped: the webhook does not use their proof.
// Pure, for tests.
func dueRenewals(namespace string, policies []rgv1.ConsumerRetentionPolicy, confirmed map[types.NamespacedName]confirmation) map[string]leaseDue {
	out := map[string]leaseDue{}
	blocked := map[string]bool{}
	for i := range policies {
		p := &policies[i]
		ref := p.Status.Heartbeat
		if ref == nil || ref.Namespace != namespace || p.Status.Proof == nil || p.Status.ObservedGeneration != p.Generation {
			continue
		}
		c, ok := confirmed[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}]
		if !ok || c.uid != p.UID || c.lease != ref.Name {
			blocked[ref.Name] = true
		}
	}
	for _, c := range confirmed {
		if blocked[c.lease] {
			continue
		}
		d, ok := out[c.lease]
		if !ok || c.at.Before(d.renew) {
			d.renew = c.at
		}
		d.servers, d.interval = c.servers, c.interval
		out[c.lease] = d
	}
	return out
}

func (h *Leases) renew(ctx context.Context) error {
	var list rgv1.ConsumerRetentionPolicyList
	if err := h.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	// Only the shard's policies: a shard serving the webhook caches every
	// policy, and those of other shards name other shards' Leases.
	mine := list.Items
	if h.Shard.Sharded() {
		mine = make([]rgv1.ConsumerRetentionPolicy, 0, len(list.Items))
		for i := range list.Items {
			if h.Shard.Owns(&list.Items[i]) {
				mine = append(mine, list.Items[i])
			}
		}
	}
	h.mu.Lock()
	due := dueRenewals(h.Namespace, mine, h.confirmed)
	h.mu.Unlock()

	var leases coordinationv1.LeaseList
	if err := h.Client.List(ctx, &leases, client.InNamespace(h.Namespace), client.MatchingLabels{Label: "true"}); err != nil {
		return err
	}
	have := map[string]*coordinationv1.Lease{}
	for i := range leases.Items {
		if h.owns(&leases.Items[i]) {
			have[leases.Items[i].Name] = &leases.Items[i]
		}
	}
	var errs []error
	for name, d := range due {
		if _, ok := have[name]; !ok && hasLease(leases.Items, name) {
			continue // another shard's (or an unsharded manager's): never written here
		}
		if err := h.write(ctx, name, d, have[name]); err != nil {
			errs = append(errs, err)
		}
	}
	// The shard's Leases no policy names any more (a cluster or interval
	// no longer used, or its policies moved to another shard), once they
	// have not been renewed for ten intervals.
	named := map[string]bool{}
	for i := range list.Items {
		if ref := list.Items[i].Status.Heartbeat; ref != nil {
			named[ref.Name] = true
		}
	}
	for name, l := range have {
		if _, isDue := due[name]; isDue || named[name] || l.Spec.RenewTime == nil ||
			h.clock().Sub(l.Spec.RenewTime.Time) < 10*Interval(l) {
			continue
		}
		if err := h.Client.Delete(ctx, l); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		h.mu.Lock()
		delete(h.written, name)
		h.mu.Unlock()
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

func hasLease(leases []coordinationv1.Lease, name string) bool {
	for i := range leases {
		if leases[i].Name == name {
			return true
		}
	}
	return false
}

// write creates or renews one Lease when what it says is behind d.
func (h *Leases) write(ctx context.Context, name string, d leaseDue, cur *coordinationv1.Lease) error {
	// A Lease keeps microseconds: compare what it can hold, or every tick
	// would write the same time again.
	renew := metav1.NewMicroTime(d.renew.Truncate(time.Microsecond))
	duration := int32(freshness.Window(d.interval).Seconds())
	h.mu.Lock()
	w, ok := h.written[name]
	h.mu.Unlock()
	if ok && w.Equal(&renew) {
		return nil // written by this process; the cache may not show it yet
	}
	if cur != nil && cur.Spec.RenewTime != nil && cur.Spec.RenewTime.Equal(&renew) &&
		ptr.Deref(cur.Spec.HolderIdentity, "") == h.Identity {
		return nil
	}
	if cur == nil {
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: h.Namespace,
				Labels: map[string]string{Label: "true"},
				Annotations: map[string]string{
					heartbeatServersAnnotation:  strings.Join(d.servers, ","),
					heartbeatIntervalAnnotation: d.interval.String(),
				},
			},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(h.Identity), RenewTime: &renew,
				AcquireTime: &renew, LeaseDurationSeconds: ptr.To(duration)},
		}
		if h.Shard.Sharded() {
			l.Labels[rgv1.ShardLabel] = h.Shard.Name()
			l.Annotations[shard.SelectorAnnotation] = h.Shard.String()
		}
		err := h.Client.Create(ctx, l)
		if apierrors.IsAlreadyExists(err) {
			return nil // the cache is behind: renewed on the next tick
		}
		if err == nil {
			h.wrote(name, renew)
		}
		return err
	}
	// A merge patch without a resourceVersion: only the leader writes
	// heartbeat Leases, so there is no writer to race with, and a cache
	// that has not caught up with this process's last write costs no
	// conflict and no second request.
	l := cur.DeepCopy()
	if ptr.Deref(l.Spec.HolderIdentity, "") != h.Identity {
		l.Spec.AcquireTime = &renew
	}
	l.Spec.HolderIdentity, l.Spec.RenewTime, l.Spec.LeaseDurationSeconds = ptr.To(h.Identity), &renew, ptr.To(duration)
	err := h.Client.Patch(ctx, l, client.MergeFrom(cur))
	if apierrors.IsNotFound(err) {
		return nil // deleted meanwhile: created again on the next tick
	}
	if err == nil {
		h.wrote(name, renew)
		h.Logger.V(1).Info("renewed heartbeat", "lease", name, "renewTime", d.renew.UTC().Format(time.RFC3339))
	}
	return err
}

// wrote records the renewTime this process wrote to a Lease.
func (h *Leases) wrote(name string, renew metav1.MicroTime) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.written == nil {
		h.written = make(map[string]metav1.MicroTime)
	}
	h.written[name] = renew
}

func (h *Leases) clock() time.Time {
	if h.now != nil {
		return h.now()
	}
	return time.Now()
}

// Interval is the checkInterval a heartbeat Lease was written for (its
// annotation), the default checkInterval when unreadable.
func Interval(l *coordinationv1.Lease) time.Duration {
	if d, err := time.ParseDuration(l.Annotations[heartbeatIntervalAnnotation]); err == nil && d > 0 {
		return d
	}
	return rgv1.DefaultCheckInterval
}
