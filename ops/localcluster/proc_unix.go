//go:build unix

package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// terminate sends SIGTERM to p's process group (the child and anything it
// started).
func terminate(p *os.Process) error { return signalGroup(p, syscall.SIGTERM) }

// kill sends SIGKILL to p's process group.
func kill(p *os.Process) error { return signalGroup(p, syscall.SIGKILL) }

func signalGroup(p *os.Process, sig syscall.Signal) error {
	if err := syscall.Kill(-p.Pid, sig); err != nil {
		if err == syscall.ESRCH {
			return os.ErrProcessDone
		}
		return err
	}
	return nil
}

// lockDataDir takes an exclusive lock on dir (created if missing), so two
// launchers never share a broker's data; unlock releases it.
func lockDataDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	path := filepath.Join(dir, "lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("data directory %s is in use by another local cluster (pass another --data-dir): %w", dir, err)
	}
	return func() { f.Close() }, nil
}
