package localcluster

import "syscall"

// childSysProcAttr puts a child in its own process group and has the kernel
// kill it should the launcher die without stopping it (even by SIGKILL).
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
