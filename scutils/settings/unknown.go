package settings

import (
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Unknown is a setting name given in the settings file, the environment or
// with --set that the component does not know: most often a typo
// (QUEUE_HIT for QUEUE_HITS), which would otherwise change nothing without
// a word. Values given under unknown names are still kept (Get and Lookup
// see them), for plugins and spiders that read settings of their own.
type Unknown struct {
	// Name is the name as given.
	Name string
	// Sources are where it was given, lowest precedence first.
	Sources []Source
	// Suggestion is the known name closest to Name, when one is close
	// enough to be a likely typo; else "".
	Suggestion string
	// Elsewhere is set when other components know the name but this one
	// does not: given with --set (the settings file and the environment
	// are often shared by every component, so there such names are fine).
	Elsewhere bool
}

// String is the warning to log: "Unknown setting QUEUE_HIT (from --set);
// did you mean QUEUE_HITS?".
func (u Unknown) String() string {
	words := make([]string, len(u.Sources))
	for i, src := range u.Sources {
		words[i] = src.describe()
	}
	msg := "Unknown setting " + u.Name + " (from " + strings.Join(words, " and ") + ")"
	switch {
	case u.Elsewhere:
		msg += "; only other components use it"
	case u.Suggestion != "":
		msg += "; did you mean " + u.Suggestion + "?"
	}
	return msg
}

// describe names a source as a warning does.
func (s Source) describe() string {
	switch s {
	case FromFile:
		return "the settings file"
	case FromEnv:
		return "the environment"
	case FromFlag:
		return "--set"
	}
	return string(s)
}

// Unknown lists the names the file, the environment and the flags gave that
// the component does not know, sorted by name.
//
//   - File: every name that neither the component nor any other
//     component has (see KnownToCluster).
//   - Environment: the same, for variables that look like settings: named
//     like a setting family (KAFKA_, REDIS_, SCHEDULER_, LOG_, ...; see
//     settingFamilies) or close to a known name. PATH, HOME and the like are
//     not looked at, nor the service variables Kubernetes and Docker links
//     set (REDIS_SERVICE_HOST, KAFKA_PORT=tcp://..., ...).
//   - Flags (--set): every name the component itself does not have.
func (s *Settings) Unknown() []Unknown { return slices.Clone(s.unknown) }

// unknownFinder collects the unknown names while Load reads its sources.
type unknownFinder struct {
	declared Group
	found    map[string]*Unknown
}

func newUnknownFinder(declared Group) *unknownFinder {
	return &unknownFinder{declared: declared, found: map[string]*Unknown{}}
}

func (f *unknownFinder) own(name string) bool {
	_, ok := f.declared[name]
	return ok
}

func (f *unknownFinder) add(name string, src Source) {
	u := f.found[name]
	if u == nil {
		u = &Unknown{Name: name}
		f.found[name] = u
	}
	u.Sources = append(u.Sources, src)
}

// file notes the names of the settings file.
func (f *unknownFinder) file(names []string) {
	for _, name := range names {
		if !f.own(name) && !KnownToCluster(name) {
			f.add(name, FromFile)
		}
	}
}

// env notes the environment variables that look like unknown settings;
// fromFile are the names the file gave (their variables are read too).
func (f *unknownFinder) env(env map[string]string, fromFile map[string]bool) {
	for name, value := range env {
		if f.own(name) || KnownToCluster(name) {
			continue
		}
		if fromFile[name] || (looksLikeSetting(name, value) && (inFamily(name) || f.suggest(name) != "")) {
			f.add(name, FromEnv)
		}
	}
}

// flags notes the --set names this component does not have.
func (f *unknownFinder) flags(names []string) {
	for _, name := range names {
		if !f.own(name) {
			f.add(name, FromFlag)
		}
	}
}

// result completes the findings with suggestions, sorted by name.
func (f *unknownFinder) result() []Unknown {
	var out []Unknown
	for _, name := range slices.Sorted(maps.Keys(f.found)) {
		u := *f.found[name]
		if KnownToCluster(name) {
			u.Elsewhere = true
		} else {
			u.Suggestion = f.suggest(name)
		}
		out = append(out, u)
	}
	return out
}

// serviceVariable matches the variables Kubernetes sets for each service
// (REDIS_SERVICE_HOST, REDIS_SERVICE_PORT[_NAME], REDIS_PORT_6379_TCP[_ADDR,
// _PORT, _PROTO]), which Docker links set too.
var serviceVariable = regexp.MustCompile(`^[A-Z0-9_]+_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT_[0-9]+_(TCP|UDP|SCTP)(_(ADDR|PORT|PROTO))?)$`)

// looksLikeSetting rules out the environment variables that are no
// settings even in a setting family.
func looksLikeSetting(name, value string) bool {
	if slices.Contains(notSettings, name) || serviceVariable.MatchString(name) {
		return false
	}
	// Kubernetes' and Docker links' <SERVICE>_PORT=tcp://10.0.0.11:6379.
	if strings.HasSuffix(name, "_PORT") {
		for _, scheme := range []string{"tcp://", "udp://", "sctp://"} {
			if strings.HasPrefix(value, scheme) {
				return false
			}
		}
	}
	return true
}

// suggest returns the known name closest to name when it is close enough
// to be a typo of it, preferring the component's own names, else "".
// Letter case is ignored: queue_hits suggests QUEUE_HITS.
func (f *unknownFinder) suggest(name string) string {
	upper := strings.ToUpper(name)
	limit := typoDistance(len(upper))
	best, bestDist, bestOwn := "", limit+1, false
	consider := func(known string, own bool) {
		if d := len(known) - len(upper); d > limit || -d > limit {
			return
		}
		d := boundedDistance(upper, known, limit)
		better := d < bestDist || (d == bestDist && ((own && !bestOwn) || (own == bestOwn && known < best)))
		if d <= limit && better {
			best, bestDist, bestOwn = known, d, own
		}
	}
	for known := range f.declared {
		consider(known, true)
	}
	for _, known := range clusterNames {
		if !f.own(known) {
			consider(known, false)
		}
	}
	return best
}

// typoDistance is how many edits a name of n characters may be from a known
// one to be taken for its typo: one per four characters, at least 1 and at
// most 3 (QUEUE_HIT is 1 from QUEUE_HITS; SCHEDULER_PERSITS 1 from
// SCHEDULER_PERSIST; PATH is 1 from no setting name).
func typoDistance(n int) int { return min(max(n/4, 1), 3) }

// distance is the optimal string alignment (restricted Damerau-Levenshtein)
// distance between a and b, in bytes: insertions, deletions, substitutions
// and transpositions of neighbours each count 1. Setting names are ASCII.
func distance(a, b string) int { return boundedDistance(a, b, max(len(a), len(b))) }

// boundedDistance is distance, or limit+1 as soon as it is known to be more
// than limit: most names are far from most others, and a start-up looks
// at every environment variable.
func boundedDistance(a, b string, limit int) int {
	if len(a) < len(b) {
		a, b = b, a
	}
	if len(a)-len(b) > limit {
		return limit + 1
	}
	// Three rows of the edit matrix: two back for transpositions.
	rows := make([]int, 3*(len(b)+1))
	prev2, prev, cur := rows[:len(b)+1], rows[len(b)+1:2*(len(b)+1)], rows[2*(len(b)+1):]
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			// Every later cell is at least rowMin, bar a transposition
			// reaching back two rows: wait for two rows over the limit.
			if i > 1 && slices.Min(prev) > limit {
				return limit + 1
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return min(prev[len(b)], limit+1)
}
