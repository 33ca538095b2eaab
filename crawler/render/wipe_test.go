package render_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/render"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
)

// leaverSite serves /leaver, a page that keeps trying to leave state
// after it was rendered: a timer and an interval, its pagehide, unload,
// beforeunload and visibilitychange handlers (each writes a cookie, local
// and session storage) and a request answered late with a Set-Cookie (held
// until the next page, /check, is asked for); and /check, a page that
// waits until that late answer was given (or its request ended) before it
// writes what it finds (cookies, local and session storage) into
// #found. The site records the Cookie header of every request.
type leaverSite struct {
	*httptest.Server
	checkAsked chan struct{} // closed when /check is asked for
	lateDone   chan struct{} // closed when /late answered or its request ended
	once       sync.Once
	mu         sync.Mutex
	cookies    []string // "path: Cookie header" of the requests that had one
}

func startLeaverSite(t *testing.T) *leaverSite {
	s := &leaverSite{checkAsked: make(chan struct{}), lateDone: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/leaver", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!DOCTYPE html><html><body><p id="leaver">leaver</p><script>
function leave(tag) {
  document.cookie = tag + "=left; path=/";
  try { localStorage.setItem(tag, "left"); sessionStorage.setItem(tag, "left"); } catch (e) {}
}
setTimeout(function () { leave("timer"); }, 300);
setInterval(function () { leave("interval"); }, 20);
addEventListener("pagehide", function () { leave("pagehide"); });
addEventListener("unload", function () { leave("unload"); });
addEventListener("beforeunload", function () { leave("beforeunload"); });
document.addEventListener("visibilitychange", function () { leave("visibilitychange"); });
fetch("/late").catch(function () {});
</script></body></html>`)
	})
	mux.HandleFunc("/late", func(w http.ResponseWriter, r *http.Request) {
		defer s.once.Do(func() { close(s.lateDone) })
		select {
		case <-s.checkAsked:
			http.SetCookie(w, &http.Cookie{Name: "late", Value: "left", Path: "/"})
			fmt.Fprint(w, "late")
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	})
	mux.HandleFunc("/check", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-s.checkAsked:
		default:
			close(s.checkAsked)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!DOCTYPE html><html><body><script>
fetch("/after").then(function () {}, function () {}).then(function () {
  var keys = function (st) { var out = []; for (var i = 0; i < st.length; i++) { out.push(st.key(i)); } return out.sort().join(","); };
  var pre = document.createElement("pre");
  pre.id = "found";
  pre.textContent = "cookie=" + document.cookie + ";local=" + keys(localStorage) + ";session=" + keys(sessionStorage);
  document.body.appendChild(pre);
});
</script></body></html>`)
	})
	mux.HandleFunc("/after", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-s.lateDone:
		case <-time.After(30 * time.Second):
		}
		fmt.Fprint(w, "after")
	})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c := r.Header.Get("Cookie"); c != "" {
			s.mu.Lock()
			s.cookies = append(s.cookies, r.URL.Path+": "+c)
			s.mu.Unlock()
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// A page of another crawl finds nothing that the page before it in the
// tab left after it was rendered: not what its timers and handlers
// (pagehide, unload, beforeunload, visibilitychange) wrote when it was
// left, nor the cookie of a request of its that was answered later.
func TestAPageLeavesNothingForTheNextCrawlsPageAfterItWasRendered(t *testing.T) {
	for _, sessions := range [][2]string{{"a", "b"}, {"", ""}} {
		t.Run(fmt.Sprintf("sessions %q then %q", sessions[0], sessions[1]), func(t *testing.T) {
			s := startLeaverSite(t)
			p := newPool(t, render.Config{Concurrency: 1, Block: render.DefaultBlock})
			if _, err := p.Render(context.Background(), render.Request{URL: s.URL + "/leaver", Spec: defaultSpec, Session: sessions[0]}, 1<<20); err != nil {
				t.Fatal(err)
			}
			spec := crawlrequest.RenderSpec{Timeout: 60 * time.Second, WaitFor: "#found"}
			res, err := p.Render(context.Background(), render.Request{URL: s.URL + "/check", Spec: spec, Session: sessions[1]}, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if want := `<pre id="found">cookie=;local=;session=</pre>`; !strings.Contains(string(res.Body), want) {
				t.Errorf("the next page found what the leaver left (want %s):\n%s", want, res.Body)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, c := range s.cookies {
				if !strings.HasPrefix(c, "/late:") && !strings.HasPrefix(c, "/leaver:") {
					t.Errorf("sent a cookie the leaver left: %s", c)
				}
			}
		})
	}
}

// The browser's HTTP cache is off: a page and its script, both cacheable
// for an hour, are fetched from the site at each render, of the same
// crawl or another.
func TestRenderedPagesAreNeverServedFromTheCache(t *testing.T) {
	var mu sync.Mutex
	hits := map[string]int{}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		w.Header().Set("Cache-Control", "public, max-age=3600")
		switch r.URL.Path {
		case "/cacheable.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, `document.getElementById("out").textContent = "script ran";`)
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!DOCTYPE html><html><body><p id="out"></p><script src="/cacheable.js"></script></body></html>`)
		}
	}))
	t.Cleanup(site.Close)
	p := newPool(t, render.Config{Concurrency: 1, Block: render.DefaultBlock})
	for i, session := range []string{"a", "a", "b", ""} {
		res, err := p.Render(context.Background(), render.Request{URL: site.URL + "/cacheable", Spec: defaultSpec, Session: session}, 1<<20)
		if err != nil {
			t.Fatalf("render %d: %v", i, err)
		}
		if !strings.Contains(string(res.Body), `<p id="out">script ran</p>`) || res.Status != http.StatusOK ||
			res.Header.Get("Cache-Control") != "public, max-age=3600" {
			t.Errorf("render %d: status %d, headers %v, body:\n%s", i, res.Status, res.Header, res.Body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if hits["/cacheable"] != 4 || hits["/cacheable.js"] != 4 {
		t.Errorf("the site was asked %v, want each path 4 times", hits)
	}
}

// A page cannot open windows: window.open from its scripts is refused, so
// no popup outlives its page and no popup's request reaches a site. A
// popup would belong to no render: nobody would wipe or close it between
// crawls. Both kinds of browser refuse it in their own way: the headless
// shell (the default) and Chromium's headless mode, when installed.
func TestAPageCannotOpenAWindow(t *testing.T) {
	browsers := []string{""} // the default search: the headless shell
	if _, err := exec.LookPath("chromium"); err == nil {
		browsers = append(browsers, "chromium")
	}
	for _, browser := range browsers {
		name := browser
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			t.Setenv("RENDER_BROWSER", browser)
			pageCannotOpenAWindow(t)
		})
	}
}

func pageCannotOpenAWindow(t *testing.T) {
	var mu sync.Mutex
	opened := 0
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Path == "/opened" {
			mu.Lock()
			opened++
			mu.Unlock()
			fmt.Fprint(w, `<!DOCTYPE html><html><body>opened</body></html>`)
			return
		}
		fmt.Fprint(w, `<!DOCTYPE html><html><body><p id="out"></p><script>
var w = window.open("/opened", "_blank");
document.getElementById("out").textContent = w ? "opened" : "refused";
</script></body></html>`)
	}))
	t.Cleanup(site.Close)
	p := newPool(t, render.Config{Concurrency: 1, Block: render.DefaultBlock})
	res, err := p.Render(context.Background(), render.Request{URL: site.URL + "/opener", Spec: defaultSpec}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Body), `<p id="out">refused</p>`) {
		t.Errorf("window.open was not refused:\n%s", res.Body)
	}
	// The second render runs in the same browser after the first: a popup
	// the first opened would have asked for /opened by the time it is done.
	if _, err := p.Render(context.Background(), render.Request{URL: site.URL + "/opener", Spec: defaultSpec, Session: "other"}, 1<<20); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if opened != 0 {
		t.Errorf("a popup asked the site for /opened %d times", opened)
	}
}
