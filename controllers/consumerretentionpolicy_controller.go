package controllers

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/gather"
	"github.com/retentionguard/retention-guard/internal/heartbeat"
	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/proof"
	"github.com/retentionguard/retention-guard/internal/shard"
	"github.com/retentionguard/retention-guard/internal/writerule"
)

// ControllerName names the controller, its events' reportingController and
// its log lines.
const ControllerName = "retention-guard"

// ConsumerRetentionPolicyReconciler keeps every ConsumerRetentionPolicy's
// proof current: resolve the connection, observe Kafka through the
// Coalescer, prove with internal/proof, and patch the status once.
//
// What the proof needs is gathered by the Gatherer it shares with the
// webhook's live check (internal/gather). Reconciles never wait on Kafka. A policy whose observation is older than
// maxObservationAge asks the Coalescer for a new one and is requeued when
// that pass completes; meanwhile its status keeps the last proof
// (or says Reconciling while the first proof is pending).
type ConsumerRetentionPolicyReconciler struct {
	// Client is the manager's cached client.
	Client client.Client
	// Gatherer gathers what a policy's proof needs (its Resolver, its
	// Coalescer); the webhook's live check uses the same one.
	Gatherer *gather.Gatherer
	// Recorder records events.k8s.io events on verdict transitions.
	Recorder events.EventRecorder
	// Heartbeats confirms unchanged proofs between status writes; nil:
	// the status is written on every check.
	Heartbeats *heartbeat.Leases
	// MaxConcurrentReconciles defaults to 4 (reconciles do no Kafka I/O).
	MaxConcurrentReconciles int
	// Shard is what this manager reconciles (--watch-label-selector); nil:
	// every policy. Policies outside it are left alone: never written,
	// never enqueued from another object's event, and one that leaves it
	// is only forgotten by this process (shardOwns).
	Shard *shard.Shard

	verdicts lastVerdicts
	rechecks rechecks
	// first keeps a first proof to one write (firstproof.go).
	first firstProofs

	// intervalOverride replaces every policy's checkInterval (tests: the
	// CRD's minimum is 10s).
	intervalOverride time.Duration
	// now is the clock (tests).
	now func() time.Time
}

// SetupWithManager registers the reconciler: policies (spec and annotation
// changes), the Secrets they reference directly or through their
// connection (metadata only, mapped through field indexes), the
// connections they name, the labels of their namespaces (a
// ClusterKafkaConnection's allowedNamespaces selector), the CronJobs they
// select (spec changes, mapped by a namespace-scoped list of the cached
// policies) and the Coalescer's notifications.
func (r *ConsumerRetentionPolicyReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Gatherer == nil || r.Gatherer.Resolver == nil {
		return errors.New("the reconciler needs a Gatherer with a ConnectionResolver")
	}
	if r.Gatherer.Coalescer == nil {
		return errors.New("the reconciler needs a Gatherer with a Coalescer")
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.MaxConcurrentReconciles <= 0 {
		r.MaxConcurrentReconciles = 4
	}
	if err := setupIndexes(ctx, mgr); err != nil {
		return err
	}

	notifications := source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		enqueue := func(owner types.NamespacedName) { q.Add(reconcile.Request{NamespacedName: owner}) }
		r.Gatherer.Coalescer.SetNotify(enqueue)
		r.first.setEnqueue(enqueue)
		return nil
	})

	changed := predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{})
	if r.Shard.Sharded() {
		// A policy relabelled into (or out of) the shard is reconciled at
		// once by the shard it joins, and forgotten by the one it left.
		changed = predicate.And(r.Shard.Predicate(), predicate.Or(changed, predicate.LabelChangedPredicate{}))
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("consumerretentionpolicy").
		For(&rgv1.ConsumerRetentionPolicy{}, builder.WithPredicates(changed)).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.policiesForSecret)).
		Watches(&rgv1.ClusterKafkaConnection{}, handler.EnqueueRequestsFromMapFunc(r.policiesForConnection),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&rgv1.KafkaConnection{}, handler.EnqueueRequestsFromMapFunc(r.policiesForConnection),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesMetadata(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.policiesForNamespace),
			builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&batchv1.CronJob{}, handler.EnqueueRequestsFromMapFunc(r.policiesForCronJob),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(notifications).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(r)
}

