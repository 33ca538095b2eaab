package settingsdoc_test

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/scrapycluster/scrapy-cluster-go/ops/settingsdoc"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// stale returns the generated files that differ from the ones in root, each
// with its first differing line.
func stale(t *testing.T, root string, components []settingsdoc.Component) []string {
	t.Helper()
	files, err := settingsdoc.Generate(root, components)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, path := range slices.Sorted(maps.Keys(files)) {
		have, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		if want := files[path]; string(have) != string(want) {
			out = append(out, path+": "+firstDifference(string(have), string(want)))
		}
	}
	return out
}

func firstDifference(have, want string) string {
	h, w := strings.Split(have, "\n"), strings.Split(want, "\n")
	for i := range max(len(h), len(w)) {
		var hl, wl string
		if i < len(h) {
			hl = h[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if hl != wl {
			return "line " + strconv.Itoa(i+1) + " is\n\t" + hl + "\nwhere the declarations make it\n\t" + wl
		}
	}
	return "same lines"
}

func TestTheGeneratedFilesAreCurrent(t *testing.T) {
	for _, s := range stale(t, harness.Root(t), settingsdoc.Components()) {
		t.Errorf("%s\nThe file is generated from the setting declarations: run `%s` and commit the result.", s, settingsdoc.Command)
	}
}

// A setting added to a component shows as a stale names file and a stale
// table until the files are generated again.
func TestANewSettingMakesTheFilesStale(t *testing.T) {
	components := settingsdoc.Components()
	for i, c := range components {
		if c.Name == "crawler" {
			extra := settings.Bool("CRAWLER_NEW_THING", false, "a setting no file knows yet").Ours()
			components[i].Settings = settings.Join(c.Settings, settings.Declare(extra))
		}
	}
	got := stale(t, harness.Root(t), components)
	if len(got) != 2 || !strings.HasPrefix(got[0], "docs/crawler.md: ") || !strings.HasPrefix(got[1], settingsdoc.NamesFile+": ") {
		t.Fatalf("stale files %q, want docs/crawler.md and %s", got, settingsdoc.NamesFile)
	}
	if !strings.Contains(got[0], "| `CRAWLER_NEW_THING` | `false` | (Go) a setting no file knows yet |") {
		t.Errorf("the crawler's table lacks the new row:\n%s", got[0])
	}
	if !strings.Contains(got[1], `"CRAWLER_NEW_THING",`) {
		t.Errorf("the names lack the new one:\n%s", got[1])
	}
}

func TestEveryDeclarationHasAOneLineDoc(t *testing.T) {
	for _, c := range settingsdoc.Components() {
		for _, name := range c.Settings.Names() {
			d := c.Settings[name]
			if strings.TrimSpace(d.Doc) == "" || strings.Contains(d.Doc, "\n") {
				t.Errorf("%s: %s's doc %q is not one line", c.Name, name, d.Doc)
			}
			if d.Name != name {
				t.Errorf("%s: %s is declared under %s", c.Name, d.Name, name)
			}
		}
	}
}

// The default column is YAML that reads back as the default, as the
// settings file takes it.
func TestTheTablesDefaultsReadBackAsTheDefaults(t *testing.T) {
	for _, c := range settingsdoc.Components() {
		if c.Page == "" {
			continue
		}
		rows := map[string]string{}
		for _, line := range strings.Split(settingsdoc.Table(c), "\n") {
			cells := strings.Split(line, " | ")
			if len(cells) < 3 || !strings.HasPrefix(cells[0], "| `") {
				continue
			}
			rows[strings.Trim(cells[0], "| `")] = strings.ReplaceAll(strings.Trim(cells[1], "`"), `\|`, "|")
		}
		if len(rows) != len(c.Settings) {
			t.Errorf("%s: %d rows for %d settings", c.Name, len(rows), len(c.Settings))
		}
		for name, cell := range rows {
			var got any
			if err := yaml.Unmarshal([]byte(cell), &got); err != nil {
				t.Errorf("%s: %s's default %s is not YAML: %v", c.Name, name, cell, err)
				continue
			}
			// Compared as YAML text, as a settings file holds them: 10.0
			// and 10, []string and []any alike.
			gotText, err1 := yaml.Marshal(got)
			wantText, err2 := yaml.Marshal(c.Settings[name].Default)
			if err := errors.Join(err1, err2); err != nil {
				t.Fatal(err)
			}
			if string(gotText) != string(wantText) {
				t.Errorf("%s: %s's default reads back as %s, want %s", c.Name, name, gotText, wantText)
			}
		}
	}
}

func TestReplaceTableNeedsOnePlaceForTheTable(t *testing.T) {
	table := "<!-- settings table: x -->\n| a |\n<!-- end of settings table -->\n"
	got, err := settingsdoc.ReplaceTable([]byte("# Page\n\n<!-- settings table: old -->\n| old |\n<!-- end of settings table -->\n\nAfter.\n"), table)
	if err != nil || string(got) != "# Page\n\n"+table+"\nAfter.\n" {
		t.Errorf("ReplaceTable = %q, %v", got, err)
	}
	for name, page := range map[string]string{
		"no table":                 "# Page\n",
		"two tables":               "<!-- settings table: a -->\n<!-- end of settings table -->\n<!-- settings table: b -->\n<!-- end of settings table -->\n",
		"no end":                   "<!-- settings table: a -->\n| a |\n",
		"a start inside of a line": "text <!-- settings table: a -->\n<!-- end of settings table -->\n",
	} {
		if _, err := settingsdoc.ReplaceTable([]byte(page), table); err == nil {
			t.Errorf("%s: ReplaceTable took it", name)
		}
	}
}
