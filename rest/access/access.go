// Package access is the REST service's optional access control: a bearer
// token for the API (API_TOKEN), basic auth for the console (UI_AUTH_USER
// and UI_AUTH_PASSWORD), and the same-origin check of the console's
// state-changing requests. Everything is off by default, as the original
// service has no access control; each check compares secrets in constant
// time.
package access

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// The access settings, all off by default.
var (
	APIToken = settings.String("API_TOKEN", "", "when set, every request but `GET /` must carry `Authorization: Bearer <API_TOKEN>` (401 otherwise), "+
		"and the console asks for it as its password unless `UI_AUTH_USER` is set; see [access control](console.md#access-control)").Ours()
	UIUser     = settings.String("UI_AUTH_USER", "", "the console's basic-auth user; empty leaves the console open (unless `API_TOKEN` is set)").Ours()
	UIPassword = settings.String("UI_AUTH_PASSWORD", "", "the console's basic-auth password, with `UI_AUTH_USER` (set both or neither)").Ours()
)

// Settings are the access settings, for the REST service's settings.Group.
func Settings() settings.Group { return settings.Declare(APIToken, UIUser, UIPassword) }

// Policy is who may use the API and the console.
type Policy struct {
	// APIToken guards the API; "" lets every request in.
	APIToken string
	// UIUser and UIPassword guard the console with basic auth.
	UIUser, UIPassword string
}

// FromSettings reads the policy. A user without a password (or the other
// way round) is refused: it would leave the console open by mistake.
func FromSettings(s *settings.Settings) (Policy, error) {
	p := Policy{APIToken: APIToken.From(s), UIUser: UIUser.From(s), UIPassword: UIPassword.From(s)}
	if (p.UIUser == "") != (p.UIPassword == "") {
		return Policy{}, fmt.Errorf("settings %s and %s: set both or neither", UIUser.Name(), UIPassword.Name())
	}
	return p, nil
}

// API lets a request through to next when it carries the API token, or when
// no token is set; the index (/) is always open, for health checks. Other
// requests are answered by deny with 401.
func (p Policy) API(next http.Handler, deny func(w http.ResponseWriter)) http.Handler {
	if p.APIToken == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if r.URL.Path == "/" || ok && equal(strings.TrimSpace(token), p.APIToken) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="scrapy-cluster"`)
		deny(w)
	})
}

// Console lets a request through to next when it carries the console's
// basic-auth credentials. Without UI_AUTH_USER but with API_TOKEN, the
// console asks for the token as the password (any user name), since the
// console can send whatever the API takes. With neither, it is open.
func (p Policy) Console(next http.Handler) http.Handler {
	user, password := p.UIUser, p.UIPassword
	if user == "" && p.APIToken == "" {
		return next
	}
	if user == "" {
		password = p.APIToken
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, pw, ok := r.BasicAuth()
		if ok && (user == "" || equal(u, user)) && equal(pw, password) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="Scrapy Cluster console", charset="UTF-8"`)
		http.Error(w, "The console needs a user name and password.", http.StatusUnauthorized)
	})
}

// equal compares two secrets in constant time (of their hashes, so the
// length does not show either).
func equal(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// ErrCrossOrigin is the error SameOrigin returns for a request another site
// made the browser send.
var ErrCrossOrigin = errors.New("cross-origin request")

// SameOrigin checks that a state-changing request comes from a page of
// this service: its Origin header, or else its Referer, must name the
// request's own host. Browsers send Origin with every POST (and the console
// sets Referrer-Policy same-origin), so a request with neither is refused
// too.
func SameOrigin(r *http.Request) error {
	from := r.Header.Get("Origin")
	if from == "" || from == "null" {
		from = r.Header.Get("Referer")
	}
	if from == "" {
		return fmt.Errorf("%w: no Origin or Referer header", ErrCrossOrigin)
	}
	u, err := url.Parse(from)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%w: unreadable origin %q", ErrCrossOrigin, from)
	}
	if !strings.EqualFold(u.Host, r.Host) {
		return fmt.Errorf("%w: from %s to %s", ErrCrossOrigin, u.Host, r.Host)
	}
	return nil
}
