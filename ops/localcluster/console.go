package localcluster

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// console is the launcher's terminal: every process writes whole lines to it
// behind "name | ", the names padded to one width and coloured when the
// output is a terminal, so interleaved logs stay readable.
type console struct {
	mu    sync.Mutex
	w     io.Writer
	color bool
	width int
	next  int // next colour of the palette
}

// palette is the ANSI colours names cycle through (the launcher's own lines
// are bold).
var palette = []string{"36", "33", "32", "35", "34", "31", "96", "93", "92", "95", "94", "91"}

const (
	// launcherName prefixes the launcher's own lines.
	launcherName = "local-cluster"
	// maxLine is the longest line passed through whole; longer ones are cut
	// into pieces of this size, each with its prefix.
	maxLine = 64 << 10
)

// newConsole returns a console whose prefixes fit names and the launcher's.
func newConsole(w io.Writer, color bool, names []string) *console {
	c := &console{w: w, color: color, width: len(launcherName)}
	for _, n := range names {
		c.width = max(c.width, len(n))
	}
	return c
}

// prefix returns the "name | " a line of name starts with, in colour code.
func (c *console) prefix(name, code string) string {
	p := fmt.Sprintf("%-*s | ", c.width, name)
	if c.color {
		return "\x1b[" + code + "m" + p + "\x1b[0m"
	}
	return p
}

// writeLines writes text, one or more newline-terminated lines, at once.
func (c *console) writeLines(text []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _ = c.w.Write(text)
}

// logf writes one line of the launcher's own.
func (c *console) logf(format string, args ...any) {
	p := c.prefix(launcherName, "1")
	var b bytes.Buffer
	for _, line := range strings.Split(fmt.Sprintf(format, args...), "\n") {
		b.WriteString(p)
		b.WriteString(line)
		b.WriteByte('\n')
	}
	c.writeLines(b.Bytes())
}

// print writes text as it is, for blocks meant to be copied (next steps).
func (c *console) print(text string) { c.writeLines([]byte(text)) }

// stream returns a writer that prefixes every line written to it with name,
// in the next colour of the palette. Call Flush when the writer is done.
func (c *console) stream(name string) *lineWriter {
	c.mu.Lock()
	code := palette[c.next%len(palette)]
	c.next++
	c.mu.Unlock()
	return &lineWriter{c: c, prefix: c.prefix(name, code)}
}

// lineWriter buffers partial lines and hands whole lines to the console. One
// goroutine writes to it at a time (os/exec guarantees that when a command's
// Stdout and Stderr are the same writer).
type lineWriter struct {
	c      *console
	prefix string
	buf    []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	var out bytes.Buffer
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 && len(l.buf) < maxLine {
			break
		}
		end := i + 1
		if i < 0 || i >= maxLine {
			end = maxLine
		}
		out.WriteString(l.prefix)
		out.Write(bytes.TrimRight(l.buf[:end], "\r\n"))
		out.WriteByte('\n')
		l.buf = l.buf[end:]
	}
	if out.Len() > 0 {
		l.c.writeLines(out.Bytes())
	}
	if len(l.buf) == 0 {
		l.buf = nil // let a large buffer go
	}
	return len(p), nil
}

// Flush writes what is left of an unterminated last line.
func (l *lineWriter) Flush() {
	if len(l.buf) > 0 {
		_, _ = l.Write([]byte("\n"))
	}
}

// isTerminal reports whether f is a character device (a terminal), without
// a dependency for it; NO_COLOR (https://no-color.org) turns colour off.
func isTerminal(f *os.File, env []string) bool {
	if lookupEnv(env, "NO_COLOR") != "" || lookupEnv(env, "TERM") == "dumb" {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
