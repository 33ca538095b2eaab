package plugin_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	_ "github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/all"
)

func TestValidateGivesEachBadRequestItsStageAndReason(t *testing.T) {
	plugins, err := plugin.Load(defaultPlugins)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		raw    string
		stage  plugin.Stage
		plugin string
		reason string // the whole reason, or its start when it ends in "..."
	}{
		{"no bytes at all", ``, plugin.NotJSON, "", "empty request"},
		{"only whitespace", " \n\t ", plugin.NotJSON, "", "empty request"},
		{"bytes that are not UTF-8", "{\"url\": \"http://example.com/\xff\"}", plugin.NotJSON, "", "not UTF-8: byte 0xff at offset 28"},
		{"a truncated UTF-8 sequence", "{\"appid\": \"ab\xc3\"}", plugin.NotJSON, "", "not UTF-8: byte 0xc3 at offset 13"},
		{"text that is not JSON", `{url:`, plugin.NotJSON, "", "invalid JSON: invalid character 'u' looking for beginning of object key string"},
		{"two JSON values", `{} {}`, plugin.NotJSON, "", "invalid JSON: data after the JSON value"},
		{"null", `null`, plugin.NoSchema, "", "no plugin's schema accepts it: ScraperHandler: at '': got null, want object | ..."},
		{"an array", `[1]`, plugin.NoSchema, "", "no plugin's schema accepts it: ScraperHandler: at '': got array, want object | ..."},
		{"an unknown field in a crawl: only the scraper's objection",
			`{"url": "http://example.com/", "appid": "testapp", "crawlid": "c1", "crazykey": 1}`, plugin.NoSchema, "",
			"no plugin's schema accepts it: ScraperHandler: at '': additional properties 'crazykey' not allowed"},
		{"every error of a crawl at once: the schema's and the Validator's",
			`{"url": "ftp://example.com/", "appid": "ab", "crawlid": "c1", "priority": "high", "allow_regex": ["("]}`, plugin.NoSchema, "",
			"no plugin's schema accepts it: ScraperHandler: at '/appid': minLength: got 2, want 3; at '/priority': got string, want integer; " +
				`url: scheme "ftp" not allowed; want http or https; allow_regex[0] "(": ...`},
		{"a field the schema objects to is not named twice",
			`{"url": 7, "appid": "testapp", "crawlid": "c1"}`, plugin.NoSchema, "",
			"no plugin's schema accepts it: ScraperHandler: at '/url': got number, want string"},
		{"an appid too long",
			`{"url": "http://example.com/", "appid": "` + strings.Repeat("a", 41) + `", "crawlid": "c1"}`, plugin.NoSchema, "",
			"no plugin's schema accepts it: ScraperHandler: at '/appid': maxLength: got 41, want 40"},
		{"a priority of the wrong type",
			`{"url": "http://example.com/", "appid": "testapp", "crawlid": "c1", "priority": "high"}`, plugin.NoSchema, "",
			"no plugin's schema accepts it: ScraperHandler: at '/priority': got string, want integer"},
		{"a request meant for nobody: every objection", `{"hello": "world"}`, plugin.NoSchema, "",
			"no plugin's schema accepts it: ScraperHandler: at '': missing properties 'appid', 'crawlid', 'url'; at '': additional properties 'hello' not allowed | ActionHandler: ..."},
		{"a number beyond float64", `{"url": "http://example.com/", "appid": "testapp", "crawlid": "c1", "attrs": {"n": [1, 1e400]}}`,
			plugin.Refused, "ScraperHandler", "at '/attrs/n/1': number out of range"},
		{"an ftp URL", `{"url": "ftp://example.com/", "appid": "testapp", "crawlid": "c1"}`,
			plugin.Refused, "ScraperHandler", `url: scheme "ftp" not allowed; want http or https`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, req, err := plugin.Validate(plugins, []byte(tc.raw))
			var invalid *plugin.InvalidError
			if !errors.As(err, &invalid) {
				t.Fatalf("Validate(%q) = %v, %v, %v; want an *InvalidError", tc.raw, p, req, err)
			}
			if p != nil || req != nil {
				t.Errorf("Validate returned a plugin or request with its error")
			}
			if invalid.Stage != tc.stage || invalid.Plugin != tc.plugin {
				t.Errorf("stage %d plugin %q, want %d %q", invalid.Stage, invalid.Plugin, tc.stage, tc.plugin)
			}
			if start, ok := strings.CutSuffix(tc.reason, "..."); ok {
				if !strings.HasPrefix(err.Error(), start) {
					t.Errorf("reason\n%s\ndoes not start with\n%s", err, start)
				}
			} else if err.Error() != tc.reason {
				t.Errorf("reason\n%s\nwant\n%s", err, tc.reason)
			}
			if parsed := tc.stage == plugin.NoSchema || tc.stage == plugin.Refused; invalid.Parsed() != parsed {
				t.Errorf("Parsed() = %v, want %v", invalid.Parsed(), parsed)
			}
		})
	}
}

