package console

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

// view is what every page template gets.
type view struct {
	Title string
	// Nav is the navigation bar, with the page's entry current.
	Nav []navEntry
	// Refresh is how often the page's content reloads itself, in
	// seconds; 0 never.
	Refresh int
	// Flash is the answer to the change the page was posted for.
	Flash *flash
	State State
	Now   time.Time
	Data  any
}

// flash is the outcome of a change made from a page.
type flash struct {
	OK      bool
	Title   string
	Message string
	// Answer is the API's answer, indented, when there is one.
	Answer string
	// PollID is set when the answer came too late; the API console polls it.
	PollID string
}

// flashFrom describes an API answer to a change called what.
func flashFrom(what string, a apiAnswer) *flash {
	f := &flash{OK: a.OK, Title: what, Answer: a.Pretty(), PollID: a.PollID()}
	switch {
	case f.PollID != "":
		f.Message = "Sent. The answer did not come in time; it is kept for /poll under " + f.PollID + "."
		f.Answer = ""
	case a.OK:
		f.Message = "Sent."
		if len(a.Data) == 0 {
			f.Answer = ""
		}
	default:
		f.Message = strings.TrimSpace(a.Message + " " + a.Cause)
	}
	return f
}

var funcs = template.FuncMap{
	"num":     formatNumber,
	"ago":     ago,
	"seconds": formatSeconds,
	"epoch":   epochTime,
	"pct":     percent,
	"add":     func(a, b int) int { return a + b },
	"float":   func(n int) float64 { return float64(n) },
}

// navEntry is a page's entry in the navigation bar.
type navEntry struct {
	Path, Label string
	Current     bool
}

// navBars are the navigation bars by page name: the entries of pages,
// each page's own (or the one it is under) current.
func navBars() map[string][]navEntry {
	bars := map[string][]navEntry{}
	for _, page := range pages {
		current := page.name
		if page.under != "" {
			current = page.under
		}
		var nav []navEntry
		for _, p := range pages {
			if p.nav != "" {
				nav = append(nav, navEntry{Path: p.path, Label: p.nav, Current: p.name == current})
			}
		}
		bars[page.name] = nav
	}
	return bars
}

// parseTemplates parses the template of every page in pages and the
// not-found page's, each with layout.html around its "content".
func parseTemplates() (map[string]*template.Template, error) {
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("console templates: %w", err)
	}
	tmpl := map[string]*template.Template{}
	names := []string{notFoundPage}
	for _, p := range pages {
		if p.name != "" {
			names = append(names, p.name)
		}
	}
	for _, name := range names {
		t, err := template.Must(layout.Clone()).ParseFS(templateFS, "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console templates: %w", err)
		}
		tmpl[name] = t
	}
	return tmpl, nil
}

// partialHeader asks for a page's content alone: the console's script
// refreshes a page with it.
const partialHeader = "X-Console-Partial"

// render writes a page: the whole document, or its content alone when the
// console's script asks to refresh it. The page is built in memory first,
// so a template error is a clean 500.
func (c *Console) render(w http.ResponseWriter, r *http.Request, code int, name, title string, data any, opts ...func(*view)) {
	v := view{Title: title, Nav: c.nav[name], State: c.state(), Now: time.Now(), Data: data}
	for _, o := range opts {
		o(&v)
	}
	tmpl := "layout.html"
	if r.Header.Get(partialHeader) != "" {
		tmpl = "content"
	}
	var buf bytes.Buffer
	if err := c.tmpl[name].ExecuteTemplate(&buf, tmpl, v); err != nil {
		c.log.Error("Console: failed to render a page", logfactory.Extra{"page": name, "error": err.Error()})
		http.Error(w, "The console failed to render this page.", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

// refreshing makes the page reload its content every UI_REFRESH seconds.
func (c *Console) refreshing(v *view) { v.Refresh = int(math.Ceil(c.refresh.Seconds())) }

func withFlash(f *flash) func(*view) { return func(v *view) { v.Flash = f } }

// formatNumber writes an integer with thin separators: 12 345 678.
func formatNumber(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteString("\u202f")
		}
		b.WriteRune(r)
	}
	return b.String()
}

// formatSeconds writes a duration in seconds as 3h 04m, 4m 05s or 7s.
func formatSeconds(sec float64) string {
	if sec < 0 || math.IsNaN(sec) {
		return "–"
	}
	d := time.Duration(sec) * time.Second
	switch {
	case d >= 24*time.Hour:
		return fmt.Sprintf("%dd %02dh", int(d.Hours())/24, int(d.Hours())%24)
	case d >= time.Hour:
		return fmt.Sprintf("%dh %02dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		return fmt.Sprintf("%dm %02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%ds", int(d.Seconds()))
}

// ago writes how long before now an epoch time was.
func ago(now time.Time, epoch float64) string {
	if epoch <= 0 {
		return "–"
	}
	return formatSeconds(float64(now.UnixNano())/1e9-epoch) + " ago"
}

// epochTime writes epoch seconds as a UTC time.
func epochTime(epoch float64) string {
	if epoch <= 0 {
		return "–"
	}
	return time.Unix(0, int64(epoch*1e9)).UTC().Format("2006-01-02 15:04:05 UTC")
}

// percent is part of whole in percent, 0 when whole is 0.
func percent(part, whole int64) string {
	if whole <= 0 {
		return "0"
	}
	return strconv.FormatFloat(100*float64(part)/float64(whole), 'f', 0, 64)
}
