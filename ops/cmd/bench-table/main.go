// Command bench-table runs the project's benchmarks (go test -bench, from
// the workspace root) and prints one table of the figures that matter:
// Kafka Monitor ingest, crawler pages/s with one and two processes, the
// feed-to-first-result latency for a new domain, REST /feed requests/s,
// and the peak RSS of each component. Each figure is the median over
// -count runs, with its range, its target where one is set, and the
// command that reproduces it. `make bench` builds and runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"

	"github.com/scrapycluster/scrapy-cluster-go/ops/benchtable"
)

func main() {
	count := flag.Int("count", 3, "runs of each benchmark command (go test -count)")
	only := flag.String("only", "", "measure only the figures whose label or benchmark matches this regexp")
	verbose := flag.Bool("v", false, "show go test's output as it comes (on stderr)")
	list := flag.Bool("list", false, "print the commands and exit without running them")
	dir := flag.String("C", "", "the go.work workspace root (default: found with go env GOWORK)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: bench-table [flags]\n\n%s\nflags:\n",
			"Runs the cluster's benchmarks and prints one table of their figures.")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(*count, *only, *verbose, *list, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "bench-table:", err)
		os.Exit(1)
	}
}

func run(count int, only string, verbose, list bool, dir string) error {
	if count < 1 {
		return errors.New("-count must be at least 1")
	}
	benches := benchtable.Default()
	if only != "" {
		re, err := regexp.Compile(only)
		if err != nil {
			return fmt.Errorf("-only: %w", err)
		}
		benches = filter(benches, re)
		if len(benches) == 0 {
			return fmt.Errorf("-only %q matches no figure", only)
		}
	}
	if list {
		seen := map[string]bool{}
		for _, b := range benches {
			c := benchtable.ShellQuote(b.Command(count))
			if !seen[c] {
				seen[c] = true
				fmt.Println(c)
			}
		}
		return nil
	}
	if dir == "" {
		out, err := exec.Command("go", "env", "GOWORK").Output()
		if err != nil {
			return fmt.Errorf("go env GOWORK: %w", err)
		}
		w := strings.TrimSpace(string(out))
		if w == "" || w == "off" {
			return errors.New("not inside a go.work workspace: run from the repository or pass -C")
		}
		dir = filepath.Dir(w)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	load := "unknown"
	if raw, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(raw)); len(f) >= 3 {
			load = strings.Join(f[:3], " ")
		}
	}
	r := benchtable.Runner{Dir: dir, Count: count, Log: os.Stderr}
	if verbose {
		r.Raw = os.Stderr
	}
	runs := r.RunAll(ctx, benches)
	lines, commands := benchtable.Lines(benches, runs)
	fmt.Println()
	fmt.Printf("%d CPUs, load average %s before the runs. The machine's other load shows in these figures:\n", runtime.NumCPU(), load)
	fmt.Println("compare medians from one machine, not single runs. A virtual machine's speed also drifts")
	fmt.Println("over minutes: the test site's CPU per page (its code rarely changes) shows how fast it was,")
	fmt.Println("and tables are comparable when theirs agree.")
	fmt.Println()
	if err := benchtable.Write(os.Stdout, lines, commands, count); err != nil {
		return err
	}
	for _, run := range runs {
		if run.Err != nil {
			if !verbose {
				fmt.Fprintf(os.Stderr, "\n%s failed (%v); its output ends:\n%s\n", benchtable.ShellQuote(run.Command), run.Err, tail(string(run.Output), 40))
			}
			return errors.New("some benchmarks failed")
		}
	}
	return nil
}

// filter keeps the figures whose label or benchmark pattern matches re.
func filter(benches []benchtable.Bench, re *regexp.Regexp) []benchtable.Bench {
	var out []benchtable.Bench
	for _, b := range benches {
		var figs []benchtable.Figure
		for _, f := range b.Figures {
			if re.MatchString(f.Label) || re.MatchString(f.Result) || re.MatchString(b.Pattern) {
				figs = append(figs, f)
			}
		}
		if len(figs) > 0 {
			b.Figures = figs
			out = append(out, b)
		}
	}
	return out
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
