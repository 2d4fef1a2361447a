// Command retention-guard proves that Kafka consumer groups cannot silently
// lose data to retention, and refuses rollouts of consumers while they can.
//
//	retention-guard manager   run the controller and the admission webhook
//	retention-guard check     prove one group against a live cluster
//	retention-guard version   print the version
//
// This package is the composition root: manager.go wires the controllers,
// the admission webhook, the certificates and the Kafka observer into one
// controller-runtime manager. The commands that need no Kubernetes (check,
// version) live in internal/cli, below the packages they use.
package main

import (
	"io"
	"os"

	"github.com/retentionguard/retention-guard/internal/cli"
)

func main() {
	os.Exit(execute(os.Args[1:], os.Stdout, os.Stderr))
}

// execute runs the command line with the manager command wired in and
// returns the process exit code.
func execute(args []string, stdout, stderr io.Writer) int {
	return cli.Execute(args, stdout, stderr, newManagerCommand())
}
