package cli

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/proof"
	"github.com/retentionguard/retention-guard/internal/workloads"
)

// scan sits beside check in this package: both need only Kafka and the
// proof (internal/kafka, internal/proof) and run where the manager does
// not (a laptop, a CI job). Its --emit-policies prints the API's types,
// which every layer may import; given a kubeconfig it also reads the
// cluster's workloads (scan_workloads.go) to fill each policy's selector
// from the workloads the matcher (internal/workloads) finds.

type scanOptions struct {
	conn                      connectionFlags
	recoveryWindow            time.Duration
	groupPattern              string
	output                    string
	emitPolicies              bool
	emitConnectionRef         string
	emitNamespace             string
	allowInfiniteRetention    bool
	allowSizeBoundedRetention bool
	readOffsetsTopic          bool
	timeout                   time.Duration
	color                     string
	logs                      logOptions
	kube                      kubeOptions

	pattern *regexp.Regexp
	ref     *[2]string // kind, name
}

func newScanCommand() *cobra.Command {
	o := &scanOptions{}
	cmd := &cobra.Command{
		Use:   "scan --bootstrap-server HOST:PORT --recovery-window 168h",
		Short: "Judge every consumer group on a cluster, no policy needed",
		Long: `Judge every consumer group on a Kafka cluster (ListGroups, then the topics
each group committed on) against one recovery window, without any policy
(and without Kubernetes, unless given a kubeconfig): the way a platform team sees, in one command, which groups
would silently lose data if their consumers stayed down that long.

Each group gets the proof a policy would: committed offsets inside the
retained log, topic retention and offsets retention covering the window,
offsets that expire on the group's real clock. Groups are listed worst first
(Violated, then Unknown, then Proven). A group without committed offsets is
Unknown (GroupTopicsUnknown): nothing says what it reads or where it would
resume. Kafka Connect worker groups and share groups are left out.

--emit-policies prints a ConsumerRetentionPolicy per group instead, to adopt
the guard on an existing cluster. With a kubeconfig (--kubeconfig, or the
KUBECONFIG variable; --context; --namespace to read only some namespaces)
the scan finds the workloads that consume each group and emits the group's
policy into each such workload's namespace, its selector the labels the
workload's own selector uses (a Job's or CronJob's template labels), with a
comment saying the evidence and how sure it is:

  Certain   a live member of the group connects from a pod of the workload
            (the member's client host is the pod's IP)
  Declared  a KEDA ScaledObject scales the workload (a ScaledJob creates its
            Jobs) on a kafka or apache-kafka trigger whose consumerGroup is
            the group and whose bootstrapServers, when named, are this
            cluster's (--bootstrap-server); consumerGroupFromEnv is resolved
            as KEDA does, from the target's container environment (literal
            or ConfigMap); a Secret's variable is never read, and the
            trigger is reported on stderr as unresolvable
  Likely    a container variable or a mounted ConfigMap sets the group ID
            under a name the clients read it from (SPRING_KAFKA_CONSUMER_GROUP_ID,
            KAFKA_GROUP_ID, GROUP_ID, group.id, application.id, ...)
  Possible  any variable or property whose name contains GROUP is the group ID

A parked workload (0 replicas — KEDA's scale to zero too —, a suspended
CronJob) has no pods: it matches by its configuration or its KEDA trigger
only, and the comment says so. KEDA's TriggerAuthentications (credentials)
are never read. A group no workload
matches keeps the placeholder selector: fill it in before applying. An API
server that cannot be read is an error (exit 2), never a silent fallback.
Without a kubeconfig, every policy has the placeholder selector.

The table and --output json name the same workloads when --kubeconfig,
--context or --namespace is given (the KUBECONFIG variable alone does not
make them read the cluster): a WORKLOADS column (Kind/namespace/name and
confidence, the first three and how many more) and each group's
"workloads" (kind, namespace, name, confidence, evidence, message, parked:
the fields of a connection's status.unguardedGroups[].workloads).

Exit codes: 1 when any group is Violated, else 2 when any is Unknown (or the
cluster could not be fully read), else 0; 64 usage error.`,
		Example: `  retention-guard scan --bootstrap-server kafka-0:9092 --recovery-window 168h

  retention-guard scan --bootstrap-server kafka:9093 --tls-ca ca.crt \
    --sasl-mechanism SCRAM-SHA-512 --sasl-username guard --sasl-password-file pw \
    --recovery-window 240h --group-pattern '^settle-' --output json

  retention-guard scan --bootstrap-server kafka:9092 --recovery-window 168h \
    --emit-policies --emit-connection-ref ClusterKafkaConnection/prod > policies.yaml

  retention-guard scan --bootstrap-server kafka:9092 --recovery-window 168h \
    --emit-policies --kubeconfig ~/.kube/prod --namespace ledger --namespace shop`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return usageError{err}
			}
			return o.run(cmd)
		},
	}
	f := cmd.Flags()
	o.conn.bind(f)
	f.DurationVar(&o.recoveryWindow, "recovery-window", 0, "longest downtime every group must survive, e.g. 168h (required)")
	f.StringVar(&o.groupPattern, "group-pattern", "", "regular expression (RE2, unanchored): only groups whose id matches")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table or json")
	f.BoolVar(&o.emitPolicies, "emit-policies", false, "print a ConsumerRetentionPolicy skeleton (YAML) per group with topics, instead of the table")
	f.StringVar(&o.emitConnectionRef, "emit-connection-ref", "", "with --emit-policies: name a connection (ClusterKafkaConnection/NAME or KafkaConnection/NAME) instead of the bootstrap servers")
	f.StringVar(&o.emitNamespace, "emit-namespace", "", "with --emit-policies: the policies' namespace (default: none, apply with -n); a policy matched to workloads goes to theirs")
	f.BoolVar(&o.allowInfiniteRetention, "allow-infinite-retention", false, "accept topics with retention.ms=-1")
	f.BoolVar(&o.allowSizeBoundedRetention, "allow-size-bounded-retention", false, "accept topics whose retention.bytes is not -1")
	f.BoolVar(&o.readOffsetsTopic, "read-offsets-topic", true, "read every group's exact commit and Empty times from __consumer_offsets (needs Read on it; "+
		"where denied, they are bounded and the TIMES column says so); =false bounds them from record timestamps without asking")
	f.DurationVar(&o.timeout, "timeout", 30*time.Second, "bound on the whole scan")
	f.StringVar(&o.color, "color", "auto", "colour the table: auto (only on a terminal, not with NO_COLOR), always or never")
	f.StringVar(&o.kube.kubeconfig, "kubeconfig", "", "the kubeconfig to read the workloads that consume each group from (with --emit-policies, default: KUBECONFIG, when set)")
	f.StringVar(&o.kube.context, "context", "", "the kubeconfig context to read the workloads from (default: its current context)")
	f.StringArrayVar(&o.kube.namespaces, "namespace", nil, "read workloads only in this namespace (repeat it; default: every namespace; needs a kubeconfig)")
	o.logs.bind(f)
	return cmd
}

