package extract_test

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/extract"
)

// dumpTree writes every field of every node of a tree, in order.
func dumpTree(n *html.Node) string {
	var b strings.Builder
	var walk func(n *html.Node, depth int)
	walk = func(n *html.Node, depth int) {
		fmt.Fprintf(&b, "%s%d %d %q %q %q\n", strings.Repeat(" ", depth), n.Type, n.DataAtom, n.Data, n.Namespace, n.Attr)
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Parent != n {
				b.WriteString("bad parent\n")
			}
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	return b.String()
}

// sameTree reports how buildTree's tree of src differs from html.Parse's:
// "" when it is the same or buildTree gave up (unsure).
func sameTree(t testing.TB, src string) (differs string, built bool) {
	want, err := html.Parse(strings.NewReader(src))
	got, release, ferr := extract.BuildTree(src)
	defer release()
	if ferr != nil {
		return "", false
	}
	if err != nil {
		return fmt.Sprintf("html.Parse failed (%v), buildTree did not", err), true
	}
	if g, w := dumpTree(got), dumpTree(want); g != w {
		return fmt.Sprintf("buildTree:\n%s\nhtml.Parse:\n%s", g, w), true
	}
	return "", true
}

// fastPages are pages buildTree must build itself: what sites commonly
// serve, and the test site's pages.
var fastPages = map[string]string{
	"testsite page": "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Page 1.2</title></head>\n<body id=\"top\">\n" +
		"<h1>Page 1.2</h1>\n<p>A tree page at level 2.</p>\n<ul>\n<li><a href=\"/page/1/2/1\">/page/1/2/1</a></li>\n" +
		"<li><a href=\"/page/1/2/2\">/page/1/2/2</a></li>\n</ul>\n</body></html>\n",
	"no skeleton":   "<title>x</title><p>one<p>two<ul><li>a<li>b</ul><dl><dt>t<dd>d<dt>u</dl>",
	"text only":     "just text & more &amp; &lt;tags&gt; &copy 2024 &notit; &#169; &#xA9;",
	"empty":         "",
	"whitespace":    " \n\t ",
	"implied p end": "<p>a<div>b</div><p>c<h2>d</h2><p>e<hr>f<p>g<pre>\nh</pre><p>i</p></p>",
	"attributes": `<!doctype html><a HREF="/x?a=1&amp;b=2&c=3&copy=4&copy;&notin &notit;&amp" class='c d' ID=plain data-x = "y" checked>` +
		`link</a><img src=/i.png alt=""/><input disabled value="a&#39;b&#x27;c&quot;"><br/>`,
	"formatting in order": "<p><b>bold <i>both</i></b> <em>em</em> <strong><a href=x>s</a></strong></p><b>1</b><b>2</b><b>3</b><b>4</b>",
	"comments":            "<!-- before --><html><!-- in html --><head><!-- head --></head><body><!-- body -->x<!-- a --- b --></body><!-- after body --></html><!-- end -->",
	"raw text": "<head><script>if (a < b && c > d) { x = '</p>' }</script><style>p > a { color: red }</style>" +
		"<title>A &amp; B</title><noscript><img src=x></noscript></head><body><textarea>\nline &amp; </textarea>" +
		"<iframe><p>not a tag</iframe><xmp><b></xmp><script type=\"application/ld+json\">{\"a\": \"</b>\"}</script></body>",
	"crlf":          "<p class=\"a\r\nb\">line\r\nline\rline</p>\r\n",
	"stray ends":    "<div>a</span></em>b</div></p><p>c</li></dd></h3></form></div>",
	"unknown tags":  "<custom-el x=1><sub-el>t</sub-el></custom-el><Section><H1>T</H1></Section>",
	"after body":    "<html><body>x</body></html>\n\n<!-- c --> ",
	"text after":    "<html><body>x</body> y <p>z</html> w",
	"list nesting":  "<ul><li>a<ul><li>b<li>c</ul><li>d</ul><ol><li><p>e<li>f</ol>",
	"button":        "<button>a<button>b</button><p>x<button>y</p>",
	"form":          "<form action=/s><input name=q><form><p>in</form><p>after",
	"head elements": "<head><base href=/b/><link rel=x><meta name=d content=e></head><body><meta name=f><link rel=g>",
	"lt in text":    "a < b <3 <= c <",
	"pre newline":   "<pre>\n\nx</pre><listing>\ny</listing><textarea>\r\nz</textarea>",
}

// unsurePages are pages buildTree leaves to html.Parse.
var unsurePages = map[string]string{
	"table":           "<table><tr><td>x</td></tr></table>",
	"misnested":       "<b><i>x</b>y</i>",
	"reconstruct":     "<p><b>x</p>y",
	"svg":             "<svg><path d=x/></svg>",
	"nested a":        "<a href=1>x<a href=2>y</a>",
	"old doctype":     `<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01//EN"><p>x`,
	"unclosed script": "<script>var a = 1;",
	"escaped script":  "<script><!-- document.write('<script></script>') --></script>",
	"unclosed tag":    "<p class=\"x",
	"bogus comment":   "<?php echo 1 ?><p>x",
	"nul":             "<p>a\x00b</p>",
	"select":          "<select><option>a<option>b</select>",
	"template":        "<template><p>x</template>",
	"attrs not apart": `<a href="x"class="y">z</a>`,
	"deep":            strings.Repeat("<div>", 600) + "x",
	"noah":            "<b><b><b><b>x",
}

// treePages are the test pages buildTree builds, by name.
func treePages(t *testing.T) map[string]string {
	page, err := os.ReadFile("testdata/page.html")
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string]string{"testdata/page.html": string(page), "bench page": productPage(200 << 10)}
	for name, src := range fastPages {
		pages[name] = src
	}
	return pages
}

