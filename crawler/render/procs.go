package render

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// Descendants are the processes below pid (children, their children, ...),
// read from /proc: the pool's browsers and their helpers are the crawler's.
func Descendants(pid int) []int {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(fields[1]); err == nil {
			parent[p] = pp
		}
	}
	var out []int
	below := map[int]bool{pid: true}
	for changed := true; changed; {
		changed = false
		for p, pp := range parent {
			if below[pp] && !below[p] {
				below[p] = true
				out = append(out, p)
				changed = true
			}
		}
	}
	return out
}

// IsBrowserMain reports whether pid is a Chromium browser's main process
// (not one of its helpers, which run with --type=).
func IsBrowserMain(pid int) bool {
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || !bytes.Contains(cmdline, []byte("chrom")) {
		return false
	}
	return !bytes.Contains(cmdline, []byte("--type="))
}
