package wandering_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spiders/wandering"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
)

const page = `<a href="/a">A</a><a href="/b">B</a><a href="/c">C</a><a href="http://elsewhere.org/">X</a><a href="/d.pdf">D</a>`

// followed are the links of page the filters allow, in order.
var followed = []string{"http://example.com/a", "http://example.com/b", "http://example.com/c"}

func respond(t *testing.T, member string, body string) *spider.Response {
	t.Helper()
	req, err := crawlrequest.Decode([]byte(member))
	if err != nil {
		t.Fatal(err)
	}
	return &spider.Response{
		Request: req, URL: req.URL, Status: 200,
		Header: http.Header{"Content-Type": {"text/html"}},
		Body:   []byte(body),
	}
}

const seed = `{"url":"http://example.com/","appid":"app","crawlid":"w1","spiderid":"wandering","priority":7,"maxdepth":0,` +
	`"allowed_domains":["example.com"],"attrs":null,"useragent":"ua"}`

func attrs(t *testing.T, p *spider.Page) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(p.Attrs, &m); err != nil {
		t.Fatalf("attrs %s: %v", p.Attrs, err)
	}
	return m
}

func TestTheWanderingSpiderIsRegistered(t *testing.T) {
	s, err := spider.New("wandering")
	if err != nil || s.Name() != "wandering" {
		t.Fatalf("spider.New(wandering) = %v, %v", s, err)
	}
}

func TestASeedIsStepZeroAndOneLinkIsFollowed(t *testing.T) {
	s := &wandering.Spider{Choose: func(n int) int {
		if n != len(followed) {
			t.Errorf("choosing among %d links, want %d", n, len(followed))
		}
		return 1
	}}
	out, err := s.Parse(context.Background(), respond(t, seed, page))
	if err != nil {
		t.Fatal(err)
	}
	p := out.Pages[0]
	if !reflect.DeepEqual(attrs(t, p), map[string]any{"step": 0.0}) || len(p.Links) != 0 || p.Links == nil {
		t.Fatalf("page attrs %s, links %v", p.Attrs, p.Links)
	}
	if len(out.Requests) != 1 {
		t.Fatalf("%d requests", len(out.Requests))
	}
	next := out.Requests[0]
	// maxdepth 0 does not stop a wanderer; priority and depth stay.
	if next.URL != followed[1] || next.Priority != 7 || next.CurDepth != 0 || next.SpiderID != "wandering" ||
		next.AppID != "app" || next.CrawlID != "w1" || next.UserAgent != "ua" || wandering.Step(next) != 1 || next.Attrs != nil {
		t.Fatalf("next request %+v, step %d", next, wandering.Step(next))
	}
	b, err := next.Encode()
	if err != nil || !strings.Contains(string(b), `"step":1`) {
		t.Fatalf("encoded %s, %v", b, err)
	}
}

func TestTheStepCountsHopsAndKeepsTheUsersAttrs(t *testing.T) {
	member := strings.Replace(seed, `"attrs":null`, `"attrs":{"mine":[1,2],"step":99},"step":3`, 1)
	s := &wandering.Spider{Choose: func(int) int { return 0 }}
	out, err := s.Parse(context.Background(), respond(t, member, page))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"mine": []any{1.0, 2.0}, "step": 3.0}
	if got := attrs(t, out.Pages[0]); !reflect.DeepEqual(got, want) {
		t.Fatalf("attrs %v", got)
	}
	next := out.Requests[0]
	if wandering.Step(next) != 4 || string(next.Attrs) != `{"mine":[1,2],"step":99}` {
		t.Fatalf("next step %d, attrs %s", wandering.Step(next), next.Attrs)
	}
	// The next hop reads its step back.
	out2, err := s.Parse(context.Background(), &spider.Response{Request: next, URL: next.URL, Status: 200,
		Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(page)})
	if err != nil || attrs(t, out2.Pages[0])["step"] != 4.0 || wandering.Step(out2.Requests[0]) != 5 {
		t.Fatalf("second hop: %v, %s", err, out2.Pages[0].Attrs)
	}
}

func TestTheOriginalsSerializedRequestKeepsItsStep(t *testing.T) {
	member := `{"url":"http://example.com/x","callback":"parse","meta":{"appid":"app","crawlid":"w1","spiderid":"wandering",` +
		`"priority":1,"curdepth":0,"maxdepth":0,"attrs":{"step":5},"step":6}}`
	out, err := (&wandering.Spider{}).Parse(context.Background(), respond(t, member, page))
	if err != nil || attrs(t, out.Pages[0])["step"] != 6.0 || wandering.Step(out.Requests[0]) != 7 {
		t.Fatalf("%v, attrs %s", err, out.Pages[0].Attrs)
	}
}

func TestAPageWithoutLinksEndsTheWalk(t *testing.T) {
	out, err := (&wandering.Spider{}).Parse(context.Background(), respond(t, seed, `<p>dead end <a href="mailto:x@y.z">x</a></p>`))
	if err != nil || len(out.Pages) != 1 || len(out.Requests) != 0 {
		t.Fatalf("%d pages, %d requests, %v", len(out.Pages), len(out.Requests), err)
	}
}

func TestTheLinkIsChosenAtRandom(t *testing.T) {
	s := &wandering.Spider{}
	seen := map[string]int{}
	for range 300 {
		out, err := s.Parse(context.Background(), respond(t, seed, page))
		if err != nil || len(out.Requests) != 1 {
			t.Fatalf("%d requests, %v", len(out.Requests), err)
		}
		seen[out.Requests[0].URL]++
	}
	for _, u := range followed {
		if seen[u] == 0 { // each has a (2/3)^300 chance of never coming up
			t.Errorf("%s never chosen: %v", u, seen)
		}
	}
	if len(seen) != len(followed) {
		t.Errorf("chose outside the allowed links: %v", seen)
	}
}

func TestAttrsThatAreNotAnObjectArePublishedUnchanged(t *testing.T) {
	member := strings.Replace(seed, `"attrs":null`, `"attrs":[1,2]`, 1)
	out, err := (&wandering.Spider{}).Parse(context.Background(), respond(t, member, page))
	if err != nil || string(out.Pages[0].Attrs) != `[1,2]` {
		t.Fatalf("attrs %s, %v", out.Pages[0].Attrs, err)
	}
}

func TestAnInvalidRegexIsAnErrorButThePageIsPublished(t *testing.T) {
	member := strings.Replace(seed, `"attrs":null`, `"attrs":null,"deny_regex":["[z-a]"]`, 1)
	out, err := (&wandering.Spider{}).Parse(context.Background(), respond(t, member, page))
	if err == nil || !strings.Contains(err.Error(), "deny_regex") || len(out.Pages) != 1 || len(out.Requests) != 0 {
		t.Fatalf("%d pages, %d requests, %v", len(out.Pages), len(out.Requests), err)
	}
}
