package opscheck_test

import (
	"bufio"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// codeBlock is a fenced code block of a Markdown page, with the quickstart
// marker comment that precedes it, if any.
type codeBlock struct {
	file   string
	line   int
	info   string
	text   string
	marker string // what follows "quickstart:" in <!-- quickstart: ... -->
}

var markerRe = regexp.MustCompile(`^<!--\s*quickstart:\s*(.*?)\s*-->$`)

func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(harness.Root(t), "docs", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	return files
}

func codeBlocks(t *testing.T, file string) []codeBlock {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []codeBlock
	var cur *codeBlock
	marker := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if cur != nil {
			if trimmed == "```" {
				blocks = append(blocks, *cur)
				cur = nil
				continue
			}
			cur.text += line + "\n"
			continue
		}
		if m := markerRe.FindStringSubmatch(trimmed); m != nil {
			marker = m[1]
			continue
		}
		if info, ok := strings.CutPrefix(trimmed, "```"); ok {
			cur = &codeBlock{file: filepath.Base(file), line: n, info: info, marker: marker}
			marker = ""
			continue
		}
		if trimmed != "" {
			marker = "" // a marker belongs to the block right after it
		}
	}
	if cur != nil {
		t.Fatalf("%s: code block at line %d is not closed", file, cur.line)
	}
	return blocks
}

// settingsRow is a row of a settings table: | `NAME` | `default` | meaning |
var settingsRow = regexp.MustCompile("^\\| `([A-Z][A-Z0-9_]*)` \\| `(.*)` \\| .+ \\|$")

// TestDocsListEverySettingWithItsDefault compares the settings table of
// each component page with what the binary's `settings` sub-command prints:
// the same names, and defaults equal as YAML values.
func TestDocsListEverySettingWithItsDefault(t *testing.T) {
	root := harness.Root(t)
	for page, bin := range map[string]string{"kafka-monitor.md": "kafka-monitor", "redis-monitor.md": "redis-monitor", "crawler.md": "crawler", "rest.md": "rest"} {
		t.Run(bin, func(t *testing.T) {
			var actual map[string]any
			out := run(t, time.Minute, nil, binary(t, bin), "settings")
			if err := yaml.Unmarshal([]byte(out), &actual); err != nil {
				t.Fatalf("%s settings: %v", bin, err)
			}
			b, err := os.ReadFile(filepath.Join(root, "docs", page))
			if err != nil {
				t.Fatal(err)
			}
			documented := map[string]bool{}
			for _, line := range strings.Split(string(b), "\n") {
				m := settingsRow.FindStringSubmatch(line)
				if m == nil {
					continue
				}
				name, cell := m[1], strings.ReplaceAll(m[2], `\|`, "|")
				documented[name] = true
				want, ok := actual[name]
				if !ok {
					t.Errorf("docs/%s documents %s, which %s does not have", page, name, bin)
					continue
				}
				var got any
				if err := yaml.Unmarshal([]byte(cell), &got); err != nil {
					t.Errorf("docs/%s: default of %s is not YAML: %s", page, name, cell)
					continue
				}
				if !reflect.DeepEqual(normalizeYAML(got), normalizeYAML(want)) {
					t.Errorf("docs/%s: %s defaults to %v, but %s settings says %v", page, name, got, bin, want)
				}
			}
			for name := range actual {
				if !documented[name] {
					t.Errorf("docs/%s does not document %s (default %v)", page, name, actual[name])
				}
			}
		})
	}
}

// normalizeYAML makes decoded YAML values comparable (nil and "" alike).
func normalizeYAML(v any) any {
	if v == nil {
		return ""
	}
	return v
}

// ourBinaries are the commands the docs may run from bin/ or PATH.
var ourBinaries = map[string]bool{"kafka-monitor": true, "kafkadump": true, "redis-monitor": true, "crawler": true, "rest": true, "testsite": true, "file-pusher": true, "local-cluster": true}

// shellCommands splits a shell block into simple commands: continuation
// lines joined, comments, prompts and here-documents dropped, and lists
// (&&, ||, ;, |, &) split.
func shellCommands(text string) []string {
	text = strings.ReplaceAll(text, "\\\n", " ")
	var cmds []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "$ "))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for _, part := range splitShell(line) {
			if part = strings.TrimSpace(part); part != "" {
				cmds = append(cmds, part)
			}
		}
	}
	return cmds
}

