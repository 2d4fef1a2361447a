//go:build !linux

package stack

import "syscall"

// sysProcAttr puts a child in its own process group: Ctrl-C in a terminal
// reaches the stack, which stops its children in order.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
