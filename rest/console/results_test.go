package console

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func seqs(rs []Result) []uint64 {
	out := []uint64{}
	for _, r := range rs {
		out = append(out, r.Seq)
	}
	return out
}

func TestTheBufferKeepsTheNewestResultsInOrder(t *testing.T) {
	b := newResults(4)
	for i := range 6 {
		b.add(Result{URL: fmt.Sprint("http://x/", i), CrawlID: []string{"a", "b"}[i%2]})
	}
	tests := []struct {
		name  string
		after uint64
		f     filter
		limit int
		want  []uint64
	}{
		{"everything kept", 0, filter{}, 10, []uint64{3, 4, 5, 6}},
		{"after an id", 4, filter{}, 10, []uint64{5, 6}},
		{"after an id that was overwritten", 1, filter{}, 10, []uint64{3, 4, 5, 6}},
		{"the newest up to a limit", 0, filter{}, 3, []uint64{4, 5, 6}},
		{"one crawl", 0, filter{CrawlID: "a"}, 10, []uint64{3, 5}},
		{"an app nobody used", 0, filter{AppID: "z"}, 10, []uint64{}},
		{"after the newest", 6, filter{}, 10, []uint64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := seqs(b.since(tt.after, tt.f, tt.limit)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("since(%d) = %v, want %v", tt.after, got, tt.want)
			}
		})
	}
}

func TestAStreamGetsWhatFollowsItsBacklogAndIsDroppedWhenItFallsBehind(t *testing.T) {
	b := newResults(10)
	b.add(Result{URL: "http://x/1", CrawlID: "a"})
	backlog, s := b.follow(0, filter{CrawlID: "a"}, 10)
	if got := seqs(backlog); !reflect.DeepEqual(got, []uint64{1}) {
		t.Fatalf("backlog %v, want [1]", got)
	}
	b.add(Result{URL: "http://x/2", CrawlID: "b"}) // filtered out
	b.add(Result{URL: "http://x/3", CrawlID: "a"})
	if r := <-s.c; r.Seq != 3 {
		t.Fatalf("the stream got %d, want 3", r.Seq)
	}
	// Nobody reads: add never blocks, and drops the stream once it is full.
	for range subBuffer + 1 {
		b.add(Result{URL: "http://x/n", CrawlID: "a"})
	}
	n := 0
	for range s.c {
		n++
	}
	if n != subBuffer {
		t.Errorf("the dropped stream held %d results, want %d", n, subBuffer)
	}
	if _, streams, dropped := b.counts(); streams != 0 || dropped != 1 {
		t.Errorf("%d streams and %d dropped, want 0 and 1", streams, dropped)
	}
	b.unfollow(s) // after a drop: nothing to do, no panic
}

func TestParseResultKeepsOnlyTheSmallFieldsCut(t *testing.T) {
	long := "http://x/" + strings.Repeat("é", maxURL)
	r, ok := parseResult([]byte(`{"url": "` + long + `", "status_code": 404, "appid": "app", "crawlid": "c1",
		"timestamp": "2026-01-01T00:00:00", "body": "` + strings.Repeat("x", 100000) + `"}`))
	if !ok {
		t.Fatal("a crawl result was not read")
	}
	if len(r.URL) > maxURL || !strings.HasPrefix(long, r.URL) || !strings.HasSuffix(r.URL, "é") {
		t.Errorf("the URL was not cut at %d bytes on a rune boundary: %d bytes", maxURL, len(r.URL))
	}
	if r.StatusCode != 404 || r.AppID != "app" || r.CrawlID != "c1" || r.Timestamp != "2026-01-01T00:00:00" {
		t.Errorf("fields read wrong: %+v", r)
	}
	for _, bad := range []string{`not json`, `{"status_code": 200}`, `[1]`, `{"url": 5}`} {
		if _, ok := parseResult([]byte(bad)); ok {
			t.Errorf("%s read as a result", bad)
		}
	}
}

func TestResultsAreShownNewestFirstByTheirTime(t *testing.T) {
	rs := []Result{
		{Seq: 1, Timestamp: "2026-01-01T10:00:00.886000"},
		{Seq: 2, Timestamp: "2026-01-01T10:00:00.874000"},
		{Seq: 3, Timestamp: "2026-01-01T10:00:01.001000"},
		{Seq: 4, Timestamp: "2026-01-01T10:00:00.886000"},
	}
	newestFirst(rs)
	var got []uint64
	for _, r := range rs {
		got = append(got, r.Seq)
	}
	if want := []uint64{3, 4, 1, 2}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}
