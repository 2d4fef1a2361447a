// Package cli is retention-guard's command line: a cobra root with the
// version, check, scan and helm-test subcommands. check and scan judge
// consumer groups from Kafka alone (scan maps groups to workloads only when
// given a kubeconfig); helm-test proves, from a pod of an installed guard,
// that the webhook refuses and answers (the chart's test hook). The manager
// command is wired in by the composition root (package main at the top of
// the repository), which imports the controllers and the webhook this
// package must not depend on.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// Exit codes shared by every subcommand.
const (
	ExitOK      = 0
	ExitFailure = 1
	// ExitUsage follows sysexits.h EX_USAGE: the command was used wrongly.
	ExitUsage = 64
)

// usageError marks an error as the user's misuse of the command line.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// UsageError marks err as the user's misuse of the command line: Execute
// prints it and exits with ExitUsage.
func UsageError(err error) error { return usageError{err} }

// ExitError makes Execute exit with code, printing err when it is not nil.
func ExitError(code int, err error) error { return exitError{code: code, err: err} }

// exitError carries an exit code chosen by a subcommand (e.g. check's 1 and 2).
type exitError struct {
	code int
	err  error // may be nil: the command already printed what it had to say
}

func (e exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit code %d", e.code)
	}
	return e.err.Error()
}

// logOptions are the zap flags every controller-runtime project has
// (--zap-log-level, --zap-encoder, --zap-devel, ...).
type logOptions struct{ zap.Options }

// LogOptions are the zap flags, for commands defined outside this package.
type LogOptions = logOptions

// Bind adds the zap flags to fs.
func (o *logOptions) Bind(fs *pflag.FlagSet) { o.bind(fs) }

func (o *logOptions) bind(fs *pflag.FlagSet) {
	gofs := flag.NewFlagSet("zap", flag.ContinueOnError)
	o.BindFlags(gofs)
	fs.AddGoFlagSet(gofs)
}

// NewRootCommand builds the command tree: check, version, and the commands
// the caller adds (the composition root adds manager).
func NewRootCommand(stdout, stderr io.Writer, commands ...*cobra.Command) *cobra.Command {
	root := &cobra.Command{
		Use:   "retention-guard",
		Short: "Prove Kafka consumer groups cannot silently lose data to retention",
		Long: `retention-guard proves, before a Kafka consumer starts, that its committed
position still lies inside the retained log and that topic retention and
offsets retention cover the longest downtime it must survive.

  manager   run the Kubernetes controller and admission webhook
  check     prove one consumer group against a live cluster (no Kubernetes)
  scan      judge every consumer group on a cluster (no policy; with a kubeconfig,
            policies for the workloads that consume each group)
  version   print the version`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w\nRun '%s --help' for usage", err, c.CommandPath())}
	})
	root.AddCommand(newVersionCommand(), newCheckCommand(), newScanCommand(), newHelmTestCommand())
	root.AddCommand(commands...)
	return root
}

// Execute runs the command line, with the given commands added to the
// root, and returns the process exit code.
func Execute(args []string, stdout, stderr io.Writer, commands ...*cobra.Command) int {
	root := NewRootCommand(stdout, stderr, commands...)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	var ee exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "Error: %v\n", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "Error: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) || isCobraUsageError(err) {
		return ExitUsage
	}
	return ExitFailure
}

// isCobraUsageError recognises cobra's own argument errors (unknown
// command, wrong number of arguments), which do not go through the flag
// error func.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires at least", "requires at most", "unknown flag", "unknown shorthand flag"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
