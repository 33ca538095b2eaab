package logfactory

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"time"
)

// Defaults of Config, as the components' settings define them.
const (
	DefaultName     = "scrapy-cluster"
	DefaultDir      = "logs"
	DefaultFile     = "main.log"
	DefaultMaxBytes = 10 * 1024 * 1024
	DefaultBackups  = 5
)

// Extra holds the extra fields of one log line: JSON keys of their own, or
// appended to text lines (Config.TextFields, Config.IncludeExtra).
type Extra = map[string]any

// Config describes a logger. Its zero value logs INFO text, without the
// extra fields, to the file logs/main.log (Stdout and TextFields are false);
// DefaultConfig gives the components' settings defaults, which log to stdout
// with the fields.
type Config struct {
	// Name is the logger name, "[name]" in text and "logger" in JSON
	// (LOGGER_NAME). Default "scrapy-cluster".
	Name string
	// Level is the lowest level written: DEBUG, INFO, WARNING (or WARN),
	// ERROR or CRITICAL, in any letter case (LOG_LEVEL). Default INFO. New
	// rejects other names.
	Level string
	// JSON writes one JSON object per line instead of text (LOG_JSON).
	// Default false.
	JSON bool
	// Stdout writes to standard output; false writes to the rotating file
	// Dir/File (LOG_STDOUT, whose setting defaults to true).
	Stdout bool
	// Dir is the directory of the log file, created if missing (LOG_DIR).
	// Default "logs".
	Dir string
	// File is the log file name (LOG_FILE). Default "main.log".
	File string
	// MaxBytes is the size, in bytes, past which the file is rotated: a
	// line that would take it past MaxBytes goes to a fresh file
	// (LOG_MAX_BYTES). Default 10 MiB, as the components' settings; the
	// original get_instance defaulted to 25,000,000. Negative: never rotate.
	MaxBytes int64
	// Backups is how many rotated files are kept beside the current one
	// (LOG_BACKUPS). Default 5. Negative: never rotate, as Python's 0.
	Backups int
	// TextFields appends the extra fields to text lines as logfmt
	// key=value pairs: " url=http://example.com/ crawlid=abc
	// error=\"connection refused\"" (LOG_TEXT_FIELDS, whose setting
	// defaults to true; false writes the original's bare lines, the
	// message alone). See the package doc for the rules.
	TextFields bool
	// IncludeExtra appends the extra fields to text lines, Python dict
	// style: " {'key': 'value'}" (get_instance's include_extra; no
	// component setting names it), instead of TextFields' pairs. Default
	// false. JSON lines always carry the extras.
	IncludeExtra bool
	// Output, when set, receives the lines instead of stdout or the file,
	// for tests and embedding. Writes to it are serialized, one whole line
	// per Write, unless Gather is set.
	Output io.Writer
	// Gather gathers the lines written to Output, several per Write, as
	// lines to stdout or a file always are (see Logger.Flush). Default
	// false.
	Gather bool
	// Now is the clock that stamps lines. Default time.Now.
	Now func() time.Time
}

// DefaultConfig returns the logging settings' defaults: INFO text with its
// fields to stdout, or to logs/main.log rotated at 10 MiB with 5 backups
// when Stdout is cleared.
func DefaultConfig() Config {
	return Config{
		Name:       DefaultName,
		Level:      LevelInfo.String(),
		Stdout:     true,
		Dir:        DefaultDir,
		File:       DefaultFile,
		MaxBytes:   DefaultMaxBytes,
		Backups:    DefaultBackups,
		TextFields: true,
	}
}

// Logger writes log lines in the Scrapy Cluster formats and runs callbacks
// registered for levels and extra fields. A Logger is safe for concurrent
// use; lines never interleave. Loggers made by Named and With share their
// parent's output, level and callbacks.
type Logger struct {
	core   *core
	name   string
	fields Extra
}