// policiesForSecret maps a Secret to the policies in its namespace that
// reference it, and to the policies of the connections that reference it
// (a KafkaConnection of its namespace, a ClusterKafkaConnection when it
// lives in the manager's namespace), so a rotated Secret takes effect at
// once.
func (r *ConsumerRetentionPolicyReconciler) policiesForSecret(ctx context.Context, s client.Object) []reconcile.Request {
	log := ctrl.LoggerFrom(ctx)
	var list rgv1.ConsumerRetentionPolicyList
	if err := r.Client.List(ctx, &list, client.InNamespace(s.GetNamespace()),
		client.MatchingFields{secretRefIndex: s.GetName()}); err != nil {
		log.Error(err, "listing the policies that reference a Secret", "secret", s.GetName())
		return nil
	}
	reqs := r.requests(list.Items)
	var keys []string
	var kcs rgv1.KafkaConnectionList
	if err := r.Client.List(ctx, &kcs, client.InNamespace(s.GetNamespace()),
		client.MatchingFields{connectionSecretIndex: s.GetName()}); err != nil {
		log.Error(err, "listing the KafkaConnections that reference a Secret", "secret", s.GetName())
	}
	for _, kc := range kcs.Items {
		keys = append(keys, connectionKey(rgv1.KindKafkaConnection, kc.Namespace, kc.Name))
	}
	if ns := r.Gatherer.Resolver.ManagerNamespace; ns != "" && s.GetNamespace() == ns {
		var ckcs rgv1.ClusterKafkaConnectionList
		if err := r.Client.List(ctx, &ckcs, client.MatchingFields{connectionSecretIndex: s.GetName()}); err != nil {
			log.Error(err, "listing the ClusterKafkaConnections that reference a Secret", "secret", s.GetName())
		}
		for _, c := range ckcs.Items {
			keys = append(keys, connectionKey(rgv1.KindClusterKafkaConnection, "", c.Name))
		}
	}
	if len(reqs) == 0 && len(keys) == 0 {
		r.Gatherer.Resolver.Forget(client.ObjectKeyFromObject(s))
	}
	for _, k := range keys {
		reqs = append(reqs, r.policiesOf(ctx, k)...)
	}
	return reqs
}

// policiesOf lists the policies that name the connection with key.
func (r *ConsumerRetentionPolicyReconciler) policiesOf(ctx context.Context, key string) []reconcile.Request {
	var list rgv1.ConsumerRetentionPolicyList
	if err := r.Client.List(ctx, &list, client.MatchingFields{connectionRefIndex: key}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the policies that name a connection", "connection", key)
		return nil
	}
	return r.requests(list.Items)
}

// requests are the reconcile requests of the policies this shard owns.
func (r *ConsumerRetentionPolicyReconciler) requests(policies []rgv1.ConsumerRetentionPolicy) []reconcile.Request {
	reqs := make([]reconcile.Request, 0, len(policies))
	for i := range policies {
		if r.Shard.Owns(&policies[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&policies[i])})
		}
	}
	return reqs
}

// policiesForConnection maps a connection (created, changed, deleted) to
// the policies that name it.
func (r *ConsumerRetentionPolicyReconciler) policiesForConnection(ctx context.Context, o client.Object) []reconcile.Request {
	switch o.(type) {
	case *rgv1.ClusterKafkaConnection:
		return r.policiesOf(ctx, connectionKey(rgv1.KindClusterKafkaConnection, "", o.GetName()))
	case *rgv1.KafkaConnection:
		return r.policiesOf(ctx, connectionKey(rgv1.KindKafkaConnection, o.GetNamespace(), o.GetName()))
	}
	return nil
}

