package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/retentionguard/retention-guard/internal/assemble"
	"github.com/retentionguard/retention-guard/internal/cursor"
	"github.com/retentionguard/retention-guard/internal/kafka"
	"github.com/retentionguard/retention-guard/internal/proof"
)

// Exit codes of `retention-guard check`, a contract for CI pipelines and
// runbooks.
const (
	ExitProven   = 0
	ExitViolated = 1
	ExitUnknown  = 2
)

type checkOptions struct {
	conn                      connectionFlags
	group                     string
	topics                    []string
	recoveryWindow            time.Duration
	output                    string
	allowInfiniteRetention    bool
	allowSizeBoundedRetention bool
	readOffsetsTopic          bool
	cleaningAllowance         time.Duration
	cursorDriver              string
	cursorDSNFile             string
	cursorQuery               string
	resumeFrom                string
	timeout                   time.Duration
	color                     string
	logs                      logOptions
}

func newCheckCommand() *cobra.Command {
	o := &checkOptions{}
	cmd := &cobra.Command{
		Use:   "check --bootstrap-server HOST:PORT --group G --topic T --recovery-window 72h",
		Short: "Prove one consumer group against a live Kafka cluster",
		Long: `Prove, against a live Kafka cluster and without Kubernetes, that a consumer
group can stay down for its recovery window and resume without losing records:

  - every committed offset lies inside the retained log (log start <= committed
    <= log end; a missing offset is accepted only while the log starts at 0);
  - each topic's retention.ms covers the window and retention.bytes is -1;
  - the brokers' offsets.retention.minutes covers the window.

With a business cursor (--cursor-driver, --cursor-dsn-file: the consumer's own
record of progress in PostgreSQL, MySQL or MariaDB, seed 003's consumer_cursor
table by default) every partition's cursor must lie inside the retained log
too, and the group's offsets are compared with it: records a restart from the
group would skip (--resume-from group, the default: a violation) or replay
(reported). With --resume-from cursor the consumer seeks to its cursor, and the
group's offsets do not decide.

Run it before a consumer starts (an init container, a CI step, a runbook).

A check is one look, with no memory: it cannot know since when an Empty group
has been Empty, an offset that expired since it was last seen, or that a log
diverged (an unclean leader election) under an offset committed without a
leader epoch before it looked (on Kafka 3.x, whose record timestamps no broker
bounds by default). The manager, which watches, can: it is what guards
rollouts.

Exit codes: 0 Proven, 1 Violated, 2 Unknown (could not prove), 64 usage error.`,
		Example: `  retention-guard check --bootstrap-server kafka-0:9092,kafka-1:9092 \
    --group ledger-settle-consumer --topic settle-task --recovery-window 240h

  retention-guard check --bootstrap-server kafka:9093 --group fanout --topic outbox \
    --recovery-window 72h --tls-ca ca.crt --sasl-mechanism SCRAM-SHA-512 \
    --sasl-username fanout --sasl-password-file /run/secrets/kafka-password --output json

  retention-guard check --bootstrap-server kafka-0:9092 --group ledger-settle-consumer \
    --topic settle-task --recovery-window 240h \
    --cursor-driver postgres --cursor-dsn-file /run/secrets/settle-db-dsn --resume-from cursor`,
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
	f.StringVar(&o.group, "group", "", "consumer group id (required)")
	f.StringArrayVar(&o.topics, "topic", nil, "topic the group consumes; repeat for several (required)")
	f.DurationVar(&o.recoveryWindow, "recovery-window", 0, "longest downtime the group must survive, e.g. 72h (required)")
	f.StringVarP(&o.output, "output", "o", "table", "output format: table or json")
	f.BoolVar(&o.allowInfiniteRetention, "allow-infinite-retention", false, "accept topics with retention.ms=-1")
	f.BoolVar(&o.allowSizeBoundedRetention, "allow-size-bounded-retention", false, "accept topics whose retention.bytes is not -1")
	f.BoolVar(&o.readOffsetsTopic, "read-offsets-topic", true, "read exact commit and Empty times from __consumer_offsets (needs Read on it; "+
		"where denied, they are bounded and a warning says so); =false bounds them from record timestamps without asking")
	f.StringVar(&o.cursorDriver, "cursor-driver", "", "database of the business cursor: postgres or mysql (MySQL, MariaDB)")
	f.StringVar(&o.cursorDSNFile, "cursor-dsn-file", "", "file holding the cursor database's connection string (never passed on the command line)")
	f.StringVar(&o.cursorQuery, "cursor-query", "", "query returning partition, next_offset (and topic, updated_at) with the group ID as its one parameter "+
		"($1 for postgres, ? for mysql); default: seed 003's consumer_cursor table")
	f.StringVar(&o.resumeFrom, "resume-from", "", "where the consumer restarts: group (its committed offsets, the default) or cursor (it seeks to its business cursor)")
	f.DurationVar(&o.timeout, "timeout", 10*time.Second, "bound on the whole check")
	f.DurationVar(&o.cleaningAllowance, "cleaning-allowance", proof.DefaultCleaningAllowance, "assumed: the longest one log cleaning runs; "+
		"a tombstone the cleaner had not kept when read counts as read that much earlier (a lagging group on a compacting topic)")
	f.StringVar(&o.color, "color", "auto", "colour the table: auto (only on a terminal, not with NO_COLOR), always or never")
	o.logs.bind(f)
	return cmd
}

// validate checks the flags alone, before any connection: every problem is
// a usage error (exit 64) that says what to do.
func (o *checkOptions) validate() error {
	problems := o.conn.problems()
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	if strings.TrimSpace(o.group) == "" {
		add("--group is required: the consumer group id (group.id) to prove")
	}
	if len(o.topics) == 0 {
		add("--topic is required: repeat it for every topic the group consumes")
	}
	seen := map[string]bool{}
	for _, t := range o.topics {
		switch {
		case strings.TrimSpace(t) == "":
			add("--topic must not be empty")
		case seen[t]:
			add("--topic %q is given twice", t)
		}
		seen[t] = true
	}
	if o.recoveryWindow <= 0 {
		add("--recovery-window is required and must be positive, e.g. --recovery-window 72h (days are written in hours: 10 days = 240h)")
	}
	if o.output != "table" && o.output != "json" {
		add("--output %q: use table or json", o.output)
	}
	if o.color != "auto" && o.color != "always" && o.color != "never" {
		add("--color %q: use auto, always or never", o.color)
	}
	if o.timeout <= 0 {
		add("--timeout must be positive, e.g. --timeout 10s")
	}
	o.validateCursor(add)
	if len(problems) > 0 {
		return fmt.Errorf("%s\nRun 'retention-guard check --help' for usage", strings.Join(problems, "\n"))
	}
	return nil
}

func validHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		return fmt.Errorf("want HOST:PORT, e.g. kafka-0:9092")
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q is not a number between 1 and 65535", port)
	}
	return nil
}

