package opscheck_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// esMapping is the part of an Elasticsearch mapping the checks need.
type esMapping struct {
	Type       string                `json:"type"`
	Enabled    *bool                 `json:"enabled"`
	Format     string                `json:"format"`
	Properties map[string]*esMapping `json:"properties"`
}

// indexTemplate is elk/logs-template.json.
type indexTemplate struct {
	IndexPatterns []string `json:"index_patterns"`
	Priority      int      `json:"priority"`
	Template      struct {
		Mappings struct {
			DateDetection    *bool                            `json:"date_detection"`
			DynamicTemplates []map[string]dynamicTemplateSpec `json:"dynamic_templates"`
			Properties       map[string]*esMapping            `json:"properties"`
		} `json:"mappings"`
	} `json:"template"`
}

type dynamicTemplateSpec struct {
	MatchMappingType string    `json:"match_mapping_type"`
	Match            string    `json:"match"`
	PathMatch        string    `json:"path_match"`
	Mapping          esMapping `json:"mapping"`
}

func loadTemplate(t *testing.T) *indexTemplate {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(harness.Root(t), "elk", "logs-template.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tpl indexTemplate
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := json.Unmarshal(b, &tpl); err != nil {
		t.Fatalf("elk/logs-template.json: %v", err)
	}
	return &tpl
}

// lookup returns the explicit mapping of a dotted field path, whether the path
// lies inside a field Elasticsearch does not parse (enabled: false), and
// whether the path is mapped at all.
func (tpl *indexTemplate) lookup(path string) (m *esMapping, disabled, found bool) {
	props := tpl.Template.Mappings.Properties
	parts := strings.Split(path, ".")
	for i, part := range parts {
		m = props[part]
		if m == nil {
			return nil, false, false
		}
		if m.Enabled != nil && !*m.Enabled {
			return m, true, true
		}
		if i < len(parts)-1 {
			props = m.Properties
		}
	}
	return m, false, true
}

// dynamicType is the mapping type Elasticsearch gives a new field of kind
// (string, long, double, boolean, object) under the template's dynamic
// templates, with date detection off.
func (tpl *indexTemplate) dynamicType(path, kind string) string {
	name := path[strings.LastIndex(path, ".")+1:]
	for _, named := range tpl.Template.Mappings.DynamicTemplates {
		for _, dt := range named {
			if dt.MatchMappingType != "" && dt.MatchMappingType != "*" && dt.MatchMappingType != kind {
				continue
			}
			if dt.Match != "" && !wildcardMatch(dt.Match, name) {
				continue
			}
			if dt.PathMatch != "" && !wildcardMatch(dt.PathMatch, path) {
				continue
			}
			if dt.Mapping.Type != "" {
				return dt.Mapping.Type
			}
		}
	}
	switch kind {
	case "string":
		return "text"
	default:
		return kind
	}
}

func wildcardMatch(pattern, s string) bool {
	re := "^" + strings.ReplaceAll(regexp.QuoteMeta(pattern), `\*`, ".*") + "$"
	return regexp.MustCompile(re).MatchString(s)
}

// jsonKind is the kind Elasticsearch's dynamic mapping sees in a value.
func jsonKind(v any) string {
	switch x := v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		if strings.ContainsAny(x.String(), ".eE") {
			return "double"
		}
		return "long"
	case map[string]any:
		return "object"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// accepts reports whether a field mapped as typ takes value v (as
// Elasticsearch does, coercion included), and if not, why.
func accepts(typ string, m *esMapping, v any) error {
	kind := jsonKind(v)
	if kind == "null" {
		return nil
	}
	switch typ {
	case "keyword", "text", "flattened":
		if kind == "object" && typ != "flattened" {
			return fmt.Errorf("an object in a %s field", typ)
		}
		return nil
	case "long", "integer", "short", "byte", "double", "float":
		switch kind {
		case "long", "double":
			return nil
		case "string":
			if _, err := json.Number(v.(string)).Float64(); err == nil {
				return nil
			}
		}
		return fmt.Errorf("%s %v in a %s field", kind, v, typ)
	case "boolean":
		if kind == "boolean" || v == "true" || v == "false" || v == "" {
			return nil
		}
		return fmt.Errorf("%s %v in a boolean field", kind, v)
	case "date":
		if kind == "long" {
			return nil
		}
		if s, ok := v.(string); ok {
			if _, err := time.Parse(time.RFC3339Nano, s); err == nil {
				return nil
			}
		}
		return fmt.Errorf("%s %v is not a %s date (%s)", kind, v, typ, m.Format)
	case "object", "":
		if kind == "object" {
			return nil
		}
		return fmt.Errorf("%s %v where an object is mapped", kind, v)
	}
	return fmt.Errorf("mapping type %s is not known to this test", typ)
}

// leaves calls fn for every field of a JSON object as Elasticsearch sees it:
// dotted keys are paths, objects are walked, arrays are their elements.
func leaves(prefix string, v any, fn func(path string, v any)) {
	switch x := v.(type) {
	case map[string]any:
		if prefix != "" {
			fn(prefix, x)
		}
		for k, child := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			leaves(p, child, fn)
		}
	case []any:
		for _, child := range x {
			leaves(prefix, child, fn)
		}
	default:
		fn(prefix, v)
	}
}

// TestLogLinesFitTheIndexTemplate checks every JSON log line the four
// components wrote while crawling and answering requests against
// elk/logs-template.json, as Elasticsearch would index them into one index:
// a value an explicit mapping refuses, or a field that is an object in one
// line and a value in another, or a string in one and a number in another
// (whichever came first, Elasticsearch would reject the other line), fails.
func TestLogLinesFitTheIndexTemplate(t *testing.T) {
	tpl := loadTemplate(t)
	if dd := tpl.Template.Mappings.DateDetection; dd == nil || *dd {
		t.Error("date_detection must be off: the crawler logs fields.timestamp as a date in one line and an empty string in another")
	}
	if !slices.Contains(tpl.IndexPatterns, "logs-scrapy-cluster*") || tpl.Priority <= 100 {
		t.Errorf("the template must match logs-scrapy-cluster* with a priority above the built-in logs-*-* (100); has %v, %d", tpl.IndexPatterns, tpl.Priority)
	}
	logs := realLogs(t)
	type seen struct {
		typ, where string
	}
	dynamic := map[string]seen{}
	for _, component := range sortedKeys(logs) {
		for i, line := range logs[component] {
			for _, required := range []string{"message", "logger", "level", "timestamp"} {
				if _, ok := line[required]; !ok {
					t.Errorf("%s line %d has no %q: %v", component, i, required, line)
				}
			}
			where := fmt.Sprintf("%s line %d (%v)", component, i, line["message"])
			leaves("", map[string]any(line), func(path string, v any) {
				m, disabled, found := tpl.lookup(path)
				if disabled {
					return
				}
				if found {
					typ := m.Type
					if typ == "" && m.Properties != nil {
						typ = "object"
					}
					if err := accepts(typ, m, v); err != nil {
						t.Errorf("%s: field %s: %v", where, path, err)
					}
					return
				}
				kind := jsonKind(v)
				if kind == "null" {
					return
				}
				typ := tpl.dynamicType(path, kind)
				if typ == "double" {
					typ = "long" // numbers share one family: a long field takes 1.5 and a double 1
				}
				if prev, ok := dynamic[path]; ok && prev.typ != typ {
					t.Errorf("field %s is mapped dynamically and conflicts: %s in %s, %s in %s; give it an explicit mapping (or enabled: false) in elk/logs-template.json, or fix the component", path, prev.typ, prev.where, typ, where)
					return
				}
				dynamic[path] = seen{typ, where}
			})
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// savedObject is one line of elk/kibana/export.ndjson.
type savedObject struct {
	Type       string         `json:"type"`
	ID         string         `json:"id"`
	Attributes map[string]any `json:"attributes"`
	References []struct {
		Name string `json:"name"`
		Type string `json:"type"`
		ID   string `json:"id"`
	} `json:"references"`
}

func loadSavedObjects(t *testing.T) []savedObject {
	t.Helper()
	f, err := os.Open(filepath.Join(harness.Root(t), "elk", "kibana", "export.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var objs []savedObject
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var o savedObject
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			t.Fatalf("elk/kibana/export.ndjson line %d: %v", n, err)
		}
		objs = append(objs, o)
	}
	return objs
}

// pipelineFields are fields Logstash adds (elk/logstash/scrapy-cluster.conf):
// no component writes them.
var pipelineFields = map[string]bool{"host": true, "container_name": true, "path": true, "tags": true, "@timestamp": true}

// loggerQuery is the query of a per-component saved search.
var loggerQuery = regexp.MustCompile(`^logger:([a-z-]+)$`)

// queryField finds the fields a KQL query names.
var queryField = regexp.MustCompile(`([A-Za-z_@][\w.]*):`)

// TestKibanaObjectsUseFieldsTheComponentsLog checks elk/kibana/export.ndjson:
// every reference resolves, the five dashboards exist, and every field a
// search or visualization uses is mapped in the index template with a type
// its aggregation can use and appears in real log lines of the component
// whose saved search it is built on.
func TestKibanaObjectsUseFieldsTheComponentsLog(t *testing.T) {
	tpl := loadTemplate(t)
	objs := loadSavedObjects(t)
	logs := realLogs(t)
	byID := map[string]savedObject{}
	for _, o := range objs {
		if _, dup := byID[o.Type+"/"+o.ID]; dup {
			t.Errorf("saved object %s/%s appears twice", o.Type, o.ID)
		}
		byID[o.Type+"/"+o.ID] = o
	}
	for _, o := range objs {
		for _, r := range o.References {
			if _, ok := byID[r.Type+"/"+r.ID]; !ok {
				t.Errorf("%s/%s refers to %s/%s, which the file lacks", o.Type, o.ID, r.Type, r.ID)
			}
		}
	}
	var dashboards []string
	for _, o := range objs {
		if o.Type == "dashboard" {
			dashboards = append(dashboards, o.Attributes["title"].(string))
		}
	}
	for _, want := range []string{"Overall", "Crawler", "Kafka Monitor", "Redis Monitor", "REST"} {
		if !slices.Contains(dashboards, "Scrapy Cluster "+want) {
			t.Errorf("no dashboard %q; have %v", "Scrapy Cluster "+want, dashboards)
		}
	}

	loggers := map[string]string{} // logger name -> component
	for component, lines := range logs {
		for _, l := range lines {
			if name, ok := l["logger"].(string); ok {
				loggers[name] = component
			}
		}
	}
	// searchComponent is the component a saved search shows ("" for all).
	searchComponent := func(o savedObject) string {
		meta, _ := o.Attributes["kibanaSavedObjectMeta"].(map[string]any)
		var src struct {
			Query struct {
				Query string `json:"query"`
			} `json:"query"`
		}
		if err := json.Unmarshal([]byte(meta["searchSourceJSON"].(string)), &src); err != nil {
			t.Errorf("search %s: searchSourceJSON: %v", o.ID, err)
		}
		if src.Query.Query == "" {
			return ""
		}
		m := loggerQuery.FindStringSubmatch(src.Query.Query)
		if m == nil {
			t.Errorf("search %s: query %q is not logger:<name>", o.ID, src.Query.Query)
			return ""
		}
		c, ok := loggers[m[1]]
		if !ok {
			t.Errorf("search %s: no component logs as %q (loggers seen: %v)", o.ID, m[1], sortedKeys(loggers))
		}
		return c
	}
	appears := func(component, field string) bool {
		for c, lines := range logs {
			if component != "" && c != component {
				continue
			}
			for _, l := range lines {
				found := false
				leaves("", map[string]any(l), func(path string, v any) {
					if path == field && v != nil {
						found = true
					}
				})
				if found {
					return true
				}
			}
		}
		return false
	}
	check := func(owner, component, field, use string) {
		m, disabled, found := tpl.lookup(field)
		if !found || disabled {
			t.Errorf("%s uses field %s, which elk/logs-template.json does not map", owner, field)
			return
		}
		numeric := map[string]bool{"long": true, "integer": true, "double": true, "float": true}
		switch use {
		case "avg", "max", "min", "sum":
			if !numeric[m.Type] {
				t.Errorf("%s: %s of %s, which is mapped as %q", owner, use, field, m.Type)
			}
		case "terms":
			if m.Type == "text" || m.Type == "" {
				t.Errorf("%s: terms of %s, which is mapped as %q", owner, field, m.Type)
			}
		case "date_histogram":
			if m.Type != "date" {
				t.Errorf("%s: date histogram over %s, which is mapped as %q", owner, field, m.Type)
			}
		}
		if pipelineFields[field] || field == "timestamp" {
			return
		}
		if !appears(component, field) {
			who := component
			if who == "" {
				who = "any component"
			}
			t.Errorf("%s uses field %s, which no log line of %s has", owner, field, who)
		}
	}
	for _, o := range objs {
		switch o.Type {
		case "search":
			c := searchComponent(o)
			cols, _ := o.Attributes["columns"].([]any)
			for _, col := range cols {
				check("search "+o.ID, c, col.(string), "column")
			}
		case "visualization":
			component := ""
			for _, r := range o.References {
				if r.Type == "search" {
					component = searchComponent(byID["search/"+r.ID])
				}
			}
			var vs struct {
				Type string `json:"type"`
				Aggs []struct {
					Type   string         `json:"type"`
					Params map[string]any `json:"params"`
				} `json:"aggs"`
			}
			if err := json.Unmarshal([]byte(o.Attributes["visState"].(string)), &vs); err != nil {
				t.Errorf("visualization %s: visState: %v", o.ID, err)
				continue
			}
			for _, a := range vs.Aggs {
				if f, ok := a.Params["field"].(string); ok {
					check("visualization "+o.ID, component, f, a.Type)
				}
				filters, _ := a.Params["filters"].([]any)
				for _, fl := range filters {
					q := fl.(map[string]any)["input"].(map[string]any)["query"].(string)
					for _, m := range queryField.FindAllStringSubmatch(q, -1) {
						check("visualization "+o.ID+" filter "+q, component, m[1], "filter")
					}
				}
			}
		}
	}
}
