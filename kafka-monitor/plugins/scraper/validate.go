package scraper

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/extract"
)

// Validate checks what the crawl schema cannot, so that an accepted crawl
// request is one the crawlers can carry out as asked:
//
//   - url: an absolute http or https URL with a host (and a port, if
//     given, from 1 to 65535);
//   - spiderid: not empty and without ":" (the queue key
//     <spiderid>:<domain>:queue must read back);
//   - allowed_domains: host names (or host:port), without a scheme or path;
//   - allow_regex, deny_regex: regular expressions that compile in Go's RE2
//     (as the crawler compiles them) and mean the same in Python's re (as
//     the original crawler, which may share the cluster, reads them);
//   - useragent, cookie: usable as HTTP header values (no control
//     characters);
//   - method, body, headers: a method the crawler sends, a body within
//     crawlrequest.MaxBodyBytes, headers the cluster does not own
//     (crawlrequest.CheckShape);
//   - extract: rules that compile, each error naming its rule
//     (extract.Compile);
//   - render: true, false or an object of wait_for (a selector that is not
//     blank), wait_ms and timeout (above 0) only (crawlrequest.CheckRender),
//     whose wait_ms is below its timeout (else every render would end at
//     its timeout).
func (h *Handler) Validate(req plugin.Request) error {
	var errs []error
	if err := checkSeedURL(str(req, "url")); err != nil {
		errs = append(errs, fmt.Errorf("url: %w", err))
	}
	if spider := str(req, "spiderid"); spider == "" || strings.Contains(spider, ":") {
		errs = append(errs, fmt.Errorf("spiderid: %q is empty or holds ':'", spider))
	}
	for i, d := range strList(req, "allowed_domains") {
		if err := checkAllowedDomain(d); err != nil {
			errs = append(errs, fmt.Errorf("allowed_domains[%d]: %w", i, err))
		}
	}
	for _, field := range []string{"allow_regex", "deny_regex"} {
		for i, p := range strList(req, field) {
			if err := checkPattern(p); err != nil {
				errs = append(errs, fmt.Errorf("%s[%d] %q: %w", field, i, p, err))
			}
		}
	}
	for _, field := range []string{"useragent", "cookie"} {
		if at := strings.IndexFunc(str(req, field), isHeaderControl); at >= 0 {
			errs = append(errs, fmt.Errorf("%s: control character at offset %d (not allowed in an HTTP header)", field, at))
		}
	}
	errs = append(errs, crawlrequest.CheckShape(req)...)
	if err := checkRender(req); err != nil {
		errs = append(errs, err)
	}
	if spec, ok := req[crawlrequest.FieldExtract]; ok && spec != nil {
		if _, err := extract.Compile(spec); err != nil {
			errs = append(errs, err)
		}
	}
	return joinReasons(errs)
}

// checkRender refuses a render value crawlrequest.CheckRender refuses, and
// one whose wait_ms does not end before its timeout.
func checkRender(req plugin.Request) error {
	if err := crawlrequest.CheckRender(req); err != nil || !crawlrequest.WantsRender(req) {
		return err
	}
	spec, err := crawlrequest.ParseRender(req[crawlrequest.FieldRender])
	if err == nil && spec.Wait >= spec.Timeout {
		return fmt.Errorf("render: wait_ms %d is not below the timeout (%s): every render would end at its timeout",
			spec.Wait.Milliseconds(), spec.Timeout)
	}
	return err
}

// isHeaderControl reports the characters an HTTP header value must not
// hold (what net/http refuses to send): ASCII controls other than tab.
func isHeaderControl(r rune) bool { return (r < 0x20 && r != '\t') || r == 0x7f }

// joinReasons writes several reasons on one line; Unwrap gives each.
func joinReasons(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return reasons(errs)
}

// reasons are a request's reasons, one line: "url: ...; spiderid: ...".
type reasons []error

func (r reasons) Error() string {
	parts := make([]string, len(r))
	for i, err := range r {
		parts[i] = err.Error()
	}
	return strings.Join(parts, "; ")
}

// Unwrap gives each reason.
func (r reasons) Unwrap() []error { return r }

func str(req plugin.Request, field string) string {
	s, _ := req[field].(string)
	return s
}

