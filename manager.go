package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	rgv1 "github.com/retentionguard/retention-guard/api/v1alpha1"
	"github.com/retentionguard/retention-guard/internal/certs"
	"github.com/retentionguard/retention-guard/internal/cli"
	"github.com/retentionguard/retention-guard/internal/coalesce"
	"github.com/retentionguard/retention-guard/internal/cursor"
	"github.com/retentionguard/retention-guard/internal/logging"
	"github.com/retentionguard/retention-guard/internal/resolve"
	"github.com/retentionguard/retention-guard/internal/shard"
	"github.com/retentionguard/retention-guard/webhook"
)

// leaderElectionID names the Lease the reconciler's replicas elect a leader
// with.
const leaderElectionID = "retention-guard.retentionguard.io"

// The Kubernetes client's default rate: enough to write 5,000 first proofs
// and their events within about two minutes of a start, while a steady
// state writes almost nothing (docs/scaling.md).
const (
	defaultKubeAPIQPS   = 100
	defaultKubeAPIBurst = 200
)

// managerOptions are the manager's flags.
type managerOptions struct {
	logs                    cli.LogOptions
	kubeconfig              string
	metricsAddr             string
	probeAddr               string
	leaderElect             bool
	leaderElectionNamespace string
	leaderElectionID        string
	allowedBootstrapServers []string
	kafkaRequestTimeout     time.Duration
	liveChecksPerConnection int
	allowedCursorHosts      []string
	cursorTimeout           time.Duration
	watchNamespaces         []string
	watchLabelSelector      string
	kubeAPIQPS              float32
	kubeAPIBurst            int
	kubeAPITimeout          time.Duration
	pprofAddr               string
	// wrapTransport wraps the Kubernetes client's transport, and
	// skipNameValidation allows a second manager in one process (tests).
	wrapTransport      func(http.RoundTripper) http.RoundTripper
	skipNameValidation bool

	// The admission webhook.
	webhookEnabled   bool
	webhookHost      string
	webhookPort      int
	webhookCertDir   string
	liveCheckTimeout time.Duration
	certs            certs.Options

	// Derived by validate.
	allowlist   resolve.BootstrapAllowlist
	cursorHosts resolve.BootstrapAllowlist
	shard       *shard.Shard
}

