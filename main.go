// Command retention-guard proves that Kafka consumer groups cannot silently
// lose data to retention, and refuses rollouts of consumers while they can.
//
//	retention-guard manager   run the controller and the admission webhook
//	retention-guard check     prove one group against a live cluster
//	retention-guard version   print the version
package main

import (
	"os"

	"github.com/retentionguard/retention-guard/internal/cli"
)

func main() {
	os.Exit(cli.Execute(os.Args[1:], os.Stdout, os.Stderr))
}
