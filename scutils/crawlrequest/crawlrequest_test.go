package crawlrequest_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest/crawlrequesttest"
)

// fieldsOf is r's exported fields by name, attrs compacted.
func fieldsOf(t *testing.T, r *crawlrequest.Request) map[string]any {
	t.Helper()
	out := map[string]any{}
	v := reflect.ValueOf(*r)
	for i := range v.NumField() {
		if f := v.Type().Field(i); f.IsExported() {
			out[f.Name] = v.Field(i).Interface()
		}
	}
	if r.Attrs != nil {
		var b bytes.Buffer
		if err := json.Compact(&b, r.Attrs); err != nil {
			t.Fatalf("attrs %s: %v", r.Attrs, err)
		}
		out["Attrs"] = b.String()
	} else {
		out["Attrs"] = nil
	}
	return out
}

func TestDecodeReadsEveryFixtureAsItSays(t *testing.T) {
	for _, m := range crawlrequesttest.Load(t) {
		t.Run(m.Name, func(t *testing.T) {
			got, err := crawlrequest.Decode([]byte(m.Member))
			if m.Request == nil {
				if err == nil || !strings.Contains(err.Error(), m.Error) {
					t.Fatalf("Decode = %v, want an error saying %q", err, m.Error)
				}
				var derr *crawlrequest.DecodeError
				if !errors.As(err, &derr) {
					t.Fatalf("Decode error %T, want a *DecodeError", err)
				}
				named := crawlrequesttest.Crawl{AppID: derr.AppID, CrawlID: derr.CrawlID}
				switch {
				case m.Crawl == nil && derr.Named:
					t.Errorf("the error names crawl %+v, want none", named)
				case m.Crawl != nil && (!derr.Named || named != *m.Crawl):
					t.Errorf("the error names crawl %+v (named %v), want %+v", named, derr.Named, *m.Crawl)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			want, err := m.Request.Request()
			if err != nil {
				t.Fatal(err)
			}
			if g, w := fieldsOf(t, got), fieldsOf(t, want); !reflect.DeepEqual(g, w) {
				t.Errorf("decoded\n%v\nwant\n%v", g, w)
			}
			for name, raw := range m.Request.Extra {
				if v, ok := got.Extra(name); !ok || !jsonEqual(v, raw) {
					t.Errorf("extra %s = %s (%v), want %s", name, v, ok, raw)
				}
			}
		})
	}
}

func TestEncodeWritesEveryFixtureBackAsItSays(t *testing.T) {
	for _, m := range crawlrequesttest.Load(t) {
		if m.Request == nil {
			continue
		}
		t.Run(m.Name, func(t *testing.T) {
			r, err := crawlrequest.Decode([]byte(m.Member))
			if err != nil {
				t.Fatal(err)
			}
			b, err := r.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != m.Encoded {
				t.Fatalf("Encode =\n%s\nwant\n%s", b, m.Encoded)
			}
			// What Encode writes reads back the same and is a fixed point.
			again, err := crawlrequest.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(fieldsOf(t, again), fieldsOf(t, r)) {
				t.Errorf("read back\n%v\nwant\n%v", fieldsOf(t, again), fieldsOf(t, r))
			}
			if b2, _ := again.Encode(); !bytes.Equal(b2, b) {
				t.Errorf("written again\n%s\nwant\n%s", b2, b)
			}
		})
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// seed is a request as the Kafka Monitor queues it.
const seed = `{"allow_regex":["/a"],"allowed_domains":null,"appid":"testapp","attrs":{"k":[1,2]},"cookie":"a=b",` +
	`"crawlid":"ABC123","deny_extensions":null,"deny_regex":null,"domain_max_pages":0,"expires":1000000000000000000000000000000,` +
	`"maxdepth":2,"priority":1,"spiderid":"link","url":"http://istresearch.com/?a=1\u0026b=2","useragent":null}`

func decode(t *testing.T, member string) *crawlrequest.Request {
	t.Helper()
	r, err := crawlrequest.Decode([]byte(member))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func encode(t *testing.T, r *crawlrequest.Request) map[string]string {
	t.Helper()
	b, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("Encode wrote %s: %v", b, err)
	}
	out := map[string]string{}
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

func TestEncodeKeepsUntouchedFieldsAsWrittenAndWritesChangedOnes(t *testing.T) {
	link := decode(t, seed).Follow("http://istresearch.com/about?x=<1>&y=2")
	got := encode(t, link)
	for field, want := range map[string]string{
		"url":      `"http://istresearch.com/about?x=<1>&y=2"`, // changed: written without HTML escapes
		"priority": `-9`, "curdepth": `1`,                      // changed
		"expires":          `1000000000000000000000000000000`, // beyond float64's digits, kept
		"domain_max_pages": `0`,                               // 0, not null, as written
		"allow_regex":      `["/a"]`, "attrs": `{"k":[1,2]}`, "useragent": `null`,
	} {
		if got[field] != want {
			t.Errorf("%s = %s, want %s", field, got[field], want)
		}
	}
	if v, ok := got["retry_times"]; ok {
		t.Errorf("retry_times = %s, want it left out: absent in the seed and still 0", v)
	}
	retried := link.Retry()
	if got := encode(t, retried); got["retry_times"] != "1" || got["priority"] != "-19" || got["curdepth"] != "1" {
		t.Errorf("retry wrote %v", got)
	}
	// A list changed in place is a change.
	link.AllowRegex[0] = "/b"
	if got := encode(t, link); got["allow_regex"] != `["/b"]` {
		t.Errorf("allow_regex = %s after changing it, want [\"/b\"]", got["allow_regex"])
	}
	link.Expires = 0
	if got := encode(t, link); got["expires"] != "0" {
		t.Errorf("expires = %s after setting 0, want 0", got["expires"])
	}
}

func TestEncodeWritesARequestBuiltInGoWithEveryField(t *testing.T) {
	r := &crawlrequest.Request{URL: "http://a.com/?q=1&r=<2>", AppID: "app", CrawlID: "c", SpiderID: "link", Priority: 5,
		MaxDepth: 1, Expires: 1.5, DenyExtensions: []string{}, Cookie: "k=\"v\"\u2028"}
	b, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"allow_regex":null,"allowed_domains":null,"appid":"app","attrs":null,"cookie":"k=\"v\"\u2028","crawlid":"c",` +
		`"curdepth":0,"deny_extensions":[],"deny_regex":null,"domain_max_pages":null,"expires":1.5,"maxdepth":1,` +
		`"priority":5,"retry_times":0,"spiderid":"link","url":"http://a.com/?q=1&r=<2>","useragent":null}`
	if string(b) != want {
		t.Fatalf("Encode =\n%s\nwant\n%s", b, want)
	}
}

func TestEncodeEscapesStringsAsEncodingJSONWithoutHTMLEscapes(t *testing.T) {
	for _, s := range []string{"", "plain", "quote\" back\\slash", "\x00\x01\b\f\n\r\t\x1f\x7f", "<>&", "é☃😀",
		"\u2028\u2029", "bad \xff utf-8 \xe2\x82", "\ufffd"} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		got := encode(t, &crawlrequest.Request{URL: s})["url"]
		if got != strings.TrimSuffix(want.String(), "\n") {
			t.Errorf("url %q written as %s, want %s", s, got, want.String())
		}
	}
}

func TestDecodeReadsTheMetaFormsOwnURLNotTheSeedsInMeta(t *testing.T) {
	r := decode(t, `{"url":"http://a.com/page","meta":{"url":"http://a.com/","appid":"app","crawlid":"c","priority":-9}}`)
	if r.URL != "http://a.com/page" {
		t.Fatalf("url %s, want the request's own http://a.com/page", r.URL)
	}
	if got := encode(t, r); got["url"] != `"http://a.com/page"` || got["priority"] != "-9" {
		t.Fatalf("written back as %v", got)
	}
}

func TestDecodeKeepsTheLastOfRepeatedKeysAndMetasFieldsOverTheTopLevels(t *testing.T) {
	for _, c := range []struct{ name, member, want string }{
		{"flat, repeated extra, a meta that is no object",
			`{"url":"u","appid":"a","crawlid":"c","x":1,"x":2,"meta":5,"priority":3,"priority":4}`,
			`{"appid":"a","crawlid":"c","priority":4,"spiderid":"link","url":"u","x":2}`},
		{"meta form: meta's fields, the top level's url and other fields, meta winning",
			`{"url":"u","method":"GET","x":1,"x":2,"priority":7,"meta":{"appid":"a","crawlid":"c","x":3,"y":4,"meta":5,"url":"seed"}}`,
			`{"appid":"a","crawlid":"c","method":"GET","spiderid":"link","url":"u","x":3,"y":4}`},
		{"meta form without a url of its own",
			`{"meta":{"appid":"a","crawlid":"c","url":"seed"},"z":"\u0041"}`,
			`{"appid":"a","crawlid":"c","z":"\u0041"}`},
	} {
		r, err := crawlrequest.Decode([]byte(c.member))
		if c.name == "meta form without a url of its own" {
			if err == nil || !strings.Contains(err.Error(), "no url") {
				t.Errorf("%s: %v, want no url", c.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := r.Encode()
		if err != nil || string(got) != c.want {
			t.Errorf("%s:\n%s\nwritten back as\n%s (%v), want\n%s", c.name, c.member, got, err, c.want)
		}
	}
}

func TestFollowAndRetryDeriveRequestsAsTheOriginalsCrawlers(t *testing.T) {
	r := decode(t, seed)
	r.RetryTimes = 2
	c := r.Follow("http://istresearch.com/about")
	if c.URL != "http://istresearch.com/about" || c.Priority != -9 || c.CurDepth != 1 || c.RetryTimes != 0 || c.CrawlID != "ABC123" {
		t.Fatalf("follow %+v", c)
	}
	c.AllowRegex[0] = "changed"
	c.Attrs[0] = '['
	if r.AllowRegex[0] != "/a" || r.Attrs[0] != '{' {
		t.Fatal("Follow shares the parent's slices")
	}
	if rt := r.Retry(); rt.RetryTimes != 3 || rt.Priority != -9 || rt.URL != r.URL {
		t.Fatalf("retry %+v", rt)
	}
	r.Expires = float64(time.Now().Add(-time.Second).Unix())
	if !r.Expired(time.Now()) {
		t.Fatal("not expired")
	}
	if r.Score() != -1 {
		t.Fatalf("score %v, want -1", r.Score())
	}
}

func TestSetExtraAddsAFieldAndRefusesKnownOnesAndBadJSON(t *testing.T) {
	r := decode(t, seed)
	if err := r.SetExtra("step", json.RawMessage(`4`)); err != nil {
		t.Fatal(err)
	}
	if got := encode(t, r); got["step"] != "4" {
		t.Fatalf("step = %s", got["step"])
	}
	clone := r.Clone()
	if err := clone.SetExtra("step", json.RawMessage(`5`)); err != nil {
		t.Fatal(err)
	}
	if v, _ := r.Extra("step"); string(v) != "4" {
		t.Fatalf("the clone's SetExtra changed the original: %s", v)
	}
	if v, ok := clone.ExtraText("step"); v != "5" || !ok {
		t.Fatalf("ExtraText(step) = %q, %v; want 5, true", v, ok)
	}
	if v, ok := clone.ExtraText("absent"); v != "" || ok {
		t.Fatalf("ExtraText(absent) = %q, %v; want nothing", v, ok)
	}
	for _, bad := range []struct{ name, raw string }{{"priority", "1"}, {"meta", "{}"}, {"x", "{"}, {"x", ""}, {"x", "1 2"}} {
		if err := r.SetExtra(bad.name, json.RawMessage(bad.raw)); err == nil {
			t.Errorf("SetExtra(%s, %q) accepted", bad.name, bad.raw)
		}
	}
}

func TestEncodeRefusesAttrsThatAreNotJSON(t *testing.T) {
	r := &crawlrequest.Request{URL: "http://a.com", AppID: "a", CrawlID: "c", Attrs: json.RawMessage(`{"a":`)}
	if _, err := r.Encode(); err == nil || !strings.Contains(err.Error(), "attrs") {
		t.Fatalf("Encode = %v, want an error about attrs", err)
	}
}

// HeldBytes is an estimate that errs high: a page's follow-ups, as
// Follow makes them from a decoded request with lists, attrs and extra
// fields, hold no more memory than their HeldBytes add up to.
func TestHeldBytesIsAtLeastWhatFollowUpsAllocate(t *testing.T) {
	member := []byte(`{"url":"http://example.com/a","appid":"app","crawlid":"c1","spiderid":"link","priority":1,"maxdepth":3,` +
		`"allow_regex":["/page/","/item/"],"deny_regex":["/private/"],"allowed_domains":["example.com"],` +
		`"attrs":{"customer":"acme","tags":["x","y","z"]},"ts":1795941519.96658,"referer":"http://example.com/","useragent":"bot/1.0"}`)
	page, err := crawlrequest.Decode(member)
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("http://example.com/page/%d/item/%d", i, i*7)
	}
	reqs := make([]*crawlrequest.Request, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range reqs {
		reqs[i] = page.Follow(urls[i])
	}
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	var estimated uint64
	for _, r := range reqs {
		estimated += uint64(r.HeldBytes())
	}
	if estimated < allocated {
		t.Fatalf("%d follow-ups allocated %d bytes, HeldBytes adds up to %d", n, allocated, estimated)
	}
	if estimated > 4*allocated {
		t.Errorf("%d follow-ups allocated %d bytes, HeldBytes adds up to %d: more than 4 times", n, allocated, estimated)
	}
	t.Logf("%d follow-ups: %d bytes allocated, %d estimated (%d a request)", n, allocated, estimated, estimated/n)
}
