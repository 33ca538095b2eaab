package crawlrequest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
)

// The fields that shape a crawl's requests (ours; the original has none, and
// its crawlers ignore them). They travel in a member as extra fields, as
// written, so that a Python component reading or rewriting a member keeps
// them: method and body apply to the request that carries them (the seed),
// headers, session and extract to every request of the crawl.
const (
	FieldMethod  = "method"
	FieldBody    = "body"
	FieldHeaders = "headers"
	FieldSession = "session"
	FieldExtract = "extract"
)

// Methods are the methods a crawl request may ask for (GET by default).
var Methods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
	http.MethodPatch, http.MethodDelete, http.MethodOptions}

// MaxBodyBytes is the largest body a crawl request may carry (64 KiB).
const MaxBodyBytes = 64 << 10

// MaxHeaders is the most headers a crawl request may give, and
// MaxHeaderBytes the longest value of one.
const (
	MaxHeaders     = 64
	MaxHeaderBytes = 8 << 10
)

// ownedHeaders are the headers the cluster sets itself, with why a crawl
// request may not: the connection's own (hop-by-hop, RFC 9110 7.6.1), the
// framing of the body, the host the URL names, and the encodings the
// fetcher can decode.
var ownedHeaders = map[string]string{
	"Host":                "the URL's host is sent",
	"Content-Length":      "the body's length is sent",
	"Transfer-Encoding":   "the fetcher frames the body",
	"Connection":          "a hop-by-hop header, the connection's own",
	"Keep-Alive":          "a hop-by-hop header, the connection's own",
	"Proxy-Connection":    "a hop-by-hop header, the connection's own",
	"Proxy-Authorization": "a hop-by-hop header, the connection's own",
	"Proxy-Authenticate":  "a hop-by-hop header, the connection's own",
	"Te":                  "a hop-by-hop header, the connection's own",
	"Trailer":             "a hop-by-hop header, the connection's own",
	"Upgrade":             "a hop-by-hop header, the connection's own",
	"Accept-Encoding":     "the fetcher asks for the encodings it decodes (gzip, deflate)",
}

// Shape is how a request is sent, beside its URL: read from its method,
// body, headers and session fields.
type Shape struct {
	// Method is the HTTP method (GET when the request names none).
	Method string
	// Body is sent with the request ("" none).
	Body string
	// Header replaces the crawler's headers of the same names (nil: none);
	// names are canonical.
	Header http.Header
	// Session keeps the cookies responses set, for the crawl's later requests.
	Session bool
}

// Shape reads r's method, body, headers and session fields, checked as
// CheckShape checks a fed request's.
func (r *Request) Shape() (Shape, error) {
	s := Shape{Method: http.MethodGet}
	var errs []error
	if raw, ok := r.extraValue(FieldMethod); ok {
		m, isString := wirejson.Unquote(raw)
		if err := checkMethod(m, isString); err != nil {
			errs = append(errs, err)
		}
		s.Method = m
	}
	if raw, ok := r.extraValue(FieldBody); ok {
		b, isString := wirejson.Unquote(raw)
		if err := checkBody(b, isString); err != nil {
			errs = append(errs, err)
		}
		s.Body = b
	}
	if raw, ok := r.extraValue(FieldHeaders); ok {
		var h map[string]string
		if err := json.Unmarshal([]byte(raw), &h); err != nil {
			errs = append(errs, errors.New("headers: not an object of strings"))
		} else {
			var herrs []error
			s.Header, herrs = headerOf(h)
			errs = append(errs, herrs...)
		}
	}
	if raw, ok := r.extraValue(FieldSession); ok {
		if raw != "true" && raw != "false" {
			errs = append(errs, errors.New("session: not true or false"))
		}
		s.Session = raw == "true"
	}
	if len(errs) > 0 {
		reasons := make([]string, len(errs))
		for i, err := range errs {
			reasons[i] = err.Error()
		}
		return s, errors.New(strings.Join(reasons, "; "))
	}
	return s, nil
}

// extraValue is an extra field's JSON text, unless it is absent or null.
func (r *Request) extraValue(name string) (string, bool) {
	raw, ok := r.extra[name]
	return raw, ok && !isNull(raw)
}

// CheckShape checks a fed request's method, body and headers (as
// wirejson.Decode reads them) and returns a reason naming the field for
// each problem: a method not in Methods, a body longer than MaxBodyBytes, a
// header the cluster owns (Host, Content-Length, hop-by-hop headers,
// Accept-Encoding), an invalid header name or value, too many headers.
func CheckShape(req map[string]any) []error {
	var errs []error
	if v, ok := req[FieldMethod]; ok && v != nil {
		m, isString := v.(string)
		if err := checkMethod(m, isString); err != nil {
			errs = append(errs, err)
		}
	}
	if v, ok := req[FieldBody]; ok && v != nil {
		b, isString := v.(string)
		if err := checkBody(b, isString); err != nil {
			errs = append(errs, err)
		}
	}
	if v, ok := req[FieldHeaders]; ok && v != nil {
		obj, isObject := v.(map[string]any)
		h := make(map[string]string, len(obj))
		for name, value := range obj {
			s, isString := value.(string)
			if !isString {
				errs = append(errs, fmt.Errorf("headers: %s: not a string", name))
			}
			h[name] = s
		}
		if !isObject {
			errs = append(errs, errors.New("headers: not an object of strings"))
		} else {
			_, herrs := headerOf(h)
			errs = append(errs, herrs...)
		}
	}
	return errs
}

func checkMethod(m string, isString bool) error {
	if !isString || !slices.Contains(Methods, m) {
		return fmt.Errorf("method: want one of %s", strings.Join(Methods, ", "))
	}
	return nil
}

func checkBody(b string, isString bool) error {
	switch {
	case !isString:
		return errors.New("body: not a string")
	case len(b) > MaxBodyBytes:
		return fmt.Errorf("body: %d bytes, more than the limit of %d", len(b), MaxBodyBytes)
	}
	return nil
}

// headerOf checks headers and returns them with canonical names, or
// every problem, in name order.
func headerOf(h map[string]string) (http.Header, []error) {
	var errs []error
	if len(h) > MaxHeaders {
		errs = append(errs, fmt.Errorf("headers: %d headers, more than the limit of %d", len(h), MaxHeaders))
	}
	out := make(http.Header, len(h))
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		value := h[name]
		canon := http.CanonicalHeaderKey(name)
		switch why, owned := ownedHeaders[canon]; {
		case !httpguts.ValidHeaderFieldName(name):
			errs = append(errs, fmt.Errorf("headers: %q is not a valid header name", name))
		case owned:
			errs = append(errs, fmt.Errorf("headers: %s is the cluster's to send (%s)", canon, why))
		case len(value) > MaxHeaderBytes:
			errs = append(errs, fmt.Errorf("headers: %s: %d bytes, more than the limit of %d", canon, len(value), MaxHeaderBytes))
		case !httpguts.ValidHeaderFieldValue(value):
			errs = append(errs, fmt.Errorf("headers: %s: not a valid header value (control characters)", canon))
		case len(out[canon]) > 0:
			errs = append(errs, fmt.Errorf("headers: %s given twice (names are case-insensitive)", canon))
		default:
			out[canon] = []string{value}
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}
