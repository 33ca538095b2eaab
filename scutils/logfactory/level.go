package logfactory

import (
	"fmt"
	"strings"
)

// Level is a log level, ordered from the most verbose (LevelDebug) to the
// least verbose (LevelCritical), as in Python's logging module.
type Level int

// The log levels, by their Python names.
const (
	LevelDebug Level = iota
	LevelInfo
	LevelWarning
	LevelError
	LevelCritical
)

var levelNames = [...]string{"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}

// String returns the Python name of the level: DEBUG, INFO, WARNING, ERROR or
// CRITICAL.
func (l Level) String() string {
	if l < LevelDebug || l > LevelCritical {
		return fmt.Sprintf("Level(%d)", int(l))
	}
	return levelNames[l]
}

// ParseLevel reads a level name as the LOG_LEVEL setting holds it: DEBUG, INFO,
// WARNING (or WARN), ERROR or CRITICAL, in any letter case. The empty string is
// INFO, the default of every component.
func ParseLevel(s string) (Level, error) {
	name := strings.ToUpper(strings.TrimSpace(s))
	switch name {
	case "":
		return LevelInfo, nil
	case "WARN":
		return LevelWarning, nil
	}
	for i, n := range levelNames {
		if n == name {
			return Level(i), nil
		}
	}
	return 0, fmt.Errorf("unknown log level %q (want DEBUG, INFO, WARNING, ERROR or CRITICAL)", s)
}

// parseLevelExpr turns a callback level expression into the set of levels it
// selects: "INFO" or "=INFO" (exactly), "<INFO", "<=INFO", ">INFO", ">=INFO",
// or "*" (every level). An expression that selects no level, such as "<DEBUG",
// is an error because its callback could never run.
func parseLevelExpr(expr string) ([]Level, error) {
	e := strings.TrimSpace(expr)
	if e == "*" {
		return []Level{LevelDebug, LevelInfo, LevelWarning, LevelError, LevelCritical}, nil
	}
	op := ""
	for _, p := range []string{"<=", ">=", "<", ">", "="} {
		if strings.HasPrefix(e, p) {
			op = p
			break
		}
	}
	name := strings.TrimSpace(e[len(op):])
	if name == "" {
		return nil, fmt.Errorf("bad callback level expression %q: no level name", expr)
	}
	lvl, err := ParseLevel(name)
	if err != nil {
		return nil, fmt.Errorf("bad callback level expression %q: %w", expr, err)
	}
	var out []Level
	for l := LevelDebug; l <= LevelCritical; l++ {
		var ok bool
		switch op {
		case "<=":
			ok = l <= lvl
		case ">=":
			ok = l >= lvl
		case "<":
			ok = l < lvl
		case ">":
			ok = l > lvl
		default:
			ok = l == lvl
		}
		if ok {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("bad callback level expression %q: selects no level", expr)
	}
	return out, nil
}