func (o *managerOptions) bind(fs *pflag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", "",
		"Path to a kubeconfig, for running outside a cluster. Default: $KUBECONFIG, the in-cluster configuration, then ~/.kube/config.")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080",
		`Address the Prometheus metrics endpoint binds to; "0" disables it.`)
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081",
		"Address the /healthz and /readyz probes bind to.")
	fs.BoolVar(&o.leaderElect, "leader-elect", false,
		"Elect a leader among replicas so that one reconciles at a time (the Helm chart turns it on; every replica serves the webhook).")
	fs.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "",
		"Namespace of the leader election Lease. Default: the namespace the manager runs in.")
	fs.StringVar(&o.leaderElectionID, "leader-election-id", "",
		"Name of the leader election Lease (the Helm chart names one it creates, so that helm uninstall deletes it). "+
			"Default: "+leaderElectionID+", or with --watch-label-selector a name derived from the selector, so that shards never share a lock.")
	fs.StringSliceVar(&o.allowedBootstrapServers, "allowed-bootstrap-servers", nil,
		"Glob patterns (path.Match, case-insensitive, over host:port) of the Kafka bootstrap servers policies (inline) and "+
			`KafkaConnections may name, e.g. "*.kafka.svc:9093,kafka-?.prod:9092"; repeatable. A policy naming any other server gets `+
			"Ready=False, reason BootstrapServerNotAllowed, and no connection is opened. Empty (the default): none is allowed, "+
			`only ClusterKafkaConnections (the platform team's) are observed; "*" allows every host:port.`)
	fs.DurationVar(&o.kafkaRequestTimeout, "kafka-request-timeout", 10*time.Second,
		"How long one Kafka request may take, retries included. One observation of a cluster (metadata, then offsets, "+
			"configs and groups, then record timestamps) is bounded by three times this.")
	fs.IntVar(&o.liveChecksPerConnection, "live-checks-per-connection", coalesce.DefaultLiveChecks,
		"How many one-group live observations (the webhook's live checks of policies whose status proof is stale, and "+
			"re-reads) may run at once on one Kafka connection. Beyond it a live check waits for one to end within the "+
			"webhook's deadline, else its policy is judged unproven (counted in retentionguard_live_checks_busy_total): "+
			"a slow cluster is not buried under one-group requests on top of the passes that fell behind.")
	fs.StringSliceVar(&o.allowedCursorHosts, "allowed-cursor-hosts", nil,
		"Glob patterns (path.Match, case-insensitive, over host:port, or a unix socket path) of the database hosts that "+
			`spec.cursor connection strings may name, e.g. "*.db.svc:5432,mariadb-?.prod:3306"; repeatable. A policy naming any `+
			"other host is Stalled (reason DatabaseHostNotAllowed), its cursor unreadable, and no connection is opened. "+
			`Empty (the default): none is allowed; "*" allows every host:port.`)
	fs.DurationVar(&o.cursorTimeout, "cursor-timeout", cursor.DefaultStatementTimeout,
		"Statement timeout of one business cursor read (spec.cursor), on the database server; connecting has as long again. "+
			"A cursor is read within its cluster's Kafka observation (bounded by three times --kafka-request-timeout), "+
			"without holding back the cluster's other policies.")
	fs.StringSliceVar(&o.watchNamespaces, "watch-namespaces", nil,
		"Namespaces whose policies (and Secrets) the manager watches; repeatable or comma-separated. Default: all namespaces.")
	fs.StringVar(&o.watchLabelSelector, "watch-label-selector", "",
		"Kubernetes label selector of the ConsumerRetentionPolicies, KafkaConnections and ClusterKafkaConnections this manager "+
			"reconciles (one manager per shard, e.g. \""+rgv1.ShardLabel+"=a\"; the default shard \""+rgv1.ShardLabel+
			" notin (a,b)\" also takes objects without the label). Label a connection and its policies alike. With "+
			"--enable-webhook=false only the selected objects are cached; a replica serving the webhook caches every policy "+
			"(it judges them all) and reconciles only its selection. Empty (the default): everything.")
	fs.Float32Var(&o.kubeAPIQPS, "kube-api-qps", defaultKubeAPIQPS,
		"Requests per second the manager's Kubernetes client may send on average, whatever the kubeconfig's source "+
			"(without it, client-go's default of 5 applies with --kubeconfig and none in a cluster); -1: no client-side limit, "+
			"the API server's priority and fairness only. Starting on thousands of policies writes each first proof once "+
			"(docs/scaling.md).")
	fs.IntVar(&o.kubeAPIBurst, "kube-api-burst", defaultKubeAPIBurst,
		"Requests the manager's Kubernetes client may send in a burst above --kube-api-qps.")
	fs.DurationVar(&o.kubeAPITimeout, "kube-api-timeout", defaultKubeAPITimeout,
		"How long one Kubernetes API request may take when its caller set no deadline (watches excepted); "+
			"each reconcile is bounded by twice this.")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", "",
		`Address to serve Go's pprof profiles on (/debug/pprof/), e.g. "127.0.0.1:8082"; empty: off. `+
			"Profiles show internals: bind it to loopback and reach it with kubectl port-forward.")
	fs.BoolVar(&o.webhookEnabled, "enable-webhook", true,
		"Serve the admission webhook that refuses rollouts of consumers while their proof fails. Off: only the reconciler runs.")
	fs.StringVar(&o.webhookHost, "webhook-host", "",
		"Address the webhook server listens on. Default: every address.")
	fs.IntVar(&o.webhookPort, "webhook-port", 9443,
		"Port the webhook server listens on (HTTPS).")
	fs.StringVar(&o.webhookCertDir, "webhook-cert-dir", certs.DefaultCertDir,
		"Directory holding the webhook server's tls.crt and tls.key (written by --cert-rotation, or mounted from cert-manager's Secret); "+
			"reloaded when they change.")
	fs.DurationVar(&o.liveCheckTimeout, "webhook-live-check-timeout", webhook.DefaultLiveCheckTimeout,
		"Deadline of the live Kafka re-check the webhook makes when a policy's proof in status is stale; keep it well under the "+
			"webhook's timeoutSeconds (5s). On timeout the verdict is Unknown, which Deny policies refuse.")
	o.certs.BindFlags(fs)
	o.logs.Bind(fs)
}

