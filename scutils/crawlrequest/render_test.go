package crawlrequest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
)

func TestRenderReadsTrueAndObjects(t *testing.T) {
	for _, tc := range []struct {
		field string
		ok    bool
		want  crawlrequest.RenderSpec
	}{
		{``, false, crawlrequest.RenderSpec{}},
		{`,"render":false`, false, crawlrequest.RenderSpec{}},
		{`,"render":null`, false, crawlrequest.RenderSpec{}},
		{`,"render":true`, true, crawlrequest.RenderSpec{Timeout: crawlrequest.DefaultRenderTimeout}},
		{`,"render":{}`, true, crawlrequest.RenderSpec{Timeout: crawlrequest.DefaultRenderTimeout}},
		{`,"render":{"wait_for":"#app a","wait_ms":250,"timeout":7.5}`, true,
			crawlrequest.RenderSpec{WaitFor: "#app a", Wait: 250 * time.Millisecond, Timeout: 7500 * time.Millisecond}},
		{`,"render":{"wait_ms":0,"timeout":1}`, true, crawlrequest.RenderSpec{Timeout: time.Second}},
	} {
		r := decode(t, `{"appid":"a","crawlid":"c","url":"http://example.com/"`+tc.field+`}`)
		spec, ok, err := r.Render()
		if err != nil || ok != tc.ok || spec != tc.want || r.Rendered() != tc.ok {
			t.Errorf("%s: got %+v, %v, %v; want %+v, %v", tc.field, spec, ok, err, tc.want, tc.ok)
		}
	}
}

func TestRenderRefusesOtherValues(t *testing.T) {
	for field, want := range map[string]string{
		`"render":1`:                          "render: want true or an object",
		`"render":"yes"`:                      "render: want true or an object",
		`"render":[]`:                         "render: want true or an object",
		`"render":{"wait":1}`:                 `render: "wait" is not a render option`,
		`"render":{"wait_for":""}`:            "render: wait_for: want a CSS selector",
		`"render":{"wait_for":3}`:             "render: wait_for: want a CSS selector",
		`"render":{"wait_ms":-1}`:             "render: wait_ms: want a whole number",
		`"render":{"wait_ms":1.5}`:            "render: wait_ms: want a whole number",
		`"render":{"wait_ms":"5"}`:            "render: wait_ms: want a whole number",
		`"render":{"timeout":0}`:              "render: timeout: want seconds above 0",
		`"render":{"timeout":-3}`:             "render: timeout: want seconds above 0",
		`"render":{"timeout":301}`:            "at most 300",
		`"render":{"timeout":"5"}`:            "render: timeout: want seconds above 0",
		`"render":{"timeout":0,"wait_ms":-1}`: "render: timeout: want seconds above 0, at most 300; render: wait_ms",
	} {
		r := decode(t, `{"appid":"a","crawlid":"c","url":"http://example.com/",`+field+`}`)
		_, ok, err := r.Render()
		if !ok || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, %v; want an error with %q", field, ok, err, want)
		}
		fed, derr := wirejson.Decode([]byte(`{` + field + `}`))
		if derr != nil {
			t.Fatal(derr)
		}
		if err := crawlrequest.CheckRender(fed.(map[string]any)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckRender %s: got %v, want %q", field, err, want)
		}
	}
	for _, field := range []string{``, `"render":true`, `"render":false`, `"render":null`, `"render":{"wait_for":"p","wait_ms":10,"timeout":2}`} {
		fed, err := wirejson.Decode([]byte(`{` + field + `}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := crawlrequest.CheckRender(fed.(map[string]any)); err != nil {
			t.Errorf("CheckRender %s: %v", field, err)
		}
	}
}

// Links found on a rendered page are rendered alike: Follow keeps the
// render value as written, and a member keeps it through Decode and
// Encode.
func TestRenderIsKeptAndInherited(t *testing.T) {
	const member = `{"appid":"a","crawlid":"c","render":{"timeout":5,"wait_for":"#x"},"spiderid":"link","url":"http://example.com/"}`
	r := decode(t, member)
	b, err := r.Encode()
	if err != nil || string(b) != member {
		t.Fatalf("Encode: %s, %v", b, err)
	}
	link := r.Follow("http://example.com/next")
	raw, ok := link.Extra(crawlrequest.FieldRender)
	if !ok || string(raw) != `{"timeout":5,"wait_for":"#x"}` {
		t.Fatalf("followed link's render: %s, %v", raw, ok)
	}
	spec, ok, err := link.Render()
	if !ok || err != nil || spec.WaitFor != "#x" || spec.Timeout != 5*time.Second {
		t.Errorf("followed link: %+v, %v, %v", spec, ok, err)
	}
	if !r.Retry().Rendered() {
		t.Error("a retry is not rendered")
	}
	fed, err := wirejson.Decode([]byte(member))
	if err != nil {
		t.Fatal(err)
	}
	stored, fr, err := crawlrequest.FromFed(fed.(map[string]any))
	if err != nil || stored != member || !fr.Rendered() {
		t.Errorf("FromFed: %s, %v, rendered %v", stored, err, fr.Rendered())
	}
}
