package controllers

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/coalesce"
	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/proof"
	"github.com/retentionguard/retention-guard/internal/resolve"
	"github.com/retentionguard/retention-guard/internal/shard"
	"github.com/retentionguard/retention-guard/internal/workloadread"
	"github.com/retentionguard/retention-guard/internal/workloads"
)

// KafkaConnectionReconciler keeps a ClusterKafkaConnection's or a
// KafkaConnection's status current (Kind says which; run one of each):
// resolve the connection, observe the cluster through the Coalescer (the
// same passes as the policies that name it), discover and judge every
// group when asked, and patch the status once. Reconciles never wait on
// Kafka. It needs the ConsumerRetentionPolicyReconciler on the same
// manager (the field indexes).
type KafkaConnectionReconciler struct {
	Client    client.Client
	Resolver  *resolve.ConnectionResolver
	Coalescer *coalesce.Coalescer
	Recorder  events.EventRecorder
	// Kind is rgv1.KindClusterKafkaConnection or rgv1.KindKafkaConnection.
	Kind string
	// Workloads, when set, reads the workloads that consume the
	// unguarded groups discovery finds (status.unguardedGroups[].workloads),
	// once per fresh discovery pass.
	Workloads *workloadread.Reader

	// Shard is what this manager reconciles (--watch-label-selector); nil:
	// every connection. A connection outside it is left alone, and one
	// that leaves it is only forgotten by this process. Its status counts
	// every policy naming it that the cache holds (docs/scaling.md).
	Shard *shard.Shard

	ready    lastReady
	rechecks rechecks

	intervalOverride time.Duration
	now              func() time.Time
}

// connectionObject is what the reconciler needs of either kind.
type connectionObject interface {
	client.Object
	spec() *rgv1.KafkaConnectionSpec
	status() *rgv1.KafkaConnectionStatus
	// object is the API object itself (what the client patches and
	// events name).
	object() client.Object
}

type clusterConn struct{ *rgv1.ClusterKafkaConnection }

func (c clusterConn) spec() *rgv1.KafkaConnectionSpec     { return &c.Spec.KafkaConnectionSpec }
func (c clusterConn) status() *rgv1.KafkaConnectionStatus { return &c.Status }
func (c clusterConn) object() client.Object               { return c.ClusterKafkaConnection }

type namespacedConn struct{ *rgv1.KafkaConnection }

func (c namespacedConn) spec() *rgv1.KafkaConnectionSpec     { return &c.Spec }
func (c namespacedConn) status() *rgv1.KafkaConnectionStatus { return &c.Status }
func (c namespacedConn) object() client.Object               { return c.KafkaConnection }

func (r *KafkaConnectionReconciler) newObject() (connectionObject, client.Object) {
	if r.Kind == rgv1.KindClusterKafkaConnection {
		o := &rgv1.ClusterKafkaConnection{}
		return clusterConn{o}, o
	}
	o := &rgv1.KafkaConnection{}
	return namespacedConn{o}, o
}

// SetupWithManager registers the reconciler: its connections (spec and
// annotation changes), the policies that name them (their number and
// groups are in status), the Secrets they reference (metadata, through the
// field index) and the Coalescer's notifications.
func (r *KafkaConnectionReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Resolver == nil || r.Coalescer == nil {
		return errors.New("the connection reconciler needs a ConnectionResolver and a Coalescer")
	}
	if r.Kind != rgv1.KindClusterKafkaConnection && r.Kind != rgv1.KindKafkaConnection {
		return fmt.Errorf("connection reconciler kind %q", r.Kind)
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	if r.now == nil {
		r.now = time.Now
	}
	_, obj := r.newObject()
	notifications := source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		r.Coalescer.SetClusterNotify(r.Kind, func(o coalesce.ConnectionOwner) {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.Namespace, Name: o.Name}})
		})
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(map[string]string{rgv1.KindClusterKafkaConnection: "clusterkafkaconnection", rgv1.KindKafkaConnection: "kafkaconnection"}[r.Kind]).
		For(obj, builder.WithPredicates(r.changed())).
		Watches(&rgv1.ConsumerRetentionPolicy{}, handler.EnqueueRequestsFromMapFunc(r.connectionOfPolicy),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.connectionsForSecret)).
		WatchesRawSource(notifications).
		Complete(r)
}

// changed passes the connection events worth a reconcile: spec and
// annotation changes, and with a shard its label changes (a connection
// relabelled into the shard is reconciled by it at once).
func (r *KafkaConnectionReconciler) changed() predicate.Predicate {
	changed := predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{})
	if !r.Shard.Sharded() {
		return changed
	}
	return predicate.And(r.Shard.Predicate(), predicate.Or(changed, predicate.LabelChangedPredicate{}))
}

