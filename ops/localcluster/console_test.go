package localcluster

import (
	"bytes"
	"strings"
	"testing"
)

func TestLineWriterPrefixesWholeLines(t *testing.T) {
	p := "svc           | " // padded to the width of "local-cluster"
	for _, tc := range []struct {
		name   string
		writes []string
		want   string
	}{
		{"one line", []string{"hello\n"}, p + "hello\n"},
		{"a line in pieces", []string{"hel", "lo", "\n"}, p + "hello\n"},
		{"several lines at once", []string{"a\nb\nc\n"}, p + "a\n" + p + "b\n" + p + "c\n"},
		{"an unterminated last line, flushed", []string{"a\nb"}, p + "a\n" + p + "b\n"},
		{"carriage returns dropped", []string{"a\r\n"}, p + "a\n"},
		{"an empty line kept", []string{"\n"}, p + "\n"},
		{"a huge line cut into pieces", []string{strings.Repeat("x", maxLine+3) + "\n"},
			p + "" + strings.Repeat("x", maxLine) + "\n" + p + "xxx\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			con := newConsole(&out, false, []string{"svc"})
			w := con.stream("svc")
			for _, s := range tc.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			w.Flush()
			if got := out.String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestColouredPrefixesOnlyWhenAsked(t *testing.T) {
	var out bytes.Buffer
	con := newConsole(&out, true, []string{"svc"})
	w := con.stream("svc")
	_, _ = w.Write([]byte("x\n"))
	con.logf("y")
	if got, want := out.String(), "\x1b[36msvc           | \x1b[0mx\n\x1b[1mlocal-cluster | \x1b[0my\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
