// Package benchtable runs the project's benchmarks with go test and prints
// their figures as one table: the median and range over several runs, the
// target where one is set, and the command that reproduces each line. The
// bench-table command (ops/cmd/bench-table, `make bench`) is its front.
package benchtable

import (
	"bufio"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Result is one benchmark result line of `go test -bench` output.
type Result struct {
	Pkg        string // from the preceding "pkg:" line
	Name       string // without the Benchmark prefix's -GOMAXPROCS suffix
	Procs      int    // the -N suffix (GOMAXPROCS), 0 when absent
	Iterations int64
	Metrics    map[string]float64 // unit (ns/op, pages/s, ...) to value
}

var (
	// BenchmarkName-8   	       1	1234 ns/op	 12.5 pages/s
	resultRE = regexp.MustCompile(`^(Benchmark\S*)\s+(\d+)\s+(.+)$`)
	// A benchmark that wrote to stdout or stderr while it ran: go test
	// printed its name (and a tab) first, the output went on that line and
	// after it, and the figures come later on a line of their own.
	nameRE    = regexp.MustCompile(`^(Benchmark\S*)(\s|$)`)
	figuresRE = regexp.MustCompile(`^\s*(\d+)\s+(\S+\s+\S+.*)$`)
	procsRE   = regexp.MustCompile(`^(.*)-(\d+)$`)
)

// Parse reads `go test -bench` output and returns its result lines in
// order. Other lines (goos:, PASS, ok, logs) are skipped.
func Parse(r io.Reader) ([]Result, error) {
	var out []Result
	var pkg, pending string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		if m := resultRE.FindStringSubmatch(line); m != nil {
			if res, ok := result(pkg, m[1], m[2], m[3]); ok {
				out = append(out, res)
				pending = ""
				continue
			}
		}
		if m := nameRE.FindStringSubmatch(line); m != nil {
			pending = m[1]
			continue
		}
		if m := figuresRE.FindStringSubmatch(line); m != nil && pending != "" {
			if res, ok := result(pkg, pending, m[1], m[2]); ok {
				out = append(out, res)
				pending = ""
			}
		}
	}
	return out, sc.Err()
}

// result builds a Result from a name, an iteration count and value-unit
// pairs; ok is false when the pairs do not parse.
func result(pkg, name, iterations, pairs string) (Result, bool) {
	n, err := strconv.ParseInt(iterations, 10, 64)
	if err != nil {
		return Result{}, false
	}
	fields := strings.Fields(pairs)
	if len(fields) == 0 || len(fields)%2 != 0 {
		return Result{}, false
	}
	res := Result{Pkg: pkg, Name: name, Iterations: n, Metrics: map[string]float64{}}
	for i := 0; i < len(fields); i += 2 {
		v, err := strconv.ParseFloat(fields[i], 64)
		if err != nil {
			return Result{}, false
		}
		res.Metrics[fields[i+1]] = v
	}
	if m := procsRE.FindStringSubmatch(name); m != nil {
		if p, err := strconv.Atoi(m[2]); err == nil {
			res.Name, res.Procs = m[1], p
		}
	}
	return res, true
}