// validate checks the flags and derives what they imply. Its errors are
// usage errors.
func (o *managerOptions) validate() error {
	allow, err := resolve.NewBootstrapAllowlist(o.allowedBootstrapServers)
	if err != nil {
		return fmt.Errorf("--allowed-bootstrap-servers: %w", err)
	}
	o.allowlist = allow
	if o.cursorHosts, err = resolve.NewCursorHostAllowlist(o.allowedCursorHosts); err != nil {
		return fmt.Errorf("--allowed-cursor-hosts: %w", err)
	}
	switch {
	case o.cursorTimeout == 0:
		o.cursorTimeout = cursor.DefaultStatementTimeout
	case o.cursorTimeout < 0:
		return errors.New("--cursor-timeout must be positive, e.g. 5s")
	}
	if o.kafkaRequestTimeout <= 0 {
		return errors.New("--kafka-request-timeout must be positive")
	}
	switch {
	case o.liveChecksPerConnection == 0:
		o.liveChecksPerConnection = coalesce.DefaultLiveChecks
	case o.liveChecksPerConnection < 0:
		return fmt.Errorf("--live-checks-per-connection must be at least 1 (default %d), got %d", coalesce.DefaultLiveChecks, o.liveChecksPerConnection)
	}
	switch {
	case o.kubeAPITimeout == 0:
		o.kubeAPITimeout = defaultKubeAPITimeout
	case o.kubeAPITimeout < 0:
		return errors.New("--kube-api-timeout must be positive, e.g. 30s")
	}
	if o.shard, err = shard.Parse(strings.TrimSpace(o.watchLabelSelector)); err != nil {
		return fmt.Errorf("--watch-label-selector: %w", err)
	}
	var namespaces []string
	for _, ns := range o.watchNamespaces {
		if ns = strings.TrimSpace(ns); ns != "" {
			namespaces = append(namespaces, ns)
		}
	}
	o.watchNamespaces = namespaces
	switch {
	case o.kubeAPIQPS < 0 && o.kubeAPIQPS != -1, o.kubeAPIQPS == 0:
		return fmt.Errorf("--kube-api-qps %g: use a positive rate, or -1 for no client-side limit", o.kubeAPIQPS)
	case o.kubeAPIQPS > 0 && float32(o.kubeAPIBurst) < o.kubeAPIQPS:
		return fmt.Errorf("--kube-api-burst %d: use at least --kube-api-qps (%g)", o.kubeAPIBurst, o.kubeAPIQPS)
	}
	if o.webhookEnabled {
		if o.webhookPort < 1 || o.webhookPort > 65535 {
			return fmt.Errorf("--webhook-port %d: use a port between 1 and 65535", o.webhookPort)
		}
		if o.liveCheckTimeout <= 0 || o.liveCheckTimeout >= webhook.TimeoutSeconds*time.Second {
			return fmt.Errorf("--webhook-live-check-timeout %v: use a positive duration under the webhook timeout (%ds), e.g. 3s",
				o.liveCheckTimeout, webhook.TimeoutSeconds)
		}
		o.certs.CertDir = o.webhookCertDir
		if err := o.certs.Validate(); err != nil {
			return err
		}
	}
	return nil
}