// core is what a logger and its children share.
type core struct {
	out    *output
	format formatter
	level  Level
	now    func() time.Time
	closer io.Closer // the rotating file, nil for stdout and Output
	// printsExtras is false for bare text lines (neither TextFields nor
	// IncludeExtra), whose formatter never reads the extras: Log then does
	// not copy them.
	printsExtras bool
	json         bool // LOG_JSON: Dump writes fields, not text

	cbMu      sync.RWMutex
	callbacks [LevelCritical + 1][]callback // copy on write
}

type callback struct {
	fn       func(message string, extra map[string]any)
	criteria map[string]any
}

// New builds a logger from cfg, filling in defaults. It fails on an unknown
// level or when the log file cannot be created. As the original does, a
// logger writing to stdout or a file starts with the DEBUG line "Logging to
// stdout" or "Logging to file: <dir>/<file>"; with Output set there is no
// such line.
func New(cfg Config) (*Logger, error) {
	level, err := ParseLevel(cfg.Level)
	if err != nil {
		return nil, fmt.Errorf("logfactory: %w", err)
	}
	name := cfg.Name
	if name == "" {
		name = DefaultName
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}

	var (
		out      io.Writer
		closer   io.Closer
		announce string
	)
	switch {
	case cfg.Output != nil:
		out = cfg.Output
	case cfg.Stdout:
		out = os.Stdout
		announce = "Logging to stdout"
	default:
		dir, file := cfg.Dir, cfg.File
		if dir == "" {
			dir = DefaultDir
		}
		if file == "" {
			file = DefaultFile
		}
		maxBytes, backups := cfg.MaxBytes, cfg.Backups
		if maxBytes == 0 {
			maxBytes = DefaultMaxBytes
		}
		if backups == 0 {
			backups = DefaultBackups
		}
		rf, err := openRotatingFile(dir, file, maxBytes, backups)
		if err != nil {
			return nil, fmt.Errorf("logfactory: %w", err)
		}
		out, closer = rf, rf
		announce = "Logging to file: " + filepath.Join(dir, file)
	}

	l := &Logger{
		core: &core{
			out:          &output{w: out, gather: cfg.Output == nil || cfg.Gather},
			format:       formatter{json: cfg.JSON, includeExtra: cfg.IncludeExtra, textFields: cfg.TextFields},
			level:        level,
			now:          now,
			closer:       closer,
			printsExtras: cfg.JSON || cfg.IncludeExtra || cfg.TextFields,
			json:         cfg.JSON,
		},
		name: name,
	}
	if announce != "" {
		l.Debug(announce)
	}
	return l, nil
}

// Name returns the logger name.
func (l *Logger) Name() string { return l.name }

// Dump logs a block of figures at INFO as the original components' stats
// dumps do: in JSON the figures are the line's fields; in text they follow
// the title as indented JSON ("<title>:\n{...}").
func (l *Logger) Dump(title string, figures map[string]any) {
	if !l.Enabled(LevelInfo) {
		return
	}
	if l.core.json {
		l.Info(title, figures)
		return
	}
	text, err := json.MarshalIndent(figures, "", "    ")
	if err != nil {
		text = []byte(fmt.Sprint(figures))
	}
	l.Info(title + ":\n" + string(text))
}

// Level returns the lowest level the logger writes.
func (l *Logger) Level() Level { return l.core.level }

// Enabled reports whether lines of level lvl are written, so a caller can
// skip building costly extras.
func (l *Logger) Enabled(lvl Level) bool { return lvl >= l.core.level }

// Named returns a logger with another name that shares this logger's output,
// level, callbacks and fixed fields. An empty name keeps the current one.
func (l *Logger) Named(name string) *Logger {
	if name == "" {
		name = l.name
	}
	return &Logger{core: l.core, name: name, fields: l.fields}
}

// With returns a logger that adds extra to every line; extras passed to a
// call win over these on equal keys. It shares this logger's output, level
// and callbacks.
func (l *Logger) With(extra Extra) *Logger {
	fields := make(Extra, len(l.fields)+len(extra))
	for k, v := range l.fields {
		fields[k] = v
	}
	for k, v := range extra {
		fields[k] = v
	}
	return &Logger{core: l.core, name: l.name, fields: fields}
}