// validateCursor checks the business cursor flags: driver and connection
// string file go together; the query takes the group as its parameter and
// names the topic with several topics (as the CRD's CEL rules say).
func (o *checkOptions) validateCursor(add func(format string, args ...any)) {
	if o.cursorDriver == "" && o.cursorDSNFile == "" {
		if o.cursorQuery != "" {
			add("--cursor-query needs --cursor-driver and --cursor-dsn-file")
		}
		if o.resumeFrom != "" {
			add("--resume-from needs a business cursor: --cursor-driver and --cursor-dsn-file")
		}
		return
	}
	switch o.cursorDriver {
	case cursor.DriverPostgres, cursor.DriverMySQL:
	case "":
		add("--cursor-driver is required with --cursor-dsn-file: postgres or mysql")
	default:
		add("--cursor-driver %q: use postgres or mysql (MySQL and MariaDB)", o.cursorDriver)
	}
	if o.cursorDSNFile == "" {
		add("--cursor-dsn-file is required with --cursor-driver (the connection string is read from a file, never from the command line)")
	}
	switch o.resumeFrom {
	case "", "group", "cursor":
	default:
		add("--resume-from %q: use group (the group's committed offsets) or cursor (the business cursor)", o.resumeFrom)
	}
	if q := strings.TrimSpace(o.cursorQuery); q != "" {
		param := "$1"
		if o.cursorDriver == cursor.DriverMySQL {
			param = "?"
		}
		if !strings.Contains(q, param) {
			add("--cursor-query must take the group ID as its one parameter: %s for %s", param, o.cursorDriver)
		}
		if l := strings.ToLower(q); !strings.HasPrefix(l, "select") && !strings.HasPrefix(l, "with") {
			add("--cursor-query must be a SELECT (it runs in a read-only transaction)")
		}
	}
	if len(o.topics) > 1 && !strings.Contains(o.cursorQuery, "topic") {
		add("--cursor-query with a topic column is required with several --topic: the default query reads seed 003's table, which has no topic")
	}
}