func TestTreeMatchesParse(t *testing.T) {
	for name, src := range treePages(t) {
		differs, built := sameTree(t, src)
		if !built {
			t.Errorf("%s: buildTree gave up", name)
		} else if differs != "" {
			t.Errorf("%s: %s", name, differs)
		}
	}
	for name, src := range unsurePages {
		if _, built := sameTree(t, src); built {
			t.Errorf("%s: buildTree built a tree, want it to give up", name)
		}
	}
}

// FuzzTree: whatever buildTree builds is html.Parse's tree.
func FuzzTree(f *testing.F) {
	for _, src := range fastPages {
		f.Add(src)
	}
	for _, src := range unsurePages {
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if differs, _ := sameTree(t, src); differs != "" {
			t.Fatalf("%q: %s", src, differs)
		}
	})
}

// copyingPage is a page most of whose tree's strings are the builder's
// own, not the page's: lower-cased tag names and attribute keys, decoded
// text and values, newlines normalised, text joined across comments, and a
// tag of more attributes than a block holds.
func copyingPage(items int) string {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html><TITLE>A &amp; B\r\n</TITLE><BODY CLASS=\"x&amp;y\">")
	for i := range items {
		fmt.Fprintf(&b, "<MY-TAG DATA-N=\"%d&lt;\" TITLE='t&quot;%d'>x &lt;%d&gt;\r\ny<!--c-->z%d</MY-TAG>", i, i, i, i)
	}
	b.WriteString("<p")
	for i := range 300 {
		fmt.Fprintf(&b, " A%d=\"v&amp;%d\"", i, i)
	}
	b.WriteString(">end</p>")
	return b.String()
}

// TestTreeSurvivesCollections: the tree's nodes live in memory the garbage
// collector does not scan (noscanBlock), so the strings the builder made
// must be kept alive by the builder until release. Trees of copyingPage
// are built and read while collections run back to back, with garbage
// written over whatever they free in between: a string the tree alone
// held would be freed and overwritten, and the tree would no longer be
// html.Parse's. The test then runs itself again with GOGC=1 and
// GODEBUG=gccheckmark=1,invalidptr=1 (the collector checking its marks and
// every pointer it meets).
func TestTreeSurvivesCollections(t *testing.T) {
	src := copyingPage(300)
	want, err := html.Parse(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	wantDump := dumpTree(want)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // collections back to back, and garbage over freed memory
		defer close(done)
		var junk []string
		for {
			select {
			case <-stop:
				return
			default:
			}
			runtime.GC()
			junk = junk[:0]
			for i := range 2000 {
				junk = append(junk, strings.Repeat("#", 1+i%64))
			}
		}
	}()
	defer func() { close(stop); <-done }()
	for round := range 30 {
		got, release, err := extract.BuildTree(src)
		if err != nil {
			t.Fatalf("round %d: buildTree gave up: %v", round, err)
		}
		runtime.GC()
		runtime.GC()
		if g := dumpTree(got); g != wantDump {
			release()
			t.Fatalf("round %d: the tree changed after collections:\n%.2000s", round, g)
		}
		release()
	}
	if os.Getenv("GODEBUG") == "" {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestTreeSurvivesCollections$", "-test.count", "1")
		cmd.Env = append(os.Environ(), "GOGC=1", "GODEBUG=gccheckmark=1,invalidptr=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("with GOGC=1 GODEBUG=gccheckmark=1,invalidptr=1: %v\n%s", err, out)
		}
	}
}