// Debug writes a DEBUG line.
func (l *Logger) Debug(msg string, extra ...Extra) { l.Log(LevelDebug, msg, extra...) }

// Info writes an INFO line.
func (l *Logger) Info(msg string, extra ...Extra) { l.Log(LevelInfo, msg, extra...) }

// Warn writes a WARNING line; it is Warning under the original's other name.
func (l *Logger) Warn(msg string, extra ...Extra) { l.Log(LevelWarning, msg, extra...) }

// Warning writes a WARNING line.
func (l *Logger) Warning(msg string, extra ...Extra) { l.Log(LevelWarning, msg, extra...) }

// Error writes an ERROR line.
func (l *Logger) Error(msg string, extra ...Extra) { l.Log(LevelError, msg, extra...) }

// Critical writes a CRITICAL line. It neither exits nor panics.
func (l *Logger) Critical(msg string, extra ...Extra) { l.Log(LevelCritical, msg, extra...) }

// Log writes msg at level lvl with the merged extras (later maps win on equal
// keys), then runs the callbacks registered for lvl whose criteria the extras
// match. As in the original, a line below the logger's level is neither
// written nor seen by callbacks.
//
// Extra keys that clash with the fields every line carries (message, logger,
// timestamp, level) never replace them: the extra is written under
// "fields.<key>", as logrus writes its own clashes. Callbacks see the extras
// unrenamed.
func (l *Logger) Log(lvl Level, msg string, extra ...Extra) {
	c := l.core
	if lvl < c.level {
		return
	}
	lvl = min(lvl, LevelCritical)
	merged := l.merge(extra)
	c.write(&line{time: c.now(), level: lvl, name: l.name, msg: msg, extra: merged})
	c.fire(lvl, msg, merged)
}

// linePool holds the buffers lines are formatted in.
var linePool = sync.Pool{New: func() any { return new(lineBuffer) }}

// maxPooledLine bounds the buffers kept for reuse: a rare huge line (a
// JSON line carries every field whole) is not kept around.
const maxPooledLine = 64 << 10

// write formats ln and hands it to the output.
func (c *core) write(ln *line) {
	lb := linePool.Get().(*lineBuffer)
	lb.buf.Reset()
	c.format.format(lb, ln)
	c.out.write(lb.buf.Bytes(), ln.level)
	if lb.buf.Cap() <= maxPooledLine {
		clear(lb.fields)
		lb.fields = lb.fields[:0]
		linePool.Put(lb)
	}
}

// merge combines the fixed fields and the call's extras without copying when
// there is only one map.
func (l *Logger) merge(extra []Extra) Extra {
	switch {
	case len(l.fields) == 0 && len(extra) == 0:
		return nil
	case len(l.fields) == 0 && len(extra) == 1:
		return extra[0]
	}
	n := len(l.fields)
	for _, e := range extra {
		n += len(e)
	}
	merged := make(Extra, n)
	for k, v := range l.fields {
		merged[k] = v
	}
	for _, e := range extra {
		for k, v := range e {
			merged[k] = v
		}
	}
	return merged
}

func hasKey(m Extra, k string) bool {
	_, ok := m[k]
	return ok
}