// strList reads a list of strings (the schema checked the items' type).
func strList(req plugin.Request, field string) []string {
	items, _ := req[field].([]any)
	out := make([]string, 0, len(items))
	for _, x := range items {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// checkSeedURL accepts an absolute http or https URL with a host.
func checkSeedURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // the URL itself is already in the reason's context
		}
		return fmt.Errorf("%q does not parse: %w", raw, err)
	}
	switch {
	case u.Scheme == "":
		return fmt.Errorf("%q is relative or has no scheme; want an absolute http or https URL", raw)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("scheme %q not allowed; want http or https", u.Scheme)
	case u.Opaque != "":
		return fmt.Errorf("%q has no host (want %s://host/...)", raw, u.Scheme)
	case u.Hostname() == "":
		return fmt.Errorf("%q has no host", raw)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("port %q out of range", p)
		}
	}
	return nil
}

// checkAllowedDomain accepts a host name, an IP address or either with a
// port, as the crawler's link filter compares them with a link's host.
func checkAllowedDomain(d string) error {
	if strings.Contains(d, "://") {
		return fmt.Errorf("%q: a URL, not a host name", d)
	}
	host := d
	if h, port, err := net.SplitHostPort(d); err == nil {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q: port %q out of range", d, port)
		}
		host = h
	}
	if err := checkHostName(strings.TrimSuffix(host, ".")); err != nil {
		return fmt.Errorf("%q: %w", d, err)
	}
	return nil
}

// checkHostName accepts an IP address or dot-separated labels of letters,
// digits, '-' and '_' (a host name as it appears in a URL, international
// ones included).
func checkHostName(host string) error {
	if net.ParseIP(host) != nil {
		return nil
	}
	if host == "" {
		return errors.New("empty host name")
	}
	for label := range strings.SplitSeq(host, ".") {
		if label == "" {
			return errors.New("empty label in host name")
		}
		for _, r := range label {
			if r != '-' && r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				return fmt.Errorf("%q not allowed in a host name", r)
			}
		}
	}
	return nil
}

// checkPattern accepts a link filter pattern that compiles as the crawler
// compiles it (Go's RE2) and avoids the syntax that RE2 and Python's re,
// which the original crawler uses, read differently: the pattern must
// select the same links whichever crawler pops the request.
func checkPattern(p string) error {
	if _, err := regexp.Compile(p); err != nil {
		return err
	}
	return portable(p)
}

// portable reports RE2 syntax that Python's re rejects or reads otherwise.
// It reads p as RE2 does; p compiles.
func portable(p string) error {
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			i++
			switch e := p[i]; {
			case e == 'p' || e == 'P':
				return fmt.Errorf(`\%c (a Unicode class) is RE2 syntax that Python's re rejects`, e)
			case e == 'Q' || e == 'E':
				return errors.New(`\Q...\E (quoting) is RE2 syntax that Python's re rejects; escape each character`)
			case e == 'C':
				return errors.New(`\C (any byte) is RE2 syntax that Python's re rejects`)
			case e == 'z':
				return errors.New(`\z is RE2 syntax that Python's re rejects; use $`)
			case e == 'x' && i+1 < len(p) && p[i+1] == '{':
				return errors.New(`\x{...} is RE2 syntax that Python's re rejects; use \xhh or \uhhhh`)
			case e >= '1' && e <= '9':
				return fmt.Errorf(`\%c is an octal escape in RE2 but a back-reference in Python's re; use \x escapes`, e)
			}
		case inClass:
			if c == '[' && i+1 < len(p) && p[i+1] == ':' {
				if end := strings.Index(p[i+2:], ":]"); end >= 0 {
					return fmt.Errorf("%s (a POSIX class) is RE2 syntax that Python's re reads as a set of characters", p[i:i+2+end+2])
				}
			}
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
			// A ']' right after '[' or '[^' is a literal.
			if i+1 < len(p) && p[i+1] == '^' {
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' {
				i++
			}
		case c == '(' && strings.HasPrefix(p[i:], "(?"):
			rest := p[i+2:]
			if strings.HasPrefix(rest, "<") {
				return errors.New("(?<name>...) is RE2 syntax that Python's re rejects; use (?P<name>...)")
			}
			// A flag group such as (?i) or (?sU:...): RE2's flags are imsU.
			flags := rest[:len(rest)-len(strings.TrimLeft(rest, "imsU-"))]
			if strings.Contains(flags, "U") {
				return errors.New("the U flag makes RE2 ungreedy but means Unicode in Python's re; use lazy quantifiers (*?, +?)")
			}
		case c == '{' && strings.HasPrefix(p[i:], "{,"):
			if end := strings.IndexByte(p[i:], '}'); end > 2 && isDigits(p[i+2:i+end]) {
				return fmt.Errorf("%s is literal text in RE2 but a repetition in Python's re; write {0,%s} or \\{", p[i:i+end+1], p[i+2:i+end])
			}
		}
	}
	return nil
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