// splitShell splits at unquoted ;, &, | and at an unquoted # comment.
func splitShell(line string) []string {
	var parts []string
	var cur strings.Builder
	quote := byte(0)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == ';' || c == '&' || c == '|':
			parts = append(parts, cur.String())
			cur.Reset()
			continue
		case c == '#' && (i == 0 || line[i-1] == ' '):
			return append(parts, cur.String())
		}
		cur.WriteByte(c)
	}
	return append(parts, cur.String())
}

// shellWords splits a simple command into words, honouring quotes.
func shellWords(cmd string) []string {
	var words []string
	var cur strings.Builder
	quote, inWord := byte(0), false
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

var flagInHelp = regexp.MustCompile(`(?m)^\s+(?:-(\w), )?--([\w-]+)`)

// TestDocsCommandsMatchTheBinaries checks every command of the docs' sh
// blocks that runs one of our binaries: its sub-commands exist and every flag
// it passes is one that sub-command takes (from its --help); `make` targets
// exist in the Makefile; files named with -f or --settings in the repository
// exist.
func TestDocsCommandsMatchTheBinaries(t *testing.T) {
	root := harness.Root(t)
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	helps := map[string]string{}
	help := func(bin string, sub []string) string {
		key := bin + " " + strings.Join(sub, " ")
		if h, ok := helps[key]; ok {
			return h
		}
		h, err := runErr(time.Minute, nil, binary(t, bin), append(sub, "--help")...)
		if err != nil {
			h = ""
		}
		helps[key] = h
		return h
	}
	checked := 0
	for _, file := range docFiles(t) {
		for _, b := range codeBlocks(t, file) {
			if b.info != "sh" {
				continue
			}
			for _, cmd := range shellCommands(b.text) {
				words := shellWords(cmd)
				for len(words) > 0 && strings.Contains(words[0], "=") { // VAR=value prefixes
					words = words[1:]
				}
				if len(words) == 0 {
					continue
				}
				where := b.file + ":" + strconv.Itoa(b.line) + ": " + cmd
				name := filepath.Base(words[0])
				switch {
				case name == "go":
					for _, a := range words[1:] {
						if p, ok := strings.CutPrefix(a, "./"); ok {
							if _, err := os.Stat(filepath.Join(root, strings.TrimSuffix(p, "/..."))); err != nil {
								t.Errorf("%s: %s does not exist", where, a)
							}
						}
					}
				case name == "make":
					for _, target := range words[1:] {
						if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:`).Match(makefile) {
							t.Errorf("%s: the Makefile has no target %s", where, target)
						}
					}
				case ourBinaries[name]:
					checked++
					checkOurCommand(t, where, name, words[1:], help)
				}
			}
		}
	}
	if checked < 10 {
		t.Errorf("only %d commands of our binaries found in docs/: is the parsing broken?", checked)
	}
}

func checkOurCommand(t *testing.T, where, bin string, args []string, help func(string, []string) string) {
	t.Helper()
	var sub []string
	rootHelp := help(bin, nil)
	if rootHelp == "" {
		t.Errorf("%s: %s --help failed", where, bin)
		return
	}
	// Sub-commands are the leading words the help lists as commands.
	h := rootHelp
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			if !flagKnown(h, a) {
				t.Errorf("%s: %s %s has no flag %s", where, bin, strings.Join(sub, " "), a)
			}
			if !strings.Contains(a, "=") && flagTakesValue(h, a) {
				i++
			}
			continue
		}
		if regexp.MustCompile(`(?m)^  `+regexp.QuoteMeta(a)+`\s`).MatchString(h) && strings.Contains(h, "Available Commands") {
			sub = append(sub, a)
			h = help(bin, sub)
			continue
		}
		// A positional argument (a JSON request): nothing to check.
	}
}

func flagKnown(help, arg string) bool {
	name, _, _ := strings.Cut(arg, "=")
	for _, m := range flagInHelp.FindAllStringSubmatch(help, -1) {
		if name == "--"+m[2] || (m[1] != "" && name == "-"+m[1]) {
			return true
		}
	}
	return name == "-h" || name == "--help"
}

// flagTakesValue reports whether the help shows a value type after the flag.
func flagTakesValue(help, arg string) bool {
	for _, line := range strings.Split(help, "\n") {
		m := flagInHelp.FindStringSubmatch(line)
		if m == nil || (arg != "--"+m[2] && (m[1] == "" || arg != "-"+m[1])) {
			continue
		}
		rest := strings.Fields(line[len(m[0]):])
		return len(rest) > 0 && regexp.MustCompile(`^(string|int|int64|duration|strings|NAME=VALUE|float)$`).MatchString(rest[0])
	}
	return false
}

// quickstartPorts are the default ports the quick start's commands use; the
// test runs them on free ports instead, rewriting these.
var quickstartPorts = []struct {
	flag, text string
}{
	{"--kafka-port", "9092"}, {"--redis-port", "6379"}, {"--rest-port", "5343"}, {"--test-site-port", "8000"},
}

// TestQuickStartRunsAsDocumented runs the commands of docs/quickstart.md
// marked <!-- quickstart: ... -->, as written there, against the local
// cluster: `start` blocks run in the background until their output shows the
// `until` text, `run` blocks must exit 0 (and print their `expect` text),
// retried until a deadline while the cluster settles. Ports are the only
// change: the cluster runs on free ports, given to the launcher as flags and
// put in place of the defaults in the other commands.
func TestQuickStartRunsAsDocumented(t *testing.T) {
	harness.Tool(t, "curl", "curl")
	work := t.TempDir()
	if err := os.Symlink(binDir(t), filepath.Join(work, "bin")); err != nil {
		t.Fatal(err)
	}
	ports := map[string]string{}
	for _, p := range quickstartPorts {
		port := harness.Port(t)
		ports[p.text] = strconv.Itoa(port)
	}
	rewrite := func(s string) string {
		for _, p := range quickstartPorts {
			s = regexp.MustCompile(`:`+p.text+`\b`).ReplaceAllString(s, ":"+ports[p.text])
		}
		return s
	}
	// The other commands find the cluster the way the launcher tells users
	// to: by the environment (here with the test's ports).
	env := []string{"KAFKA_HOSTS=127.0.0.1:" + ports["9092"], "REDIS_HOST=127.0.0.1", "REDIS_PORT=" + ports["6379"], "ZOOKEEPER_HOSTS="}
	ran := 0
	for _, b := range codeBlocks(t, filepath.Join(harness.Root(t), "docs", "quickstart.md")) {
		if b.marker == "" {
			continue
		}
		opts := markerOptions(t, b.marker)
		where := b.file + ":" + strconv.Itoa(b.line)
		switch opts["mode"] {
		case "start":
			script := strings.TrimSpace(b.text)
			for _, p := range quickstartPorts {
				script += " " + p.flag + " " + ports[p.text]
			}
			script += " --data-dir '' --color never"
			p := startProc(t, work, nil, "bash", "-c", "exec "+script)
			until := opts["until"]
			waitFor(t, 90*time.Second, where+": the output "+strconv.Quote(until), func() bool {
				if p.Exited() {
					t.Fatalf("%s: %s exited: %v\n%s\n%s", where, script, p.Wait(), tail(p.stdout.String()), tail(p.stderr.String()))
				}
				return strings.Contains(p.stdout.String(), until)
			})
			t.Cleanup(func() {
				if !p.stop(30 * time.Second) {
					t.Errorf("%s: the cluster did not stop within 30 s of SIGTERM", where)
				}
			})
		case "run":
			script := rewrite(b.text)
			expect := opts["expect"]
			deadline := time.Now().Add(60 * time.Second)
			for {
				out, err := runErr(30*time.Second, env, "bash", "-c", "cd "+strconv.Quote(work)+" && "+script)
				if err == nil && strings.Contains(out, expect) {
					t.Logf("%s: %s\n%s", where, strings.TrimSpace(script), tail(out))
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: %s\nwant exit 0 and %q in the output; last try: %v\n%s", where, script, expect, err, out)
				}
				time.Sleep(500 * time.Millisecond)
			}
		default:
			t.Fatalf("%s: unknown quickstart marker %q", where, b.marker)
		}
		ran++
	}
	if ran < 3 {
		t.Fatalf("only %d quickstart blocks in docs/quickstart.md", ran)
	}
}

var optionRe = regexp.MustCompile(`(\w+)="((?:[^"\\]|\\.)*)"`)

// markerOptions parses `run expect="..."` / `start until="..."`.
func markerOptions(t *testing.T, marker string) map[string]string {
	t.Helper()
	mode, rest, _ := strings.Cut(marker, " ")
	opts := map[string]string{"mode": mode}
	for _, m := range optionRe.FindAllStringSubmatch(rest, -1) {
		v, err := strconv.Unquote(`"` + m[2] + `"`)
		if err != nil {
			t.Fatalf("marker %q: %v", marker, err)
		}
		opts[m[1]] = v
	}
	return opts
}
