package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/controllers"
	"github.com/retentionguard/retention-guard/internal/certs"
	"github.com/retentionguard/retention-guard/internal/coalesce"
	"github.com/retentionguard/retention-guard/internal/cursor"
	"github.com/retentionguard/retention-guard/internal/gather"
	"github.com/retentionguard/retention-guard/internal/heartbeat"
	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/resolve"
	"github.com/retentionguard/retention-guard/internal/webhookscope"
	"github.com/retentionguard/retention-guard/internal/workloadread"
	"github.com/retentionguard/retention-guard/webhook"
)

// kafkaSide is what reaches outside the cluster: the Kafka observer, the
// coalescer sharing its observations, the business cursor reader, the
// resolver that turns policies and connections into dialable connections,
// and the gatherer the policy reconciler and the webhook's live check share.
type kafkaSide struct {
	observer  *kafka.Observer
	coalescer *coalesce.Coalescer
	cursors   *cursor.Reader
	resolver  *resolve.ConnectionResolver
	gatherer  *gather.Gatherer
}

func (k *kafkaSide) close() {
	k.cursors.Close()
	k.observer.Close()
}

// setupKafka builds the Kafka side and adds the coalescer to the manager.
func setupKafka(mgr ctrl.Manager, o *managerOptions) (*kafkaSide, error) {
	observer := kafka.NewObserver(
		kafka.WithLogger(ctrl.Log.WithName("kafka")),
		kafka.WithRequestHook(controllers.ObserveKafkaRequest),
		kafka.WithTimeouts(0, o.kafkaRequestTimeout, o.kafkaRequestTimeout),
	)
	coalescer := coalesce.New(observer, coalesce.Options{
		PassTimeout: 3 * o.kafkaRequestTimeout,
		LiveChecks:  o.liveChecksPerConnection,
		OnLiveBusy:  controllers.CountLiveCheckBusy,
		Logger:      ctrl.Log.WithName("observations"),
	})
	// Every replica runs the coalescer: the webhook's live checks need it
	// whether or not this replica leads.
	if err := mgr.Add(coalescer); err != nil {
		observer.Close()
		return nil, err
	}
	cursors := cursor.NewReader(
		cursor.WithStatementTimeout(o.cursorTimeout),
		cursor.WithConnectTimeout(o.cursorTimeout),
		cursor.WithLogger(ctrl.Log.WithName("cursor")),
	)
	var objects client.Reader = mgr.GetClient()
	if o.shard.Sharded() && !o.webhookEnabled {
		// The cache holds only the shard's connections: a policy whose
		// connection is labelled for another shard (a move half done)
		// still resolves it, from the API server.
		objects = &connectionFallback{cached: mgr.GetClient(), api: mgr.GetAPIReader(), log: ctrl.Log.WithName("shard")}
	}
	resolver := &resolve.ConnectionResolver{
		Metadata:         mgr.GetClient(),
		Secrets:          mgr.GetAPIReader(),
		Objects:          objects,
		Allowlist:        o.allowlist,
		ManagerNamespace: o.certs.SecretNamespace,
		Cursors:          cursors,
		CursorHosts:      o.cursorHosts,
	}
	gatherer := &gather.Gatherer{
		Resolver:  resolver,
		Coalescer: coalescer,
		// CronJobs are listed from the cache (setupWebhooks starts its
		// informer on every replica).
		CronJobs: mgr.GetClient(),
		// Every policy's unselected-consumer check reads KEDA's objects:
		// one listing a minute serves them all.
		Workloads: &workloadread.Reader{Reader: mgr.GetAPIReader(), Namespaces: o.watchNamespaces, ScalersTTL: time.Minute},
	}
	return &kafkaSide{observer: observer, coalescer: coalescer, cursors: cursors, resolver: resolver, gatherer: gatherer}, nil
}

// connectionFallback reads from the cache, and a connection the cache does
// not hold (another shard's, in a manager caching only its shard) from the
// API server: a policy and its connection labelled for different shards,
// for a moment during a move or by mistake, cost an uncached read per
// check instead of a ConnectionNotFound proof (docs/scaling.md).
type connectionFallback struct {
	cached client.Reader
	api    client.Reader
	log    logr.Logger
	// warned: the connections already logged as another shard's.
	warned sync.Map
}

func (f *connectionFallback) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := f.cached.Get(ctx, key, obj, opts...)
	switch obj.(type) {
	case *rgv1.ClusterKafkaConnection, *rgv1.KafkaConnection:
		if !apierrors.IsNotFound(err) {
			return err
		}
		if err = f.api.Get(ctx, key, obj, opts...); err == nil {
			if _, seen := f.warned.LoadOrStore(fmt.Sprintf("%T/%s", obj, key), true); !seen {
				f.log.Info("a policy of this shard names a connection of another shard: label the connection and its policies alike "+
					"(docs/scaling.md); it is read from the API server on each check meanwhile",
					"connection", key.String(), "labels", obj.GetLabels())
			}
		}
	}
	return err
}

func (f *connectionFallback) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return f.cached.List(ctx, list, opts...)
}

