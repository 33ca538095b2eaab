package console

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestFieldErrorsPutEachReasonBesideItsField(t *testing.T) {
	fields := fieldNames()
	tests := []struct {
		name  string
		cause string
		want  map[string][]string
	}{
		{"the schemas' objections, only the crawl plugin's kept",
			"ScraperHandler: at '/appid': minLength: got 1, want 3; at '/priority': got string, want integer | " +
				"ActionHandler: at '': missing properties 'uuid', 'spiderid', 'action'",
			map[string][]string{"appid": {"minLength: got 1, want 3"}, "priority": {"got string, want integer"}}},
		{"missing properties are required",
			"ScraperHandler: at '': missing property 'url' | StatsHandler: at '': missing property 'uuid'",
			map[string][]string{"url": {"required"}}},
		{"a nested location counts for its top field",
			"ScraperHandler: at '/allow_regex/1': got number, want string",
			map[string][]string{"allow_regex": {"got number, want string"}}},
		{"an unknown property goes to the form",
			"ScraperHandler: at '': additional properties 'foo' not allowed",
			map[string][]string{"": {"additional properties 'foo' not allowed"}}},
		{"the verdict's form of the schemas' objections",
			"no plugin's schema accepts it: ScraperHandler: at '/maxdepth': maximum: got 9, want 3",
			map[string][]string{"maxdepth": {"maximum: got 9, want 3"}}},
		{"a validator's reason names its field first",
			`url: scheme "ftp" not allowed`,
			map[string][]string{"url": {`scheme "ftp" not allowed`}}},
		{"the schema's and the validator's reasons at once, each beside its field",
			"no plugin's schema accepts it: ScraperHandler: at '/appid': minLength: got 2, want 3; at '/priority': got string, want integer; " +
				`url: "ftp:x" is relative or has no scheme; want an absolute http or https URL; allow_regex[0] "(": missing closing )`,
			map[string][]string{"appid": {"minLength: got 2, want 3"}, "priority": {"got string, want integer"},
				"url":         {`"ftp:x" is relative or has no scheme; want an absolute http or https URL`},
				"allow_regex": {`allow_regex[0] "(": missing closing )`}}},
		{"a reason naming no field goes to the form",
			"at '/x': number out of range",
			map[string][]string{"": {"number out of range"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fieldErrors(tt.cause, crawlPlugin, fields); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("fieldErrors(%q) = %v, want %v", tt.cause, got, tt.want)
			}
		})
	}
}

func TestTheFormsTextBecomesTheRequestsJSON(t *testing.T) {
	req := crawlRequest(map[string]string{
		"url": " http://example.com/ ", "appid": "app", "crawlid": "c1", "spiderid": "",
		"priority": "5", "maxdepth": "two", "allowed_domains": "a.com\n\n b.com \n",
		"attrs": `{"k": [1, 2]}`, "cookie": "not set? no: set", "expires": "",
	})
	got, _ := json.Marshal(req)
	want := `{"allowed_domains":["a.com","b.com"],"appid":"app","attrs":{"k":[1,2]},"cookie":"not set? no: set",` +
		`"crawlid":"c1","maxdepth":"two","priority":5,"url":"http://example.com/"}`
	if string(got) != want {
		t.Errorf("request\n%s\nwant\n%s", got, want)
	}
	if got, _ := json.Marshal(crawlRequest(map[string]string{"attrs": "{not json"})); string(got) != `{"attrs":"{not json"}` {
		t.Errorf("attrs that are not JSON go as text for the validation to name: %s", got)
	}
}