func newManagerCommand() *cobra.Command {
	o := &managerOptions{}
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the controller and the admission webhook",
		Long: `Run the Kubernetes controller that keeps every ConsumerRetentionPolicy's
proof current (observe Kafka, prove, write status, events and metrics), and
the admission webhook that refuses rollouts of consumers while their proof
fails.

Policies that name the same Kafka cluster with the same credentials share
one batched observation per check interval. SIGTERM shuts down gracefully.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return cli.UsageError(err)
			}
			if err := runManager(ctrl.SetupSignalHandler(), o); err != nil {
				return cli.ExitError(cli.ExitFailure, err)
			}
			return nil
		},
	}
	o.bind(cmd.Flags())
	return cmd
}

// managerScheme holds the built-in types and this project's API.
func managerScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := rgv1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// setMemoryLimit sets the Go runtime's soft memory limit to 90% of the
// container's (its cgroup's) memory limit. Without it the heap may grow to
// twice what is live before the garbage collector runs (GOGC=100), and a
// manager whose live heap is half its limit is killed at the limit
// instead of collecting sooner (make bench-scale: 140 MiB live, 548 MiB
// peak RSS at 5,000 policies). GOMEMLIMIT in the environment wins, and
// AUTOMEMLIMIT=off or a ratio such as 0.8 changes it (KimMachineGun's
// automemlimit, as many Kubernetes controllers do). Without a cgroup limit
// (outside a container) the runtime's default, no limit, stays.
func setMemoryLimit(log logr.Logger) {
	limit, err := memlimit.Set(memlimit.WithRatio(0.9))
	switch {
	case err != nil:
		log.Info("Go memory limit not set from the container's", "reason", err.Error())
	case limit > 0 && limit < math.MaxInt64:
		log.Info("Go memory limit", "GOMEMLIMIT", limit)
	}
}

// runManager runs until ctx ends (SIGTERM, SIGINT).
func runManager(ctx context.Context, o *managerOptions) error {
	// The replicas' expected races on a fresh install (certificate Secret,
	// leader Lease) are logged at info, not error (see logging.QuietRaces).
	ctrl.SetLogger(logging.QuietRaces(zap.New(zap.UseFlagOptions(&o.logs.Options))))
	log := ctrl.Log.WithName("manager")
	setMemoryLimit(log)
	logScope(log, o)

	mc, err := newManagerConfig(o)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(mc.rest, mc.manager)
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	k, err := setupKafka(mgr, o)
	if err != nil {
		return err
	}
	defer k.close()
	if err := setupReconcilers(ctx, mgr, mc, k); err != nil {
		return err
	}
	if err := setupChecks(ctx, mgr, mc, o, k); err != nil {
		return err
	}

	log.Info("starting", "leaderElection", o.leaderElect, "leaderElectionID", mc.manager.LeaderElectionID,
		"watchNamespaces", o.watchNamespaces, "watchLabelSelector", o.shard.String(), "webhook", o.webhookEnabled)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the manager: %w", err)
	}
	return nil
}

// logScope says, at the start, what the flags let the manager dial and
// read.
func logScope(log logr.Logger, o *managerOptions) {
	if patterns := o.allowlist.Patterns(); len(patterns) == 0 {
		log.Info("--allowed-bootstrap-servers is empty: policies and KafkaConnections may name no Kafka bootstrap server (only ClusterKafkaConnections are observed)")
	} else {
		log.Info("policies and KafkaConnections may name only these Kafka bootstrap servers", "patterns", patterns)
	}
	if patterns := o.cursorHosts.Patterns(); len(patterns) == 0 {
		log.Info("--allowed-cursor-hosts is empty: policies may name no cursor database host")
	} else {
		log.Info("policies may name only these cursor database hosts", "patterns", patterns)
	}
	if o.certs.SecretNamespace == "" {
		log.Info("no --namespace (or $POD_NAMESPACE): no heartbeat Leases; every check writes each policy's status")
		log.Info("--namespace (or $POD_NAMESPACE) is empty: ClusterKafkaConnections that reference Secrets cannot be used, " +
			"and allowedNamespaces from: Same allows no namespace")
	}
}