// setupReconcilers sets up the policy reconciler (with its heartbeats,
// when the manager knows its namespace) and one connection reconciler per
// connection kind.
func setupReconcilers(ctx context.Context, mgr ctrl.Manager, mc *managerConfig, k *kafkaSide) error {
	reconciler := &controllers.ConsumerRetentionPolicyReconciler{
		Client:   mgr.GetClient(),
		Gatherer: k.gatherer,
		Recorder: mgr.GetEventRecorder(controllers.ControllerName),
		Shard:    mc.shard,
	}
	if mc.heartbeatNamespace != "" {
		// Statuses are written when proofs change; the leader's heartbeat
		// Leases confirm them in between (internal/heartbeat).
		reconciler.Heartbeats = &heartbeat.Leases{Client: mgr.GetClient(), Namespace: mc.heartbeatNamespace,
			Logger: ctrl.Log.WithName("heartbeat"), Shard: mc.shard}
		if err := mgr.Add(reconciler.Heartbeats); err != nil {
			return err
		}
	}
	if err := reconciler.SetupWithManager(ctx, mgr); err != nil {
		return fmt.Errorf("setting up the reconciler: %w", err)
	}
	for _, kind := range []string{rgv1.KindClusterKafkaConnection, rgv1.KindKafkaConnection} {
		cr := &controllers.KafkaConnectionReconciler{
			Client:    mgr.GetClient(),
			Resolver:  k.resolver,
			Coalescer: k.coalescer,
			Recorder:  mgr.GetEventRecorder(controllers.ControllerName),
			Kind:      kind,
			Shard:     mc.shard,
			Workloads: &workloadread.Reader{Reader: mgr.GetAPIReader(), Namespaces: mc.watchNamespaces},
		}
		if err := cr.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up the %s reconciler: %w", kind, err)
		}
	}
	return nil
}

// setupChecks adds the probes: /healthz always answers; /readyz waits,
// with the webhook on, for it to serve (setupWebhooks).
func setupChecks(ctx context.Context, mgr ctrl.Manager, mc *managerConfig, o *managerOptions, k *kafkaSide) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if !o.webhookEnabled {
		return mgr.AddReadyzCheck("readyz", healthz.Ping)
	}
	ready, err := setupWebhooks(ctx, mgr, mc, o, k)
	if err != nil {
		return err
	}
	// Ready only once the webhook serves, with its certificates and its
	// handler's policies.
	return mgr.AddReadyzCheck("webhook", ready)
}

// setupWebhooks sets up the admission webhook (setupWebhook) and the
// leader's webhook scope, and returns the webhook's readiness check.
func setupWebhooks(ctx context.Context, mgr ctrl.Manager, mc *managerConfig, o *managerOptions, k *kafkaSide) (healthz.Checker, error) {
	var heartbeats client.Reader
	if mc.heartbeatNamespace != "" {
		heartbeats = mgr.GetClient()
	}
	// Live checks list the CronJobs a policy selects from the cache, as
	// the reconciler does: the informer is created now and starts with
	// the cache, so that on a replica that does not lead (the reconciler's
	// watch never starts it there) the first live check does not wait for
	// its sync.
	if _, err := mgr.GetCache().GetInformer(ctx, &batchv1.CronJob{}, cache.BlockUntilSynced(false)); err != nil {
		return nil, fmt.Errorf("setting up the webhook: informer for CronJobs: %w", err)
	}
	live := &gather.LiveChecker{Gatherer: k.gatherer}
	ready, err := setupWebhook(ctx, mgr, mc.webhookServer, o, live, heartbeats)
	if err != nil {
		return nil, fmt.Errorf("setting up the webhook: %w", err)
	}
	// The leader keeps the webhook to the namespaces with policies.
	scope := &webhookscope.Reconciler{ConfigurationName: o.certs.WebhookName, WebhookName: webhook.Name}
	if err := scope.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the webhook scope: %w", err)
	}
	return ready, nil
}

// setupWebhook provides the serving certificate (rotated by the manager, or
// files from cert-manager) and registers the admission handler on server
// before the manager starts. The server itself starts only once the
// certificate is in place (the returned readiness check asks the manager
// for it then: it cannot start without its files). The check passes once
// the certificate is ready, the server answers TLS and the handler's
// policy informer has synced: a replica is never Ready while the webhook
// path would answer 404 or without its policies.
func setupWebhook(ctx context.Context, mgr ctrl.Manager, server ctrlwebhook.Server, o *managerOptions, live webhook.LiveChecker, heartbeats client.Reader) (healthz.Checker, error) {
	certsReady, err := certs.Setup(mgr, o.certs)
	if err != nil {
		return nil, err
	}
	opts := webhook.Options{LiveCheckTimeout: o.liveCheckTimeout, LiveChecker: live, Namespaces: o.watchNamespaces,
		Heartbeats: heartbeats, Server: server}
	synced, err := webhook.Setup(ctx, mgr, opts)
	if err != nil {
		return nil, err
	}
	serving := certs.ReadyChecker(certsReady, mgr)
	ctrl.Log.WithName("webhook").Info("admission webhook registered", "path", webhook.Path, "port", o.webhookPort)
	return func(req *http.Request) error {
		if err := serving(req); err != nil {
			return err
		}
		return synced(req)
	}, nil
}
