// Package referer decides the Referer header of a request found on a page,
// as Scrapy's RefererMiddleware does for the original's crawler: with
// REFERER_ENABLED (default true) every request a spider makes of a page,
// and the target of a page's <meta http-equiv="refresh">, carries the
// page's URL as its Referer under REFERRER_POLICY, Scrapy's names and
// default ("scrapy-default": the page's URL without its fragment and
// user info, except from an https page to an http URL). A page's own
// Referrer-Policy header, when it names a known policy, decides for the
// requests found on it, as in Scrapy.
package referer

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// The policies, by their W3C names (https://www.w3.org/TR/referrer-policy/),
// and Scrapy's default.
const (
	NoReferrer                  = "no-referrer"
	NoReferrerWhenDowngrade     = "no-referrer-when-downgrade"
	SameOrigin                  = "same-origin"
	Origin                      = "origin"
	StrictOrigin                = "strict-origin"
	OriginWhenCrossOrigin       = "origin-when-cross-origin"
	StrictOriginWhenCrossOrigin = "strict-origin-when-cross-origin"
	UnsafeURL                   = "unsafe-url"
	// ScrapyDefault is Scrapy's DefaultReferrerPolicy:
	// no-referrer-when-downgrade, and nothing from a page that is not
	// http(s).
	ScrapyDefault = "scrapy-default"
)

// Policies are the policy names REFERRER_POLICY and a page's
// Referrer-Policy header may give.
var Policies = []string{ScrapyDefault, NoReferrer, NoReferrerWhenDowngrade, SameOrigin, Origin, StrictOrigin,
	OriginWhenCrossOrigin, StrictOriginWhenCrossOrigin, UnsafeURL}

// The settings, Scrapy's names and defaults.
var (
	Enabled = settings.Bool("REFERER_ENABLED", true, "send a `Referer` with every request found on a page (its links, its meta refresh target), as Scrapy's RefererMiddleware")
	Policy  = settings.String("REFERRER_POLICY", ScrapyDefault, "the Referer policy: `scrapy-default` (the page's URL, except from https to http) or a W3C name ("+
		"`no-referrer`, `no-referrer-when-downgrade`, `same-origin`, `origin`, `strict-origin`, `origin-when-cross-origin`, "+
		"`strict-origin-when-cross-origin`, `unsafe-url`); a page's own `Referrer-Policy` header decides for its links, as in Scrapy")
)

// Settings are the package's settings, for the crawler's settings.Group.
func Settings() settings.Group { return settings.Declare(Enabled, Policy) }

// A Referer decides Referer headers; the zero value sends none.
type Referer struct {
	on     bool
	policy string
}

// FromSettings reads REFERER_ENABLED and REFERRER_POLICY; an unknown
// policy is an error naming the known ones.
func FromSettings(s *settings.Settings) (Referer, error) {
	p := strings.ToLower(strings.TrimSpace(Policy.From(s)))
	if !slices.Contains(Policies, p) {
		return Referer{}, fmt.Errorf("setting %s: unknown policy %q; use one of %s", Policy.Name(), Policy.From(s), strings.Join(Policies, ", "))
	}
	return Referer{on: Enabled.From(s), policy: p}, nil
}

// New returns a Referer applying policy (one of Policies; anything else
// is ScrapyDefault).
func New(policy string) Referer {
	if !slices.Contains(Policies, policy) {
		policy = ScrapyDefault
	}
	return Referer{on: true, policy: policy}
}

// Enabled reports whether r sends any Referer.
func (r Referer) Enabled() bool { return r.on }

// For returns the Referer of a request for target found on the page at
// from whose response header is header (nil: none): "" when none is sent.
func (r Referer) For(from string, header http.Header, target string) string {
	if !r.on {
		return ""
	}
	policy := r.policy
	if p := pagePolicy(header); p != "" {
		policy = p
	}
	return Apply(policy, from, target)
}

// pagePolicy is the last known policy a Referrer-Policy header names
// (browsers take the last they know of a list), or "".
func pagePolicy(h http.Header) string {
	var out string
	for _, v := range h.Values("Referrer-Policy") {
		for tok := range strings.SplitSeq(v, ",") {
			if t := strings.ToLower(strings.TrimSpace(tok)); slices.Contains(Policies, t) {
				out = t
			}
		}
	}
	return out
}

// Apply returns the Referer policy sends from the page at from to target,
// "" for none. Neither URL may be other than http(s) for one to be sent.
func Apply(policy, from, target string) string {
	src, err := url.Parse(from)
	if err != nil || (src.Scheme != "http" && src.Scheme != "https") || src.Host == "" {
		return ""
	}
	dst, err := url.Parse(target)
	if err != nil {
		return ""
	}
	downgrade := src.Scheme == "https" && dst.Scheme != "https"
	sameOrigin := src.Scheme == dst.Scheme && strings.EqualFold(src.Host, dst.Host)
	full, origin := stripped(src), src.Scheme+"://"+src.Host+"/"
	switch policy {
	case NoReferrer:
		return ""
	case SameOrigin:
		return when(sameOrigin, full)
	case Origin:
		return origin
	case StrictOrigin:
		return when(!downgrade, origin)
	case OriginWhenCrossOrigin:
		if sameOrigin {
			return full
		}
		return origin
	case StrictOriginWhenCrossOrigin:
		if sameOrigin {
			return full
		}
		return when(!downgrade, origin)
	case UnsafeURL:
		return full
	}
	// NoReferrerWhenDowngrade and ScrapyDefault.
	return when(!downgrade, full)
}

func when(ok bool, v string) string {
	if ok {
		return v
	}
	return ""
}

// stripped is u without user info and fragment.
func stripped(u *url.URL) string {
	c := *u
	c.User, c.Fragment, c.RawFragment = nil, "", ""
	return c.String()
}
