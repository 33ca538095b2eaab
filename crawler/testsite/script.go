package testsite

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// The script pages, for rendering (see the package doc's "Script pages").
const (
	// ScriptPrefix is the path of the script pages: /js/<n>.
	ScriptPrefix = "/js/"
	// ScriptAssets are what a script page asks for and a rendering crawler
	// blocks by default (RENDER_BLOCK image, media, font): the site
	// records a hit if one is ever requested.
	ScriptImage = "/js-asset/pixel.png"
	ScriptMedia = "/js-asset/clip.mp4"
	ScriptFont  = "/js-asset/font.woff2"
)

// ScriptText is the text the script of /js/<n> writes into its page (the
// page's HTML does not hold it: the script puts it together), and
// ScriptElement the element it is in, as a rendered DOM has it.
func ScriptText(n int) string { return fmt.Sprintf("Written by script on page %d", n) }

// ScriptElement is ScriptText(n) in its element, as a rendered DOM has it.
func ScriptElement(n int) string { return `<p id="js-text">` + ScriptText(n) + `</p>` }

// ScriptLinks are the paths the script of /js/<n> links to: /js/<2n+1> and
// /js/<2n+2> (a binary tree). The page's HTML itself has no link.
func ScriptLinks(n int) []string {
	return []string{ScriptPrefix + strconv.Itoa(2*n+1), ScriptPrefix + strconv.Itoa(2*n+2)}
}

// scriptPage answers /js/<n>: an HTML page with no links whose script
// writes ScriptText(n), links to ScriptLinks(n), an image, a video and
// text in a web font; with ?fetch=<url>, it also fetches url (a request an
// address guard may refuse) and writes what came back into #fetched; with
// ?remember=<word>, it writes what an earlier page left (its cookie, local
// and session storage) into #remembered, then leaves word in all three and
// writes what it reads back into #stored.
func (s *Site) scriptPage(w http.ResponseWriter, r *http.Request) bool {
	n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, ScriptPrefix))
	if !strings.HasPrefix(r.URL.Path, ScriptPrefix) || err != nil || n < 0 || n > 1<<30 {
		return false
	}
	fetchURL, remember := r.URL.Query().Get("fetch"), r.URL.Query().Get("remember")
	w.Header().Set("Content-Type", htmlType)
	w.Header().Set("X-Script-Page", strconv.Itoa(n))
	fmt.Fprintf(w, `<!DOCTYPE html>
<html><head><title>Script page %d</title>
<style>@font-face { font-family: "T"; src: url(%q); } #app p { font-family: "T", serif; }</style>
</head><body><div id="app"></div>
<script>
(function () {
  var app = document.getElementById("app");
  var p = document.createElement("p");
  p.id = "js-text";
  p.textContent = "Written by " + "script on page " + %d;
  app.appendChild(p);
  var links = %s;
  for (var i = 0; i < links.length; i++) {
    var a = document.createElement("a");
    a.setAttribute("hr" + "ef", links[i]);
    a.textContent = "next " + i;
    app.appendChild(a);
  }
  var img = document.createElement("img");
  img.src = %q;
  app.appendChild(img);
  var v = document.createElement("video");
  v.src = %q;
  v.preload = "auto";
  app.appendChild(v);
  var to = %q;
  if (to) {
    var out = document.createElement("pre");
    out.id = "fetched";
    app.appendChild(out);
    fetch(to).then(function (r) { return r.text(); }).then(function (t) { out.textContent = "got: " + t; },
      function (e) { out.textContent = "failed: " + e; });
  }
  var word = %q;
  if (word) {
    var found = function () {
      return "cookie=" + document.cookie + ";local=" + localStorage.getItem("remember") +
        ";session=" + sessionStorage.getItem("remember");
    };
    var before = document.createElement("pre");
    before.id = "remembered";
    before.textContent = found();
    app.appendChild(before);
    document.cookie = "remember=" + word + "; path=/";
    localStorage.setItem("remember", word);
    sessionStorage.setItem("remember", word);
    var after = document.createElement("pre");
    after.id = "stored";
    after.textContent = found();
    app.appendChild(after);
  }
  var done = document.createElement("span");
  done.id = "done";
  app.appendChild(done);
})();
</script></body></html>
`, n, ScriptFont, n, jsArray(ScriptLinks(n)), ScriptImage, ScriptMedia, fetchURL, remember)
	return true
}

func jsArray(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ",") + "]"
}