// policiesForNamespace maps a namespace whose labels changed to its
// policies that name a ClusterKafkaConnection (allowedNamespaces may
// select it, or no longer).
func (r *ConsumerRetentionPolicyReconciler) policiesForNamespace(ctx context.Context, ns client.Object) []reconcile.Request {
	var list rgv1.ConsumerRetentionPolicyList
	if err := r.Client.List(ctx, &list, client.InNamespace(ns.GetName())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the policies of a namespace", "namespace", ns.GetName())
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if ref := list.Items[i].Spec.Kafka.ConnectionRef; ref != nil && ref.Kind == rgv1.KindClusterKafkaConnection && r.Shard.Owns(&list.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// policiesForCronJob maps a CronJob to the policies in its namespace whose
// selector matches its job template's pod labels (for an update, the
// handler calls it for the old and the new CronJob, so a policy that no
// longer selects it loses its warning too). A namespace holds few
// policies: a list from the cache, no index.
func (r *ConsumerRetentionPolicyReconciler) policiesForCronJob(ctx context.Context, o client.Object) []reconcile.Request {
	cj, ok := o.(*batchv1.CronJob)
	if !ok {
		return nil
	}
	var list rgv1.ConsumerRetentionPolicyList
	if err := r.Client.List(ctx, &list, client.InNamespace(cj.Namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the policies that may select a CronJob", "cronJob", cj.Name)
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if r.Shard.Owns(&list.Items[i]) && gather.Selects(&list.Items[i], cj) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// Reconcile proves one policy: gather what the proof needs, compute the
// status from it (computeStatus, pure), and summarize once in a defer
// (summarizeAndPatch: the patch, then the result processors).
func (r *ConsumerRetentionPolicyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	policy := &rgv1.ConsumerRetentionPolicy{}
	if err := r.Client.Get(ctx, req.NamespacedName, policy); err != nil {
		if apierrors.IsNotFound(err) {
			// Deleted: no finalizer is needed to clean up what lives only
			// in this process.
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if !policy.DeletionTimestamp.IsZero() {
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	if !r.Shard.Owns(policy) {
		// Relabelled to another shard (a shard serving the webhook caches
		// every policy): forget it here, write nothing. Its status stays
		// the new shard's prior proof.
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}

	summary := reconcileSummary{before: policy.DeepCopy()}
	decided := false
	defer func() {
		if !decided {
			return // a transient error came before any decision: retried with backoff
		}
		if err := r.summarizeAndPatch(ctx, policy, summary); err != nil {
			retErr = kerrors.NewAggregate([]error{retErr, err})
		}
	}()

	in, result, err := r.gather(ctx, policy)
	if err != nil {
		return ctrl.Result{}, err
	}
	in.Held = r.first.hold(req.NamespacedName, in.Observation == nil && in.Problem == nil && writerule.OwesPending(policy.Status, policy.Generation))
	outcome := computeStatus(policy.Status, in)
	if outcome.Decision.Reason == writerule.ReasonPendingHeld {
		return result, nil // the first proof is on its way: it will be the first write (firstproof.go)
	}
	summary.in, summary.outcome, decided = in, outcome, true
	return result, nil
}

// gather learns what the status needs (the Gatherer: a spec problem, or a
// fresh observation of the policy's target, or neither while one is
// pending) and keeps this reconciler's own books: the requestedAt
// annotation it answers and when to check again.
func (r *ConsumerRetentionPolicyReconciler) gather(ctx context.Context, policy *rgv1.ConsumerRetentionPolicy) (statusInput, ctrl.Result, error) {
	key := client.ObjectKeyFromObject(policy)
	now := r.now()
	pending := pendingRecheck(policy.Annotations, policy.Status.LastHandledRequestedAt)
	interval := r.interval(policy)
	var age time.Duration
	// The reconciler's way to an observation: ask the Coalescer, never
	// wait on Kafka.
	observe := func(_ context.Context, conn kafka.Connection, target kafka.Target) (proof.Observation, bool, error) {
		var notBefore time.Time
		if pending != "" {
			// retentionguard.io/requestedAt: only a pass that starts now
			// answers it, not the cached one.
			notBefore = r.rechecks.since(policyRecheckKey(key), pending, now)
		}
		obs, a, fresh := r.Gatherer.Coalescer.RequestSince(key, conn, target, maxObservationAge(interval), notBefore)
		age = a
		return obs, fresh, nil
	}
	f, err := r.Gatherer.Gather(ctx, policy, now, observe)
	in := statusInput{
		Generation:    policy.Generation,
		Policy:        f.Policy,
		Now:           f.Now,
		Problem:       f.Problem,
		Observation:   f.Observation,
		CronJobs:      f.CronJobs,
		CursorProblem: f.CursorProblem,
		Unselected:    f.Unselected,
		ScaledToZero:  f.ScaledToZero,
	}
	switch {
	case f.Problem != nil:
		// Nothing to observe until a person fixes it; Secret, connection,
		// namespace and policy watches bring the policy back.
		r.Gatherer.Coalescer.Unregister(key)
		in.HandledRequestedAt = pending
		return in, ctrl.Result{}, nil
	case f.Observation != nil && pending != "":
		in.HandledRequestedAt = pending
		r.rechecks.forget(policyRecheckKey(key))
	}
	if err != nil {
		return in, ctrl.Result{}, err
	}
	in.Interval, in.Servers = interval, f.Servers
	if r.Heartbeats != nil {
		in.Heartbeat = r.Heartbeats.Reference(f.Servers, interval)
	}
	if f.Observation == nil {
		// The Coalescer requeues the policy as soon as the pass that serves
		// it completes; this requeue is only a safety net.
		return in, ctrl.Result{RequeueAfter: jitter(interval)}, nil
	}
	return in, ctrl.Result{RequeueAfter: nextCheck(interval, age)}, nil
}

// maxObservationAge is how old an observation a policy accepts: 80% of its
// interval. It must stay below the smallest jittered requeue (90%), so the
// first policy of a connection to come due finds the last pass stale and
// triggers the next one; and it should be well above half the interval, so
// that policies whose phases drifted apart find that pass fresh and fall
// back in step with it (with half the interval, two groups half an
// interval apart can keep triggering a pass each, twice the cost). The
// status is never older than one jittered interval either way: policies
// requeue relative to the observation they used (nextCheck).
func maxObservationAge(interval time.Duration) time.Duration {
	return interval * 8 / 10
}

// nextCheck is when to check again after using an observation age old:
// one interval (±10%) after the observation, not after now. Policies that
// share a pass stay anchored to it, so the first of them to come due
// triggers the next pass and the others find it fresh: one pass per
// interval for all of them, instead of phases drifting apart until every
// half interval needs its own pass.
func nextCheck(interval, age time.Duration) time.Duration {
	return max(jitter(interval)-age, interval/10)
}

func (r *ConsumerRetentionPolicyReconciler) interval(p *rgv1.ConsumerRetentionPolicy) time.Duration {
	switch {
	case r.intervalOverride > 0:
		return r.intervalOverride
	}
	// The CRD defaults it: only objects written before the default
	// existed lack it.
	return p.Spec.CheckIntervalOrDefault()
}

// jitter spreads requeues by ±10% so policies created together do not
// keep checking in lockstep.
func jitter(d time.Duration) time.Duration {
	return d + time.Duration((rand.Float64()*0.2-0.1)*float64(d))
}

// patchStatus sends one merge patch of the status, when it changed.
func (r *ConsumerRetentionPolicyReconciler) patchStatus(ctx context.Context, before, after *rgv1.ConsumerRetentionPolicy) error {
	return patchStatus(ctx, r.Client, before, after)
}

// patchStatus sends one merge patch of obj's status from before to after,
// when it changed; an object deleted meanwhile is not an error.
func patchStatus(ctx context.Context, c client.Client, before, after client.Object) error {
	if statusUnchanged(before, after) {
		return nil
	}
	patch := client.MergeFrom(before)
	data, err := patch.Data(after)
	if err != nil {
		return err
	}
	if string(data) == "{}" {
		return nil
	}
	if err := c.Status().Patch(ctx, after, patch); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// statusUnchanged reports, without encoding either, that after's status is
// before's: the usual end of a periodic check whose facts did not move
// (writerule kept the status). Finding that by the merge patch alone
// (JSON-encoding both objects and diffing them) was 12% of the manager's
// CPU at 20,000 policies (docs/benchmarks.md). Semantic equality holds nil
// and empty alike; any difference it sees goes on to the patch, which
// still sends nothing when the JSON is the same.
func statusUnchanged(before, after client.Object) bool {
	switch b := before.(type) {
	case *rgv1.ConsumerRetentionPolicy:
		a, ok := after.(*rgv1.ConsumerRetentionPolicy)
		return ok && equality.Semantic.DeepEqual(&b.Status, &a.Status)
	case *rgv1.KafkaConnection:
		a, ok := after.(*rgv1.KafkaConnection)
		return ok && equality.Semantic.DeepEqual(&b.Status, &a.Status)
	case *rgv1.ClusterKafkaConnection:
		a, ok := after.(*rgv1.ClusterKafkaConnection)
		return ok && equality.Semantic.DeepEqual(&b.Status, &a.Status)
	}
	return false
}

// forget drops what this process holds for a deleted policy: its target in
// the Coalescer, its metric series, its last verdict and its heartbeat
// confirmation.
func (r *ConsumerRetentionPolicyReconciler) forget(key types.NamespacedName) {
	r.Gatherer.Coalescer.Unregister(key)
	r.rechecks.forget(policyRecheckKey(key))
	r.first.forget(key)
	metricsState.forget(key)
	r.verdicts.forget(key)
	r.Gatherer.Forget(key)
	if r.Heartbeats != nil {
		r.Heartbeats.Forget(key)
	}
}

// confirm tells the heartbeat that the policy's status (just written, or
// found equal) holds the proof of this reconcile's observation; a policy
// whose status names no heartbeat (a spec problem) is forgotten by it.
func (r *ConsumerRetentionPolicyReconciler) confirm(key types.NamespacedName, p *rgv1.ConsumerRetentionPolicy, in statusInput) {
	switch {
	case r.Heartbeats == nil:
	case p.Status.Heartbeat == nil:
		r.Heartbeats.Forget(key)
	case in.Observation != nil:
		r.Heartbeats.Confirm(key, p.UID, p.Status.Heartbeat, in.Servers, in.Interval, in.Observation.ObservedAt)
	}
}

// lastVerdicts remembers the verdict this process last wrote per policy.
// The informer cache may not show our own last patch yet when the next
// reconcile starts; judging transitions by it alone would repeat an event.
// After a restart (or for a policy recreated under the same name) the
// status is the reference.
type lastVerdicts struct {
	mu sync.Mutex
	m  map[types.NamespacedName]uidVerdict
}

type uidVerdict struct {
	uid     types.UID
	verdict rgv1.Verdict
}

// swap records next as the policy's verdict and returns the previous one:
// the remembered verdict when there is one for this UID, else inStatus.
func (l *lastVerdicts) swap(key types.NamespacedName, uid types.UID, next, inStatus rgv1.Verdict) rgv1.Verdict {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = make(map[types.NamespacedName]uidVerdict)
	}
	prev := inStatus
	if v, ok := l.m[key]; ok && v.uid == uid {
		prev = v.verdict
	}
	l.m[key] = uidVerdict{uid: uid, verdict: next}
	return prev
}

func (l *lastVerdicts) forget(key types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, key)
}
