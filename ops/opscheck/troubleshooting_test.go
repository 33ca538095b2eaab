package opscheck_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// TestTroubleshootingQuotesTheRealMessages: every message the
// troubleshooting page quotes (the first column of its messages table, and
// any "double-quoted" text outside code spans) is one the code writes, so the
// page cannot drift from the logs it explains.
func TestTroubleshootingQuotesTheRealMessages(t *testing.T) {
	root := harness.Root(t)
	page, err := os.ReadFile(filepath.Join(root, "docs", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	quotes := quotedMessages(string(page))
	if len(quotes) < 20 {
		t.Fatalf("found %d quoted messages on the troubleshooting page, want its messages table and more", len(quotes))
	}
	literals := codeStrings(t, root)
	for _, q := range quotes {
		if !messageInCode(q, literals) {
			t.Errorf("docs/troubleshooting.md quotes %q, which no code writes (any more)", q)
		}
	}
}

// quotedMessages are the texts page quotes as messages: the first code span
// of each row of the table after "## Messages", and double-quoted texts
// outside code spans anywhere.
func quotedMessages(page string) []string {
	var out []string
	inMessages := false
	span := regexp.MustCompile("`([^`]+)`")
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(line, "## ") {
			inMessages = strings.HasPrefix(line, "## Messages")
		}
		if inMessages && strings.HasPrefix(line, "| `") {
			out = append(out, span.FindStringSubmatch(line)[1])
		}
		for _, m := range regexp.MustCompile(`"([^"]{8,})"`).FindAllStringSubmatch(span.ReplaceAllString(line, ""), -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// codeStrings are the string literals of every non-test Go file of the
// repository.
func codeStrings(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "bin") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && len(s) >= 4 {
					out = append(out, s)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	placeholder = regexp.MustCompile(`<[^<>]+>|\.\.\.|…`)
	formatVerb  = regexp.MustCompile(`%[-+# 0-9.]*[a-zA-Z]`)
)

// messageInCode reports whether quote, with <...> standing for values, is
// written by the code: it is found in one literal (placeholders matching
// anything), or one literal with its format verbs filled in covers most of
// it, or (a message built of several literals) each of its longer fixed
// parts is in some literal.
func messageInCode(quote string, literals []string) bool {
	var rq strings.Builder
	fixed := placeholder.Split(quote, -1)
	for i, part := range fixed {
		if i > 0 {
			rq.WriteString(".*")
		}
		rq.WriteString(regexp.QuoteMeta(part))
	}
	quoteRE := regexp.MustCompile(rq.String())
	concrete := placeholder.ReplaceAllString(quote, "X")
	for _, lit := range literals {
		if quoteRE.MatchString(lit) {
			return true
		}
		if !formatVerb.MatchString(lit) || len(lit) < 12 {
			continue
		}
		var rl strings.Builder
		for i, part := range formatVerb.Split(lit, -1) {
			if i > 0 {
				rl.WriteString(".*?")
			}
			rl.WriteString(regexp.QuoteMeta(part))
		}
		if loc := regexp.MustCompile(rl.String()).FindStringIndex(concrete); loc != nil && 2*(loc[1]-loc[0]) >= len(concrete) {
			return true
		}
	}
	long := false
	for _, part := range fixed {
		part = strings.Trim(part, ` ()[];:,.?!"`) // the joints between literals
		if len(part) < 6 {
			continue
		}
		found := false
		for _, lit := range literals {
			if strings.Contains(lit, part) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
		long = long || len(part) >= 12
	}
	return long
}

func TestMessageInCodeCanFail(t *testing.T) {
	literals := []string{"port %d (%s, %s) is already in use", "Gave up retrying the request; dropped", "Unknown setting ", " (from ", "; did you mean "}
	for _, tc := range []struct {
		quote string
		want  bool
	}{
		{"Gave up retrying the request; dropped", true},
		{"Gave up retrying; dropped", false},
		{"local-cluster: port 5343 (REST, --rest-port) is already in use", true},
		{"port <port> (<service>, <flag>) is already in use", true},
		{"port <port> is taken", false},
		{"Unknown setting <NAME> (from <source>); did you mean <SETTING>?", true},
		{"Unknown option <NAME>", false},
	} {
		if got := messageInCode(tc.quote, literals); got != tc.want {
			t.Errorf("messageInCode(%q) = %v, want %v", tc.quote, got, tc.want)
		}
	}
}
