// Command pause is the real-node tier's pod sandbox process (containerd's
// sandbox_image; no registry is reachable to pull registry.k8s.io/pause).
// Like the upstream pause, it holds the pod's namespaces as PID 1: it waits
// for SIGTERM or SIGINT and reaps every child that exits in the meantime
// (orphans re-parented to PID 1 in a shared PID namespace).
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			fmt.Fprintf(os.Stderr, "pause: %v: exiting\n", s)
			return
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
