package render

import (
	"bytes"
	"maps"
	"os"
	"strconv"
	"strings"
	"time"
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

// ProcessKind is what a process of a rendering crawler is, from its
// command line: "browser" (a Chromium main process), "renderer", "gpu",
// "network" (the network service, when it runs in a process of its own),
// "utility" (other utility processes), "zygote", other Chromium helpers by
// their --type, and "other" for anything else (the crawler itself is the
// caller's to name).
func ProcessKind(pid int) string {
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || !bytes.Contains(cmdline, []byte("chrom")) {
		return "other"
	}
	var typ string
	// A zygote's children rewrite their command line as one string.
	for _, arg := range bytes.FieldsFunc(cmdline, func(r rune) bool { return r == 0 || r == ' ' }) {
		if v, ok := bytes.CutPrefix(arg, []byte("--type=")); ok {
			typ = string(v)
		}
		if bytes.Contains(arg, []byte("--utility-sub-type=network.mojom.NetworkService")) {
			return "network"
		}
	}
	switch typ {
	case "":
		return "browser"
	case "gpu-process":
		return "gpu"
	}
	return typ
}

// CPUTime is the processor time (user and system) pid has used so far,
// without its reaped children's; false when it is gone.
func CPUTime(pid int) (time.Duration, bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(stat[i+1:])) // state is f[0]; utime and stime are f[11], f[12]
	if len(f) < 13 {
		return 0, false
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * time.Second / 100, true // USER_HZ
}

// CPUTracker adds up the processor time of a process tree by process
// kind (ProcessKind, or a name given), processes that end between samples
// included up to their last sample (sample often: a process's time after
// its last sample is missed). It is for benchmarks: what rendering costs
// per process type.
type CPUTracker struct {
	root  int
	names map[int]string
	start map[int]time.Duration // at the first sample: the time before it is not counted
	last  map[int]time.Duration
	kind  map[int]string
}

// NewCPUTracker tracks root and every process below it from now on, the
// processes of names by their name there, others by their ProcessKind
// (for "other", their command name).
func NewCPUTracker(root int, names map[int]string) *CPUTracker {
	t := &CPUTracker{root: root, names: names, start: map[int]time.Duration{}, last: map[int]time.Duration{}, kind: map[int]string{}}
	t.Sample()
	maps.Copy(t.start, t.last)
	return t
}

// Sample reads the processor time of root and every process below it.
func (t *CPUTracker) Sample() {
	for _, pid := range append([]int{t.root}, Descendants(t.root)...) {
		d, ok := CPUTime(pid)
		if !ok {
			continue
		}
		if _, known := t.kind[pid]; !known {
			t.kind[pid] = t.kindOf(pid)
		}
		t.last[pid] = d
	}
}

func (t *CPUTracker) kindOf(pid int) string {
	if name, ok := t.names[pid]; ok {
		return name
	}
	if k := ProcessKind(pid); k != "other" {
		return k
	}
	comm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return "other"
	}
	return strings.TrimSpace(string(comm))
}

// ByKind is the processor time used since NewCPUTracker, by process kind.
func (t *CPUTracker) ByKind() map[string]time.Duration {
	out := map[string]time.Duration{}
	for pid, d := range t.last {
		out[t.kind[pid]] += d - t.start[pid]
	}
	return out
}

// Processes is how many processes of each kind the tracker saw.
func (t *CPUTracker) Processes() map[string]int {
	out := map[string]int{}
	for _, k := range t.kind {
		out[k]++
	}
	return out
}