// connectionOfPolicy maps a policy to the connection of this kind it names.
func (r *KafkaConnectionReconciler) connectionOfPolicy(_ context.Context, o client.Object) []reconcile.Request {
	p, ok := o.(*rgv1.ConsumerRetentionPolicy)
	if !ok || p.Spec.Kafka.ConnectionRef == nil || p.Spec.Kafka.ConnectionRef.Kind != r.Kind {
		return nil
	}
	key := types.NamespacedName{Name: p.Spec.Kafka.ConnectionRef.Name}
	if r.Kind == rgv1.KindKafkaConnection {
		key.Namespace = p.Namespace
	}
	return []reconcile.Request{{NamespacedName: key}}
}

// connectionsForSecret maps a Secret to the connections of this kind that
// reference it.
func (r *KafkaConnectionReconciler) connectionsForSecret(ctx context.Context, s client.Object) []reconcile.Request {
	var reqs []reconcile.Request
	switch r.Kind {
	case rgv1.KindClusterKafkaConnection:
		if s.GetNamespace() != r.Resolver.ManagerNamespace {
			return nil
		}
		var list rgv1.ClusterKafkaConnectionList
		if err := r.Client.List(ctx, &list, client.MatchingFields{connectionSecretIndex: s.GetName()}); err != nil {
			return nil
		}
		for _, c := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: c.Name}})
		}
	default:
		var list rgv1.KafkaConnectionList
		if err := r.Client.List(ctx, &list, client.InNamespace(s.GetNamespace()), client.MatchingFields{connectionSecretIndex: s.GetName()}); err != nil {
			return nil
		}
		for _, c := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
		}
	}
	return reqs
}

func (r *KafkaConnectionReconciler) owner(key types.NamespacedName) coalesce.ConnectionOwner {
	return coalesce.ConnectionOwner{Kind: r.Kind, Namespace: key.Namespace, Name: key.Name}
}

