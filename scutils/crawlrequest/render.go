package crawlrequest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// FieldRender asks for a page to be rendered in a headless browser (ours;
// the original has none). Like the shaping fields it travels in a member as
// an extra field, as written, and Follow passes it on whole: the links
// found on a rendered page are rendered too. A render request waits in its
// domain's render queue (rediskeys.QueueKeyFor), which only crawlers with
// RENDER_ENABLED pop.
//
// Its value is true, false (or null: not rendered), or an object with
// exactly these members, each optional:
//
//	wait_for  string   a CSS selector to wait for after the page loads
//	wait_ms   integer  ≥ 0, milliseconds to wait after load (and wait_for)
//	timeout   number   > 0, seconds: the deadline of the whole render
//
// true is {} (all defaults).
const FieldRender = "render"

// DefaultRenderTimeout is a render's deadline when its request gives no
// timeout; MaxRenderTimeout is the largest a request may give.
const (
	DefaultRenderTimeout = 30 * time.Second
	MaxRenderTimeout     = 300 * time.Second
)

// RenderSpec is how a page is rendered: read from its request's render
// field.
type RenderSpec struct {
	// WaitFor is a CSS selector waited for after load ("": none). When it
	// never appears, the page is published as rendered at Timeout.
	WaitFor string
	// Wait is extra time after load (and WaitFor).
	Wait time.Duration
	// Timeout bounds the whole render: navigation, WaitFor, Wait and
	// reading the DOM (DefaultRenderTimeout when the request gives none).
	Timeout time.Duration
}

// Render reads r's render field: ok reports whether r is to be rendered
// (render true or an object); a value CheckRender refuses is an error
// naming the field, with ok true (the request asked for rendering but
// cannot have it).
func (r *Request) Render() (spec RenderSpec, ok bool, err error) {
	raw, present := r.extraValue(FieldRender)
	if !present || raw == "false" {
		return RenderSpec{}, false, nil
	}
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return RenderSpec{}, true, fmt.Errorf("render: %w", err)
	}
	spec, err = ParseRender(v)
	return spec, true, err
}

// Rendered reports whether r asks to be rendered (its render field is
// true or an object, whether or not valid): the queue it belongs in.
func (r *Request) Rendered() bool {
	_, ok, _ := r.Render()
	return ok
}

// ParseRender reads a render value as wirejson.Decode reads it: true, or an
// object with only wait_for, wait_ms and timeout, of the right types and
// ranges. (false and nil are not values to render; they are refused here.)
func ParseRender(v any) (RenderSpec, error) {
	spec := RenderSpec{Timeout: DefaultRenderTimeout}
	switch v := v.(type) {
	case bool:
		if v {
			return spec, nil
		}
	case map[string]any:
		return parseRenderObject(v, spec)
	}
	return RenderSpec{}, errors.New("render: want true or an object with wait_for, wait_ms, timeout")
}

func parseRenderObject(obj map[string]any, spec RenderSpec) (RenderSpec, error) {
	var errs []string
	for k, val := range obj {
		switch k {
		case "wait_for":
			s, ok := val.(string)
			if !ok || strings.TrimSpace(s) == "" {
				errs = append(errs, "render: wait_for: want a CSS selector (a non-empty string)")
			}
			spec.WaitFor = s
		case "wait_ms":
			n, ok := number(val)
			if !ok || n < 0 || n != math.Trunc(n) || n > float64(MaxRenderTimeout/time.Millisecond) {
				errs = append(errs, fmt.Sprintf("render: wait_ms: want a whole number of milliseconds from 0 to %d", MaxRenderTimeout/time.Millisecond))
			}
			spec.Wait = time.Duration(n) * time.Millisecond
		case "timeout":
			n, ok := number(val)
			if !ok || n <= 0 || n > MaxRenderTimeout.Seconds() {
				errs = append(errs, fmt.Sprintf("render: timeout: want seconds above 0, at most %d", int(MaxRenderTimeout.Seconds())))
			}
			spec.Timeout = time.Duration(n * float64(time.Second))
		default:
			errs = append(errs, fmt.Sprintf("render: %q is not a render option (wait_for, wait_ms, timeout)", k))
		}
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		return RenderSpec{}, errors.New(strings.Join(errs, "; "))
	}
	return spec, nil
}

// CheckRender checks a fed request's render field (as wirejson.Decode
// reads it): nil when it is absent, null, false, true or a valid object;
// else the reason, naming the field.
func CheckRender(req map[string]any) error {
	if !WantsRender(req) {
		return nil
	}
	_, err := ParseRender(req[FieldRender])
	return err
}

// WantsRender reports whether a fed request (a decoded JSON object) asks to
// be rendered: its render field is true or an object. Absent, null and
// false are plain fetches; anything else is for CheckRender to refuse.
func WantsRender(req map[string]any) bool {
	switch v := req[FieldRender].(type) {
	case bool:
		return v
	case nil:
		return false
	}
	return true
}

// number reads a JSON number as wirejson.Decode or encoding/json gives it.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}
