package stack

import "syscall"

// sysProcAttr puts a child in its own process group (Ctrl-C in a terminal
// reaches the stack, which stops its children in order) and kills it when
// the test or demo process dies without stopping it (a test timeout).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
