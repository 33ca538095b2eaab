//go:build unix && !linux

package localcluster

import "syscall"

// childSysProcAttr puts a child in its own process group.
func childSysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
