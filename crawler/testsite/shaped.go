package testsite

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// The login /login accepts (a form POST of user and password), and the
// cookie it sets for /account/.
const (
	LoginUser     = "alice"
	LoginPassword = "secret"
	AuthCookie    = "auth"
	AuthValue     = "alice-token"
)

// AccountPages are the pages under /account/ a logged-in crawl finds from
// /account/ (itself included).
var AccountPages = []string{"/account/", "/account/1", "/account/2", "/account/3"}

// EchoPages is how deep the /echo/<n> pages link: /echo/0 .. /echo/EchoPages.
const EchoPages = 2

// shaped answers the pages for shaped requests and sessions (see the
// package doc); false for other paths.
func (s *Site) shaped(w http.ResponseWriter, r *http.Request) bool {
	path := r.URL.Path
	switch {
	case strings.HasPrefix(path, "/echo/"):
		n, err := strconv.Atoi(path[len("/echo/"):])
		if err != nil || n < 0 || n > EchoPages {
			return false
		}
		echoPage(w, r, n)
	case path == "/login":
		login(w, r)
	case path == "/logout":
		http.SetCookie(w, &http.Cookie{Name: AuthCookie, Value: "", Path: "/account", MaxAge: -1})
		http.Redirect(w, r, "/account/", http.StatusFound)
	case slices.Contains(AccountPages, path):
		account(w, r, path)
	default:
		return false
	}
	return true
}

// echoPage shows what the request carried: its method, body and headers,
// in elements an extraction rule can pick (#method, #body, and
// li.header[data-name] per header), and links to the next echo page.
func echoPage(w http.ResponseWriter, r *http.Request, n int) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html><head><title>Echo %d</title></head><body>\n", n)
	fmt.Fprintf(&b, "<pre id=\"method\">%s</pre>\n<pre id=\"body\">%s</pre>\n<ul>\n", html.EscapeString(r.Method), html.EscapeString(string(body)))
	names := make([]string, 0, len(r.Header))
	for name := range r.Header {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(&b, "<li class=\"header\" data-name=\"%s\">%s</li>\n", html.EscapeString(name), html.EscapeString(strings.Join(r.Header[name], ", ")))
	}
	b.WriteString("</ul>\n")
	if n < EchoPages {
		fmt.Fprintf(&b, "<a href=\"/echo/%d\">next</a>\n", n+1)
	}
	b.WriteString("</body></html>\n")
	w.Header().Set("Content-Type", htmlType)
	_, _ = io.WriteString(w, b.String())
}

// login takes a form POST of user and password: the right ones get the
// auth cookie (Path /account, HttpOnly), a Secure cookie an http crawl
// must not send back, an expired one, and a 303 to /account/; anything
// else a 401.
func login(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.ParseForm() != nil ||
		r.PostForm.Get("user") != LoginUser || r.PostForm.Get("password") != LoginPassword {
		w.Header().Set("Content-Type", htmlType)
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, "<!DOCTYPE html>\n<html><head><title>Login failed</title></head><body><h1>Login failed</h1></body></html>\n")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: AuthCookie, Value: AuthValue, Path: "/account", HttpOnly: true})
	http.SetCookie(w, &http.Cookie{Name: "secure_only", Value: "1", Path: "/", Secure: true})
	http.SetCookie(w, &http.Cookie{Name: "gone", Value: "1", Path: "/", MaxAge: -1})
	http.Redirect(w, r, "/account/", http.StatusSeeOther)
}

// account serves a page of the logged-in area: 403 without the auth
// cookie; with it a product page (h1.name, span.price, a JSON-LD block)
// linking to every account page.
func account(w http.ResponseWriter, r *http.Request, path string) {
	w.Header().Set("Content-Type", htmlType)
	if c, err := r.Cookie(AuthCookie); err != nil || c.Value != AuthValue {
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, "<!DOCTYPE html>\n<html><head><title>Please log in</title></head><body><h1>Please log in</h1></body></html>\n")
		return
	}
	n := strings.TrimPrefix(path, "/account/")
	if n == "" {
		n = "0"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html><head><title>Account %s</title>\n", n)
	fmt.Fprintf(&b, "<script type=\"application/ld+json\">{\"@type\": \"Product\", \"sku\": \"P-%s\"}</script>\n</head><body>\n", n)
	fmt.Fprintf(&b, "<h1 class=\"name\">Product %s</h1>\n<span class=\"price\">%s.99</span>\n<ul>\n", n, n)
	for _, p := range AccountPages {
		fmt.Fprintf(&b, "<li><a href=\"%s\">%s</a></li>\n", p, p)
	}
	b.WriteString("</ul>\n</body></html>\n")
	_, _ = io.WriteString(w, b.String())
}