func (o *scanOptions) validate() error {
	problems := o.conn.problems()
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if o.recoveryWindow <= 0 {
		add("--recovery-window is required and must be positive, e.g. --recovery-window 168h (days are written in hours: 7 days = 168h)")
	}
	if o.groupPattern != "" {
		re, err := regexp.Compile(o.groupPattern)
		if err != nil {
			add("--group-pattern %q is not a regular expression: %v", o.groupPattern, err)
		}
		o.pattern = re
	}
	if o.output != "table" && o.output != "json" {
		add("--output %q: use table or json", o.output)
	}
	if o.color != "auto" && o.color != "always" && o.color != "never" {
		add("--color %q: use auto, always or never", o.color)
	}
	if o.emitConnectionRef != "" {
		kind, name, ok := strings.Cut(o.emitConnectionRef, "/")
		if !ok || name == "" || (kind != "ClusterKafkaConnection" && kind != "KafkaConnection") {
			add("--emit-connection-ref %q: use ClusterKafkaConnection/NAME or KafkaConnection/NAME", o.emitConnectionRef)
		}
		o.ref = &[2]string{kind, name}
	}
	if (o.emitConnectionRef != "" || o.emitNamespace != "") && !o.emitPolicies {
		add("--emit-connection-ref and --emit-namespace go with --emit-policies")
	}
	if len(o.kube.namespaces) > 0 && !o.kube.wanted() {
		add("--namespace needs a kubeconfig: --kubeconfig PATH, or set KUBECONFIG")
	}
	for _, ns := range o.kube.namespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			add("--namespace %q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
	}
	if o.timeout <= 0 {
		add("--timeout must be positive, e.g. --timeout 30s")
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s\nRun 'retention-guard scan --help' for usage", strings.Join(problems, "\n"))
	}
	return nil
}

