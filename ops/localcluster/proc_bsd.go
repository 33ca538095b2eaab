//go:build unix && !linux

package localcluster

import (
	"errors"
	"syscall"
)

// childSysProcAttr puts a child in its own process group.
func childSysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// listensOn cannot tell which process holds a socket here (no /proc).
func listensOn(pid, port int) (bool, error) { return false, errors.ErrUnsupported }