func TestOneRequestGetsOneReasonWordForWordOnEveryRun(t *testing.T) {
	plugins, err := plugin.Load(defaultPlugins)
	if err != nil {
		t.Fatal(err)
	}
	// Several unknown properties: the validator finds them in map order.
	raw := []byte(`{"url": "http://example.com/", "appid": "testapp", "crawlid": "c1", "zeta": 1, "alpha": 2, "mu": 3, "beta": 4, "omega": 5}`)
	want := "no plugin's schema accepts it: ScraperHandler: at '': additional properties 'alpha', 'beta', 'mu', 'omega', 'zeta' not allowed"
	for range 50 {
		if _, _, err := plugin.Validate(plugins, raw); err == nil || err.Error() != want {
			t.Fatalf("reason\n%v\nwant\n%s", err, want)
		}
	}
}

func TestValidateFillsInTheDefaultsOfTheAcceptingPlugin(t *testing.T) {
	plugins, err := plugin.Load(defaultPlugins)
	if err != nil {
		t.Fatal(err)
	}
	p, req, err := plugin.Validate(plugins, []byte(`{"url": "http://example.com/", "appid": "testapp", "crawlid": "c1"}`))
	if err != nil || p.Plugin.Name() != "ScraperHandler" || req["spiderid"] != "link" {
		t.Fatalf("Validate = %v, %v, %v", p, req, err)
	}
}

func TestCheckSizeRefusesRequestsOverTheLimit(t *testing.T) {
	var invalid *plugin.InvalidError
	if err := plugin.CheckSize(make([]byte, 11), 10); !errors.As(err, &invalid) || invalid.Stage != plugin.TooLarge ||
		err.Error() != "request of 11 bytes is larger than MAX_REQUEST_BYTES (10)" {
		t.Errorf("CheckSize(11 bytes, 10) = %v", err)
	}
	for _, tc := range []struct{ n, limit int }{{10, 10}, {0, 10}, {1 << 20, 0}} {
		if err := plugin.CheckSize(make([]byte, tc.n), tc.limit); err != nil {
			t.Errorf("CheckSize(%d bytes, %d) = %v", tc.n, tc.limit, err)
		}
	}
}

// fussy refuses {"n": 13} in its Validator and panics on {"n": 666}.
type fussy struct{ plugin.Base }

func (*fussy) Name() string { return "FussyHandler" }
func (*fussy) Schema() []byte {
	return []byte(`{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": false}`)
}
func (*fussy) Handle(context.Context, plugin.Request, redis.Pipeliner) (string, error) {
	return "", nil
}
func (*fussy) Validate(req plugin.Request) error {
	switch req["n"].(interface{ String() string }).String() {
	case "13":
		return errors.New("n: unlucky")
	case "666":
		panic("oops")
	}
	return nil
}

func TestAValidatorRefusesAndItsPanicOnlyRefusesTheRequest(t *testing.T) {
	loaded, err := plugin.NewLoaded("fussy", 1, &fussy{})
	if err != nil {
		t.Fatal(err)
	}
	plugins := []plugin.Loaded{loaded}
	for raw, want := range map[string]string{`{"n": 13}`: "n: unlucky", `{"n": 666}`: "validation panicked: oops", `{"n": 1}`: ""} {
		_, _, err := plugin.Validate(plugins, []byte(raw))
		switch {
		case want == "" && err != nil:
			t.Errorf("Validate(%s) = %v, want it accepted", raw, err)
		case want != "" && (err == nil || err.Error() != want):
			t.Errorf("Validate(%s) = %v, want %q", raw, err, want)
		}
	}
}
