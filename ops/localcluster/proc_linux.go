package localcluster

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// childSysProcAttr puts a child in its own process group and has the kernel
// kill it should the launcher die without stopping it (even by SIGKILL).
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// listensOn reports whether process pid holds the listening TCP socket(s)
// that take connections to 127.0.0.1:port: every socket listening on port
// bound to 127.0.0.1 or to a wildcard address is one of pid's open files,
// and there is at least one. It reads /proc/net/tcp, /proc/net/tcp6 and
// /proc/<pid>/fd.
func listensOn(pid, port int) (bool, error) {
	var inodes []string
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		found, err := loopbackListeners(table, port)
		if err != nil {
			return false, err
		}
		inodes = append(inodes, found...)
	}
	if len(inodes) == 0 {
		return false, nil
	}
	fdDir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return false, fmt.Errorf("list the open files of pid %d: %w", pid, err)
	}
	held := map[string]bool{}
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join(fdDir, fd.Name())); err == nil {
			if inode, ok := strings.CutPrefix(target, "socket:["); ok {
				held[strings.TrimSuffix(inode, "]")] = true
			}
		}
	}
	for _, inode := range inodes {
		if !held[inode] {
			return false, nil
		}
	}
	return true, nil
}

// Local addresses, as /proc/net/tcp{,6} print them, that take connections
// to 127.0.0.1: loopback itself and the wildcards (IPv4, IPv6, and both as
// IPv4-mapped IPv6 addresses).
var loopbackReachable = map[string]bool{
	"0100007F":                         true, // 127.0.0.1
	"00000000":                         true, // 0.0.0.0
	"00000000000000000000000000000000": true, // ::
	"0000000000000000FFFF00000100007F": true, // ::ffff:127.0.0.1
	"0000000000000000FFFF000000000000": true, // ::ffff:0.0.0.0
}

// loopbackListeners returns the socket inodes of the table's sockets that
// listen on port at an address in loopbackReachable.
func loopbackListeners(table string, port int) ([]string, error) {
	f, err := os.Open(table)
	if os.IsNotExist(err) && strings.HasSuffix(table, "6") {
		return nil, nil // no IPv6 in this kernel
	}
	if err != nil {
		return nil, fmt.Errorf("read the socket table: %w", err)
	}
	defer f.Close()
	const listen = "0A"
	var inodes []string
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != listen {
			continue
		}
		addr, hexPort, ok := strings.Cut(fields[1], ":")
		if p, err := strconv.ParseUint(hexPort, 16, 16); !ok || err != nil || int(p) != port {
			continue
		}
		if loopbackReachable[strings.ToUpper(addr)] {
			inodes = append(inodes, fields[9])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", table, err)
	}
	return inodes, nil
}
