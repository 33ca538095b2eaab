package localcluster

import (
	"fmt"
	"slices"
	"strconv"
)

// EnvGoMaxProcs is the Go runtime's own variable for how many threads may
// run Go code at once (its Ps). Set in the launcher's environment, every
// process gets it as it is and the launcher shares nothing out.
const EnvGoMaxProcs = "GOMAXPROCS"

// CoresEach is each process's share when processes share cores: an equal
// part, at least one.
//
// Every process of a cluster on one machine runs beside the others, and a
// Go process left at Go's default (a P per core) that uses less than a core
// on average keeps waking a second thread to look for work and putting it
// back to sleep. On the 2 cores of BenchmarkCrawlCost, GOMAXPROCS 1 in each
// of its Go processes cut the crawler's, the broker's and the test site's
// CPU a page by 13 to 43% and crawled faster (docs/production.md, "Sharing
// the cores of one machine").
func CoresEach(cores, processes int) int {
	return max(1, cores/max(1, processes))
}

// CoresShare is each process's GOMAXPROCS when processes share cores, as
// the launcher gives it (CoresEach), with ok false when nothing is to be
// shared out: cores is 0, or env (NAME=value pairs) sets GOMAXPROCS, which
// then reaches every process as it is.
func CoresShare(env []string, cores, processes int) (each int, ok bool) {
	if cores <= 0 {
		return 0, false
	}
	if _, set := lookupEnvOK(env, EnvGoMaxProcs); set {
		return 0, false
	}
	return CoresEach(cores, processes), true
}

// shareCores gives each child of plan its CoresShare of cfg.Cores,
// processes being the children and, when it hosts an embedded service
// (self), the launcher, and says so in a line for the console. It returns
// the launcher's own share (0: leave it); nothing, and no line, when
// CoresShare shares nothing out.
func (cfg *Config) shareCores(plan [][]spec, self bool) (own int, summary string) {
	processes := 0
	for _, tier := range plan {
		processes += len(tier)
	}
	if self {
		processes++
	}
	each, ok := CoresShare(cfg.Env, cfg.Cores, processes)
	if !ok {
		return 0, ""
	}
	for _, tier := range plan {
		for i := range tier {
			// The specs' environments share arrays: each gets a copy.
			tier[i].env = append(slices.Clip(tier[i].env), EnvGoMaxProcs+"="+strconv.Itoa(each))
		}
	}
	summary = fmt.Sprintf("%d cores shared by %d processes: GOMAXPROCS=%d each (set GOMAXPROCS to choose)",
		cfg.Cores, processes, each)
	if !self {
		return 0, summary
	}
	return each, summary
}
