package cli

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// scan sits beside check in this package: both need only Kafka and the
// proof (internal/kafka, internal/proof), no Kubernetes client, and run
// where the manager does not (a laptop, a CI job). Its --emit-policies
// prints the API's types, which every layer may import.

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
	timeout                   time.Duration
	color                     string
	logs                      logOptions

	pattern *regexp.Regexp
	ref     *[2]string // kind, name
}

func newScanCommand() *cobra.Command {
	o := &scanOptions{}
	cmd := &cobra.Command{
		Use:   "scan --bootstrap-server HOST:PORT --recovery-window 168h",
		Short: "Judge every consumer group on a cluster, no policy needed",
		Long: `Judge every consumer group on a Kafka cluster (ListGroups, then the topics
each group committed on) against one recovery window, without Kubernetes and
without any policy: the way a platform team sees, in one command, which groups
would silently lose data if their consumers stayed down that long.

Each group gets the proof a policy would: committed offsets inside the
retained log, topic retention and offsets retention covering the window,
offsets that expire on the group's real clock. Groups are listed worst first
(Violated, then Unknown, then Proven). A group without committed offsets is
Unknown (GroupTopicsUnknown): nothing says what it reads or where it would
resume. Kafka Connect worker groups and share groups are left out.

--emit-policies prints a ConsumerRetentionPolicy per group instead, to adopt
the guard on an existing cluster: fill in each selector and apply.

Exit codes: 1 when any group is Violated, else 2 when any is Unknown (or the
cluster could not be fully read), else 0; 64 usage error.`,
		Example: `  retention-guard scan --bootstrap-server kafka-0:9092 --recovery-window 168h

  retention-guard scan --bootstrap-server kafka:9093 --tls-ca ca.crt \
    --sasl-mechanism SCRAM-SHA-512 --sasl-username guard --sasl-password-file pw \
    --recovery-window 240h --group-pattern '^settle-' --output json

  retention-guard scan --bootstrap-server kafka:9092 --recovery-window 168h \
    --emit-policies --emit-connection-ref ClusterKafkaConnection/prod > policies.yaml`,
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
	f.StringVar(&o.emitNamespace, "emit-namespace", "", "with --emit-policies: the policies' namespace (default: none, apply with -n)")
	f.BoolVar(&o.allowInfiniteRetention, "allow-infinite-retention", false, "accept topics with retention.ms=-1")
	f.BoolVar(&o.allowSizeBoundedRetention, "allow-size-bounded-retention", false, "accept topics whose retention.bytes is not -1")
	f.DurationVar(&o.timeout, "timeout", 30*time.Second, "bound on the whole scan")
	f.StringVar(&o.color, "color", "auto", "colour the table: auto (only on a terminal, not with NO_COLOR), always or never")
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
	observer := kafka.NewObserver(kafka.WithLogger(log))
	defer observer.Close()

	d := &kafka.Discovery{}
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
		err = writePolicies(out, o, res)
	case o.output == "json":
		err = writeScanJSON(out, res)
	default:
		err = writeScanTable(out, res, useColor(o.color, out))
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
	res := scanResult{protocolTypes: make(map[string]string)}
	res.failures = append(res.failures, co.Failures...)
	res.failures = append(res.failures, co.DiscoveryFailures...)
	for _, d := range co.Discovered {
		obs := d.Observation
		res.judgements = append(res.judgements, proof.JudgeGroup(obs, d.Topics, dp, co.ObservedAt))
		res.protocolTypes[d.Group] = obs.Group.ProtocolType
	}
	proof.SortWorstFirst(res.judgements)
	return res
}