// RegisterCallback calls fn after each written line whose level matches
// levelExpr and whose extras contain every key of criteria with an equal
// value (numbers compare by value, so 1 matches 1.0 as in Python; other
// values by reflect.DeepEqual). A nil or empty criteria matches every line.
//
// levelExpr is a level name ("INFO", exactly that level; "=INFO" too),
// a comparison ("<INFO", "<=INFO", ">DEBUG", ">=WARNING") or "*" for every
// level. WARN is WARNING. An expression naming no known level, or selecting
// none ("<DEBUG"), is an error.
//
// Callbacks run synchronously in the logging goroutine, in registration
// order, after the line is written; they may log. Only written lines reach
// them: with the logger at INFO, a DEBUG callback never runs. Callbacks are
// shared by the loggers made with Named and With.
func (l *Logger) RegisterCallback(levelExpr string, fn func(message string, extra map[string]any), criteria map[string]any) error {
	if fn == nil {
		return errors.New("logfactory: register callback: nil function")
	}
	levels, err := parseLevelExpr(levelExpr)
	if err != nil {
		return fmt.Errorf("logfactory: register callback: %w", err)
	}
	var crit map[string]any
	if len(criteria) > 0 {
		crit = make(map[string]any, len(criteria))
		for k, v := range criteria {
			crit[k] = v
		}
	}
	c := l.core
	c.cbMu.Lock()
	defer c.cbMu.Unlock()
	for _, lvl := range levels {
		cbs := c.callbacks[lvl]
		// A new array each time: a running fire keeps its own snapshot.
		c.callbacks[lvl] = append(cbs[:len(cbs):len(cbs)], callback{fn: fn, criteria: crit})
	}
	return nil
}

func (c *core) fire(lvl Level, msg string, extra Extra) {
	c.cbMu.RLock()
	cbs := c.callbacks[lvl]
	c.cbMu.RUnlock()
	if len(cbs) == 0 {
		return
	}
	if extra == nil {
		extra = Extra{}
	}
	for _, cb := range cbs {
		if subset(cb.criteria, extra) {
			cb.fn(msg, extra)
		}
	}
}

// subset reports whether every key of criteria is in extra with an equal
// value.
func subset(criteria, extra map[string]any) bool {
	for k, want := range criteria {
		got, ok := extra[k]
		if !ok || !equal(got, want) {
			return false
		}
	}
	return true
}

// equal compares as Python's == would for the values Go code logs: numbers
// of any type by value, strings of any string type by content, the rest by
// reflect.DeepEqual.
func equal(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if !va.IsValid() || !vb.IsValid() {
		return !va.IsValid() && !vb.IsValid()
	}
	ka, kb := kindClass(va.Kind()), kindClass(vb.Kind())
	switch {
	case ka == classString && kb == classString:
		return va.String() == vb.String()
	case ka == classInt && kb == classInt:
		return va.Int() == vb.Int()
	case ka == classUint && kb == classUint:
		return va.Uint() == vb.Uint()
	case ka == classInt && kb == classUint:
		return va.Int() >= 0 && uint64(va.Int()) == vb.Uint()
	case ka == classUint && kb == classInt:
		return vb.Int() >= 0 && uint64(vb.Int()) == va.Uint()
	case ka != classOther && ka != classString && kb != classOther && kb != classString:
		return toFloat(va) == toFloat(vb) // at least one float
	}
	return reflect.DeepEqual(a, b)
}

const (
	classOther = iota
	classString
	classInt
	classUint
	classFloat
)

func kindClass(k reflect.Kind) int {
	switch k {
	case reflect.String:
		return classString
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return classInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return classUint
	case reflect.Float32, reflect.Float64:
		return classFloat
	}
	return classOther
}

func toFloat(v reflect.Value) float64 {
	switch kindClass(v.Kind()) {
	case classInt:
		return float64(v.Int())
	case classUint:
		return float64(v.Uint())
	}
	return v.Float()
}

// Flush writes the lines logged so far that wait to be written together
// with others (see output.go): a program about to exit without Close, or
// a test reading the log, calls it.
func (l *Logger) Flush() { l.core.out.flush() }

// Close writes the lines waiting to be written and closes the log file;
// for stdout and Output it only writes them. Close the root logger once,
// after the last line: loggers made with Named and With share the file, and
// lines written after Close are lost (each failed write is reported on
// stderr).
func (l *Logger) Close() error {
	l.core.out.flush()
	if l.core.closer == nil {
		return nil
	}
	return l.core.closer.Close()
}
