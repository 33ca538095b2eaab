//go:build !unix

package localcluster

import (
	"errors"
	"os"
	"syscall"
)

func childSysProcAttr() *syscall.SysProcAttr { return nil }

// terminate asks p to stop (an interrupt; SIGTERM does not exist here).
func terminate(p *os.Process) error { return p.Signal(os.Interrupt) }

func kill(p *os.Process) error { return p.Kill() }

// lockDataDir only creates dir: there is no advisory lock here.
func lockDataDir(dir string) (func(), error) { return func() {}, os.MkdirAll(dir, 0o755) }

// listensOn cannot tell which process holds a socket here.
func listensOn(pid, port int) (bool, error) { return false, errors.ErrUnsupported }
