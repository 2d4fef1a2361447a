package main

import (
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/retentionguard/retention-guard/controllers"
	"github.com/retentionguard/retention-guard/internal/heartbeat"
	"github.com/retentionguard/retention-guard/internal/shard"
)

// managerConfig is what the flags amount to, computed once before
// anything is built: the Kubernetes client's configuration and the
// manager's options (scheme, probes, leader election, what the cache
// holds, the webhook server).
type managerConfig struct {
	rest          *rest.Config
	manager       ctrl.Options
	webhookServer ctrlwebhook.Server
	// heartbeatNamespace holds the heartbeat Leases: the manager's own
	// (--namespace); empty: no heartbeats.
	heartbeatNamespace string
	// watchNamespaces bounds what the manager reads (--watch-namespaces);
	// empty: every namespace.
	watchNamespaces []string
	// shard is what the reconcilers own (--watch-label-selector); and
	// cacheFiltered says the cache holds only that (no webhook), else the
	// reconcilers filter by predicate.
	shard         *shard.Shard
	cacheFiltered bool
}

// electionIDFor is the leader election Lease's name: --leader-election-id,
// else the default, suffixed with the shard's name when sharded (a
// stable hash of the selector: each shard elects its own leader).
func electionIDFor(o *managerOptions) string {
	switch {
	case o.leaderElectionID != "":
		return o.leaderElectionID
	case o.shard.Sharded():
		return "retention-guard-" + o.shard.Name() + ".retentionguard.io"
	}
	return leaderElectionID
}

// newManagerConfig computes the manager's configuration from validated
// flags.
func newManagerConfig(o *managerOptions) (*managerConfig, error) {
	scheme, err := managerScheme()
	if err != nil {
		return nil, err
	}
	var cfg *rest.Config
	if o.kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	} else {
		cfg, err = ctrl.GetConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("finding the Kubernetes API: %w", err)
	}
	cfg.QPS, cfg.Burst = o.kubeAPIQPS, o.kubeAPIBurst
	// No Kubernetes request without a deadline (a hung API server would
	// hold a worker, a runnable or the start forever).
	cfg.Wrap(withRequestTimeout(o.kubeAPITimeout))
	if o.wrapTransport != nil {
		cfg.Wrap(o.wrapTransport)
	}
	electionID := electionIDFor(o)
	// The manager starts the webhook server once something asks for it
	// (mgr.GetWebhookServer): only after the certificate is in place. The
	// handler is registered on it before that (setupWebhook).
	webhookServer := ctrlwebhook.NewServer(ctrlwebhook.Options{
		Host:    o.webhookHost,
		Port:    o.webhookPort,
		CertDir: o.webhookCertDir,
	})
	mc := &managerConfig{rest: cfg, webhookServer: webhookServer, heartbeatNamespace: o.certs.SecretNamespace,
		watchNamespaces: o.watchNamespaces, shard: o.shard, cacheFiltered: o.shard.Sharded() && !o.webhookEnabled}
	mc.manager = ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsserver.Options{BindAddress: o.metricsAddr, FilterProvider: controllers.MetricsFilter}, // /metrics: controllers.MetricsFilter
		HealthProbeBindAddress:        o.probeAddr,
		LeaderElection:                o.leaderElect,
		LeaderElectionID:              electionID,
		LeaderElectionNamespace:       o.leaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		PprofBindAddress:              o.pprofAddr,
		// Reconciles never wait on Kafka (the coalescer); what they read
		// and write in Kubernetes is bounded.
		Controller:    config.Controller{ReconciliationTimeout: 2 * o.kubeAPITimeout, SkipNameValidation: &o.skipNameValidation},
		Cache:         managerCache(o),
		WebhookServer: webhookServer,
	}
	return mc, nil
}

// cacheSelector is the label selector the cache lists policies and
// connections with: the shard's, when no webhook needs them all; nil
// otherwise.
func cacheSelector(o *managerOptions) labels.Selector {
	if o.webhookEnabled {
		return nil
	}
	return o.shard.Selector()
}

// managerCache is what the manager's cache holds: only what decisions read
// (controllers/cache.go), the heartbeat Leases and nothing else of their
// namespace's Leases, and with --watch-namespaces only those namespaces
// and the manager's own (ClusterKafkaConnections' Secrets live there).
func managerCache(o *managerOptions) cache.Options {
	heartbeatNamespace := o.certs.SecretNamespace // --namespace: the manager's
	opts := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject:         controllers.CacheByObject(cacheSelector(o)),
	}
	if heartbeatNamespace != "" {
		// Every shard's Leases: a replica serving the webhook reads them
		// all, and a shard renews only its own (internal/heartbeat).
		opts.ByObject[&coordinationv1.Lease{}] = cache.ByObject{
			Namespaces: map[string]cache.Config{heartbeatNamespace: {}},
			Label:      labels.SelectorFromSet(labels.Set{heartbeat.Label: "true"}),
		}
	}
	if len(o.watchNamespaces) > 0 {
		opts.DefaultNamespaces = make(map[string]cache.Config, len(o.watchNamespaces)+1)
		for _, ns := range o.watchNamespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
		if ns := o.certs.SecretNamespace; ns != "" {
			opts.DefaultNamespaces[ns] = cache.Config{} // ClusterKafkaConnections' Secrets live here
		}
	}
	return opts
}
