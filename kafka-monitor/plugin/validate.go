package plugin

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
)

// Validator is implemented by plugins whose requests need checks a JSON
// Schema cannot express: a URL's scheme, a regular expression that must
// compile, a domain's form. Validate runs after the plugin's schema accepted
// the request and its defaults were filled in, on every path a request
// takes (the REST service's /feed, `kafka-monitor feed` and
// `kafka-monitor run`), so all three give the same verdict. The error's text
// is the reason the user sees, naming the field first:
// `url: scheme "ftp" not allowed`. Handle may rely on what Validate checked.
// Validate must not depend on Setup (the REST service and feed never set
// plugins up) nor do I/O: it judges the request alone, and may be called
// from several goroutines at once.
type Validator interface {
	Validate(req Request) error
}

// Stage is where a request failed validation.
type Stage int

const (
	// TooLarge: longer than MAX_REQUEST_BYTES (see CheckSize).
	TooLarge Stage = iota + 1
	// NotJSON: empty, not UTF-8, or not exactly one JSON value.
	NotJSON
	// NoSchema: no enabled plugin's schema accepts it.
	NoSchema
	// Refused: a schema accepted it but the request cannot be handled
	// (the plugin's Validator, or a number beyond float64).
	Refused
)

// InvalidError is the verdict on a request that must not be handled.
type InvalidError struct {
	Stage Stage
	// Plugin is the Name of the plugin whose schema accepted the request
	// (Refused only).
	Plugin string
	// Reason says why, in one line.
	Reason string
}

func (e *InvalidError) Error() string { return e.Reason }

// Parsed reports whether the request was JSON (the "parsed" field of the
// Kafka Monitor's log lines, as the original writes it).
func (e *InvalidError) Parsed() bool { return e.Stage == NoSchema || e.Stage == Refused }

func invalid(stage Stage, format string, args ...any) *InvalidError {
	return &InvalidError{Stage: stage, Reason: fmt.Sprintf(format, args...)}
}

// CheckSize refuses a request longer than maxBytes (MAX_REQUEST_BYTES)
// with a TooLarge *InvalidError; maxBytes <= 0 means no limit.
func CheckSize(raw []byte, maxBytes int) error {
	if maxBytes > 0 && len(raw) > maxBytes {
		return invalid(TooLarge, "request of %d bytes is larger than MAX_REQUEST_BYTES (%d)", len(raw), maxBytes)
	}
	return nil
}

// Validate is the verdict on one raw request, the same on every path a
// request takes: DecodeRequest, then ValidateValue. It returns the plugin
// that handles the request and the request with its defaults filled in,
// or an *InvalidError.
func Validate(plugins []Loaded, raw []byte) (*Loaded, Request, error) {
	v, err := DecodeRequest(raw)
	if err != nil {
		return nil, nil, err
	}
	return ValidateValue(plugins, v)
}

// DecodeRequest is the first half of Validate: raw must be UTF-8 holding
// exactly one JSON value (read as wirejson.Decode reads it). A NotJSON
// *InvalidError says why not: an empty request (no bytes, or only
// whitespace), the offset of the first byte that is not UTF-8, or the JSON
// syntax error.
func DecodeRequest(raw []byte) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, invalid(NotJSON, "empty request")
	}
	if !utf8.Valid(raw) {
		at := invalidUTF8At(raw)
		return nil, invalid(NotJSON, "not UTF-8: byte 0x%02x at offset %d", raw[at], at)
	}
	v, err := wirejson.Decode(raw)
	if err != nil {
		return nil, invalid(NotJSON, "%v", err)
	}
	return v, nil
}

func invalidUTF8At(raw []byte) int {
	for i := 0; i < len(raw); {
		r, size := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return 0
}

// ValidateValue is the second half of Validate, for a value DecodeRequest
// returned: the first plugin in rank order whose schema accepts v handles
// it, after its defaults are filled into v; then no number may be beyond
// float64 (Python reads 1e400 as infinity, which is not JSON and cannot be
// stored), and the plugin's Validator, if it has one, must accept it.
//
// When no schema accepts v, the reason is the objection of the plugins
// whose required properties v has (the request was meant for them), or of
// every plugin when there is no such plugin.
func ValidateValue(plugins []Loaded, v any) (*Loaded, Request, error) {
	p, req, errs := Match(plugins, v)
	if p == nil {
		return nil, nil, invalid(NoSchema, "no plugin's schema accepts it: %s", JoinErrors(closest(plugins, v, errs)))
	}
	refuse := func(reason string) (*Loaded, Request, error) {
		return nil, nil, &InvalidError{Stage: Refused, Plugin: p.Plugin.Name(), Reason: reason}
	}
	if at, ok := nonFinite(req); ok {
		return refuse(fmt.Sprintf("at '%s': number out of range", at))
	}
	if val, ok := p.Plugin.(Validator); ok {
		if err := safeValidate(val, req); err != nil {
			return refuse(err.Error())
		}
	}
	return p, req, nil
}

// safeValidate runs a Validator, turning a panic into a refusal: no
// request can stop the process that validates it.
func safeValidate(val Validator, req Request) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("validation panicked: %v", v)
		}
	}()
	return val.Validate(req)
}

// closest keeps the errors of the plugins whose schema's required
// properties v has, when there are any (errs holds one error per plugin,
// in the order of plugins). To each of those it adds what the plugin's
// Validator says of v (its defaults filled in) about the fields its
// schema did not object to, so that one answer names every error of the
// request, not the schema's first and the Validator's only once those
// are fixed.
func closest(plugins []Loaded, v any, errs []error) []error {
	obj, ok := v.(map[string]any)
	if !ok || len(errs) != len(plugins) {
		return errs
	}
	var kept []error
	for i, p := range plugins {
		if p.Schema.hasRequired(obj) {
			kept = append(kept, alsoValidated(p, obj, errs[i]))
		}
	}
	if len(kept) == 0 {
		return errs
	}
	return kept
}

// alsoValidated is the schema's objection err with the reasons p's
// Validator gives for obj about the fields err does not name already (a
// Validator's error may hold several, each naming its field first, as
// Unwrap() []error).
func alsoValidated(p Loaded, obj map[string]any, err error) error {
	val, ok := p.Plugin.(Validator)
	if !ok {
		return err
	}
	filled := maps.Clone(obj)
	p.Schema.ApplyDefaults(filled)
	verr := safeValidate(val, filled)
	if verr == nil {
		return err
	}
	each := []error{verr}
	if u, ok := verr.(interface{ Unwrap() []error }); ok {
		each = u.Unwrap()
	}
	text := err.Error()
	var more []string
	for _, e := range each {
		reason := e.Error()
		field := reason[:strings.IndexAny(reason+":", ":[ ")]
		if field == "" || !strings.Contains(text, "'/"+field+"'") {
			more = append(more, reason)
		}
	}
	if len(more) == 0 {
		return err
	}
	return fmt.Errorf("%w; %s", err, strings.Join(more, "; "))
}

// nonFinite finds an infinite or NaN number in v and returns its location
// (built only then: the walk allocates nothing).
func nonFinite(v any) (string, bool) {
	switch t := v.(type) {
	case float64:
		return "", math.IsInf(t, 0) || math.IsNaN(t)
	case map[string]any:
		for k, x := range t {
			if loc, ok := nonFinite(x); ok {
				return "/" + k + loc, true
			}
		}
	case []any:
		for i, x := range t {
			if loc, ok := nonFinite(x); ok {
				return "/" + strconv.Itoa(i) + loc, true
			}
		}
	}
	return "", false
}