// Reconcile observes one connection's cluster: gather what the status
// needs, compute it (computeConnectionStatus, pure), and summarize once in
// a defer (summarizeAndPatch: the patch, then the result processors).
func (r *KafkaConnectionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	conn, obj := r.newObject()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if !obj.GetDeletionTimestamp().IsZero() || !r.Shard.Owns(obj) {
		// Deleted, or relabelled to another shard: nothing is written.
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	summary := connectionSummary{before: obj.DeepCopyObject().(client.Object)}
	decided := false
	defer func() {
		if !decided {
			return // a transient error came before any decision: retried with backoff
		}
		if err := r.summarizeAndPatch(ctx, req.NamespacedName, conn, summary); err != nil {
			retErr = kerrors.NewAggregate([]error{retErr, err})
		}
	}()

	in, result, err := r.gather(ctx, req.NamespacedName, conn)
	if err != nil {
		return ctrl.Result{}, err
	}
	summary.outcome, decided = computeConnectionStatus(*conn.status(), in), true
	return result, nil
}

func (r *KafkaConnectionReconciler) gather(ctx context.Context, key types.NamespacedName, c connectionObject) (connectionInput, ctrl.Result, error) {
	in := connectionInput{Generation: c.GetGeneration(), Now: r.now()}
	var policies rgv1.ConsumerRetentionPolicyList
	opts := []client.ListOption{client.MatchingFields{connectionRefIndex: connectionKey(r.Kind, key.Namespace, key.Name)}}
	if err := r.Client.List(ctx, &policies, opts...); err != nil {
		return in, ctrl.Result{}, fmt.Errorf("listing the policies that name the connection: %w", err)
	}
	for i := range policies.Items {
		in.Policies = append(in.Policies, &policies.Items[i])
	}
	pending := pendingRecheck(c.GetAnnotations(), c.status().LastHandledRequestedAt)

	var (
		conn    kafka.Connection
		servers []string
		err     error
	)
	switch o := c.(type) {
	case clusterConn:
		conn, servers, err = r.Resolver.ResolveClusterConnection(ctx, o.ClusterKafkaConnection)
	case namespacedConn:
		conn, servers, err = r.Resolver.ResolveNamespacedConnection(ctx, o.KafkaConnection)
	}
	in.Servers = servers
	var d *kafka.Discovery
	if ds := c.spec().Discovery; err == nil && ds != nil && ds.Enabled && ds.RecoveryWindow != nil {
		d = &kafka.Discovery{}
		if ds.GroupPattern != "" {
			re, rerr := regexp.Compile(ds.GroupPattern)
			if rerr != nil {
				err = &SpecProblem{Reason: ReasonInvalidDiscoveryPattern,
					Message: fmt.Sprintf("spec.discovery.groupPattern %q is not a regular expression: %v", ds.GroupPattern, rerr)}
			} else {
				d.Match = re.MatchString
			}
		}
		in.Discovery = &proof.DiscoveryPolicy{RecoveryWindow: ds.RecoveryWindow.Duration,
			AllowInfiniteRetention: ds.AllowInfiniteRetention, AllowSizeBoundedRetention: ds.AllowSizeBoundedRetention}
	}
	var problem *SpecProblem
	switch {
	case errors.As(err, &problem):
		r.Coalescer.UnregisterCluster(r.owner(key))
		in.Problem, in.HandledRequestedAt = problem, pending
		return in, ctrl.Result{}, nil
	case err != nil:
		return in, ctrl.Result{}, err
	}

	interval := r.interval(c)
	var notBefore time.Time
	rk := "connection/" + r.Kind + "/" + key.String()
	if pending != "" {
		notBefore = r.rechecks.since(rk, pending, in.Now)
	}
	co, age, fresh := r.Coalescer.RequestCluster(r.owner(key), conn, d, maxObservationAge(interval), notBefore)
	if !fresh {
		return in, ctrl.Result{RequeueAfter: jitter(interval)}, nil
	}
	if pending != "" {
		in.HandledRequestedAt = pending
		r.rechecks.forget(rk)
	}
	in.Cluster = &co
	if in.Discovery != nil && co.ClusterID != "" {
		// Policies that name the same cluster by its addresses, or by
		// another connection, guard their groups as well.
		var same rgv1.ConsumerRetentionPolicyList
		// A failed list (the cache only) lists those groups as unguarded
		// this once: louder, never quieter.
		if err := r.Client.List(ctx, &same, client.MatchingFields{clusterIDIndex: co.ClusterID}); err != nil {
			logf.FromContext(ctx).Error(err, "listing the policies on the same cluster; their groups are listed as unguarded", "clusterID", co.ClusterID)
		}
		for i := range same.Items {
			in.SameCluster = append(in.SameCluster, &same.Items[i])
		}
	}
	if r.Workloads != nil && in.Discovery != nil && len(co.Failures) == 0 {
		in.Consumers = r.consumers(ctx, guardedGroups(in.Policies, in.SameCluster), co, servers)
	}
	return in, ctrl.Result{RequeueAfter: nextCheck(interval, age)}, nil
}

// consumers reads what maps the unguarded groups to their workloads: the
// pods at their live members' hosts, every workload's configuration, and
// KEDA's Kafka triggers (compared with the connection's servers). A
// read that fails leaves the groups without workloads (nil), logged:
// the connection's status stays what Kafka says.
func (r *KafkaConnectionReconciler) consumers(ctx context.Context, guarded map[string]bool, co kafka.ClusterObservation, servers []string) *workloads.Index {
	var hosts []netip.Addr
	for _, d := range co.Discovered {
		if !guarded[d.Group] {
			hosts = append(hosts, workloads.MemberHosts(d.Observation.Group.Members)...)
		}
	}
	var snap workloads.Snapshot
	err := r.Workloads.PodsAt(ctx, hosts, &snap)
	if err == nil {
		err = r.Workloads.Workloads(ctx, &snap)
	}
	if err != nil {
		logf.FromContext(ctx).Error(err, "reading the workloads that consume the unguarded groups; status lists none")
		return nil
	}
	snap.Servers = servers
	idx := workloads.NewIndex(snap)
	for _, u := range idx.Unresolved() {
		logf.FromContext(ctx).V(1).Info("a KEDA trigger maps no group", "scaler", u.Scaler.String(), "namespace", u.Scaler.Namespace, "trigger", u.Trigger, "reason", u.Reason)
	}
	return idx
}

func (r *KafkaConnectionReconciler) interval(c connectionObject) time.Duration {
	switch {
	case r.intervalOverride > 0:
		return r.intervalOverride
	}
	return c.spec().CheckIntervalOrDefault()
}

func (r *KafkaConnectionReconciler) patchStatus(ctx context.Context, before, after client.Object) error {
	return patchStatus(ctx, r.Client, before, after)
}

func (r *KafkaConnectionReconciler) forget(key types.NamespacedName) {
	r.Coalescer.UnregisterCluster(r.owner(key))
	connectionMetricsState.forget(r.owner(key))
	r.ready.forget(key)
	r.rechecks.forget("connection/" + r.Kind + "/" + key.String())
}