// scanResult is what a scan found: the judgements worst first, and what
// kept it from reading the whole cluster.
type scanResult struct {
	judgements    []proof.Judgement
	protocolTypes map[string]string
	members       map[string][]proof.GroupMember
	failures      []proof.Failure // the connection, or discovery, fell short
}

func (o *scanOptions) run(cmd *cobra.Command) error {
	conn, err := o.conn.connection()
	if err != nil {
		return err
	}
	log := zap.New(zap.UseFlagOptions(&o.logs.Options), zap.WriteTo(cmd.ErrOrStderr()))
	if !cmd.Flags().Changed("zap-log-level") && !cmd.Flags().Changed("zap-devel") {
		log = logr.Discard()
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
	defer cancel()
	// The workloads are read first: a cluster that cannot be read stops
	// the scan before Kafka is asked anything.
	var index *workloads.Index
	if o.kube.wanted() && (o.emitPolicies || o.kube.named()) {
		cfg, err := o.kube.restConfig()
		if err != nil {
			return exitError{code: ExitUnknown, err: fmt.Errorf("%w; %s", err, o.kube.fallback(o.emitPolicies))}
		}
		snap, err := readSnapshot(ctx, cfg, o.kube.namespaces)
		if err != nil {
			return exitError{code: ExitUnknown, err: fmt.Errorf("cannot read the workloads that consume the groups: %w", err)}
		}
		snap.Servers = conn.BootstrapServers
		index = workloads.NewIndex(snap)
		for _, u := range index.Unresolved() {
			fmt.Fprintf(cmd.ErrOrStderr(), "KEDA trigger maps no group: %s\n", u)
		}
	}
	observer := kafka.NewObserver(kafka.WithLogger(log))
	defer observer.Close()

	d := &kafka.Discovery{ReadOffsetsTopic: o.readOffsetsTopic, RecoveryWindow: o.recoveryWindow}
	if o.pattern != nil {
		d.Match = o.pattern.MatchString
	}
	co := observer.ObserveCluster(ctx, conn, kafka.ClusterRequest{Discover: d})
	res := judgeDiscovered(co, proof.DiscoveryPolicy{
		RecoveryWindow:            o.recoveryWindow,
		AllowInfiniteRetention:    o.allowInfiniteRetention,
		AllowSizeBoundedRetention: o.allowSizeBoundedRetention,
	})

	out := cmd.OutOrStdout()
	switch {
	case o.emitPolicies:
		err = writePolicies(out, o, res, index)
	case o.output == "json":
		err = writeScanJSON(out, res, index)
	default:
		err = writeScanTable(out, res, index, useColor(o.color, out))
	}
	if err != nil {
		return err
	}
	for _, f := range res.failures {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\n", f.Reason, f.Message)
	}
	violated, unknown := false, len(res.failures) > 0
	for _, j := range res.judgements {
		violated = violated || j.Verdict == proof.Violated
		unknown = unknown || j.Verdict == proof.Unknown
	}
	switch {
	case violated:
		return exitError{code: ExitViolated}
	case unknown:
		return exitError{code: ExitUnknown}
	}
	return nil
}

// judgeDiscovered judges every group a discovering observation found,
// worst first.
func judgeDiscovered(co kafka.ClusterObservation, dp proof.DiscoveryPolicy) scanResult {
	res := scanResult{protocolTypes: make(map[string]string), members: make(map[string][]proof.GroupMember)}
	res.failures = append(res.failures, co.Failures...)
	res.failures = append(res.failures, co.DiscoveryFailures...)
	for _, d := range co.Discovered {
		obs := d.Observation
		res.judgements = append(res.judgements, proof.JudgeGroup(obs, d.Topics, dp, co.ObservedAt))
		res.protocolTypes[d.Group] = obs.Group.ProtocolType
		res.members[d.Group] = obs.Group.Members
	}
	proof.SortWorstFirst(res.judgements)
	return res
}