// cursorSource reads the connection string the flags point at; nil
// without a cursor. A file that cannot be read, or a string that does not
// parse, is a usage error: the command was pointed wrongly.
func (o *checkOptions) cursorSource() (*cursor.Source, error) {
	if o.cursorDriver == "" {
		return nil, nil
	}
	b, err := os.ReadFile(o.cursorDSNFile)
	if err != nil {
		return nil, usageError{fmt.Errorf("--cursor-dsn-file: cannot read %s: %v", o.cursorDSNFile, pathError(err))}
	}
	src := &cursor.Source{Driver: o.cursorDriver, DSN: strings.TrimSpace(string(b)), Query: o.cursorQuery, Origin: "--cursor-dsn-file " + o.cursorDSNFile}
	if err := src.Validate(); err != nil {
		return nil, usageError{fmt.Errorf("--cursor-dsn-file: %v", err)}
	}
	return src, nil
}

// resumeFromPolicy is --resume-from as the proof names it.
func (o *checkOptions) resumeFromPolicy() string {
	if o.resumeFrom == "cursor" {
		return proof.ResumeFromCursor
	}
	return proof.ResumeFromGroupOffsets
}

// pathError drops the path from an *os.PathError (the caller names it).
func pathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

func (o *checkOptions) run(cmd *cobra.Command) error {
	conn, err := o.conn.connection()
	if err != nil {
		return err
	}
	src, err := o.cursorSource()
	if err != nil {
		return err
	}
	log := zap.New(zap.UseFlagOptions(&o.logs.Options), zap.WriteTo(cmd.ErrOrStderr()))
	if !cmd.Flags().Changed("zap-log-level") && !cmd.Flags().Changed("zap-devel") {
		log = logr.Discard() // a check prints its result; logs only when asked for
	}

	ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
	defer cancel()

	observer := kafka.NewObserver(kafka.WithLogger(log), kafka.WithCleaningAllowance(o.cleaningAllowance))
	defer observer.Close()
	target := kafka.Target{Group: o.group, Topics: o.topics, ReadOffsetsTopic: o.readOffsetsTopic, RecoveryWindow: o.recoveryWindow}
	pol := proof.Policy{
		GroupID:                   o.group,
		Topics:                    o.topics,
		RecoveryWindow:            o.recoveryWindow,
		AllowInfiniteRetention:    o.allowInfiniteRetention,
		AllowSizeBoundedRetention: o.allowSizeBoundedRetention,
	}
	if src != nil {
		// The cursor is read within the Kafka observation: at most a third
		// of the check's time to connect, as long to query.
		reader := cursor.NewReader(cursor.WithStatementTimeout(o.timeout/3), cursor.WithConnectTimeout(o.timeout/3), cursor.WithLogger(log))
		defer reader.Close()
		target.Cursor = cursor.Query{Reader: reader, Source: *src, Group: o.group}
		pol.Cursor = &proof.CursorPolicy{ResumeFrom: o.resumeFromPolicy()}
	}
	// Assembled as the manager assembles every proof; a check knows no
	// CronJobs and no earlier proof.
	observed := observer.Observe(ctx, conn, []kafka.Target{target})[0]
	// Judged as of the observation, as the manager and scan judge: a
	// fact read for "now + window" (ListOffsets by timestamp, unread.go)
	// holds for that now.
	now := observed.ObservedAt
	if now.IsZero() {
		now = time.Now()
	}
	proved := assemble.Proof(assemble.Input{Policy: pol, Observation: observed, Now: now})
	obs, res := proved.Observation, proved.Result

	out := cmd.OutOrStdout()
	switch o.output {
	case "json":
		err = writeCheckJSON(out, o, obs, res)
	default:
		err = writeCheckTable(out, o, obs, res, useColor(o.color, out))
	}
	if err != nil {
		return err
	}
	switch res.Verdict {
	case proof.Proven:
		return nil
	case proof.Violated:
		return exitError{code: ExitViolated}
	default:
		return exitError{code: ExitUnknown}
	}
}
