package console

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// apiAnswer is what the service's own API answered a request the console
// made in process: the HTTP status, the body, and the body read as the
// API's {"data", "error", "status"} envelope.
type apiAnswer struct {
	Code int
	Body []byte
	Data json.RawMessage
	// Message and Cause are the envelope's error, when it has one.
	Message, Cause string
	OK             bool // status SUCCESS
}

// PollID is the poll_id of an answer /feed stopped waiting for, or "".
func (a apiAnswer) PollID() string {
	var d struct {
		PollID string `json:"poll_id"`
	}
	if len(a.Data) > 0 && json.Unmarshal(a.Data, &d) == nil {
		return d.PollID
	}
	return ""
}

// Pretty is the answer's data (or, when it failed, the whole body)
// indented for display.
func (a apiAnswer) Pretty() string {
	raw := a.Body
	if a.OK && len(a.Data) > 0 {
		raw = a.Data
	}
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") != nil {
		return string(raw)
	}
	return buf.String()
}

// callAPI sends body to the service's own endpoint path (/feed, /poll) in
// process: exactly what the endpoint does for an HTTP client, validation
// included, without going through the network or the API token (the
// console's own access control applies instead). r is the browser's
// request, whose context and client address the call takes.
func (c *Console) callAPI(r *http.Request, path string, body []byte) apiAnswer {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, path, bytes.NewReader(body))
	if err != nil {
		return apiAnswer{Code: http.StatusInternalServerError, Message: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.RemoteAddr, req.Host = r.RemoteAddr, r.Host
	rec := &recorder{header: http.Header{}, code: http.StatusOK}
	c.api.ServeHTTP(rec, req)
	a := apiAnswer{Code: rec.code, Body: rec.body.Bytes()}
	var env struct {
		Data  json.RawMessage `json:"data"`
		Error *struct {
			Message string `json:"message"`
			Cause   string `json:"cause"`
		} `json:"error"`
		Status string `json:"status"`
	}
	if json.Unmarshal(a.Body, &env) == nil {
		a.Data, a.OK = env.Data, env.Status == "SUCCESS" && rec.code == http.StatusOK
		if string(a.Data) == "null" {
			a.Data = nil
		}
		if env.Error != nil {
			a.Message, a.Cause = env.Error.Message, env.Error.Cause
		}
	}
	return a
}

// recorder is the http.ResponseWriter of an in-process API call.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
	wrote  bool
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.code, r.wrote = code, true
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.wrote = true
	return r.body.Write(p)
}

// newUUID is a request id for the answers the console waits for.
func newUUID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "console-" + hex.EncodeToString(b)
}

// fieldErrors sorts the reasons /feed gives for refusing a request by the
// field they concern, so a form can show each beside its field. cause is
// the error's cause as /feed answers it: the objections of every schema
// ("<Plugin>: at '/field': ...; at '/': ... | <Plugin>: ..."; a missing
// property is named at the root), of which only plugin's are kept, or a
// Validator's reason
// ("field: ..."). Reasons naming no field of fields are under "".
func fieldErrors(cause, plugin string, fields []string) map[string][]string {
	out := map[string][]string{}
	last := "-" // the field of the latest message; "-": none yet
	add := func(field, msg string) {
		if !slices.Contains(fields, field) {
			field = ""
		}
		out[field] = append(out[field], msg)
		last = field
	}
	// more continues the latest message: a reason may hold "; " itself
	// (`url: "x" is relative or has no scheme; want an absolute ... URL`).
	more := func(msg string) {
		if last == "-" {
			add("", msg)
			return
		}
		out[last][len(out[last])-1] += "; " + msg
	}
	cause = strings.TrimPrefix(cause, "no plugin's schema accepts it: ")
	var mine []string
	for _, seg := range strings.Split(cause, " | ") {
		if rest, ok := strings.CutPrefix(seg, plugin+": "); ok {
			mine = append(mine, rest)
		}
	}
	if len(mine) == 0 {
		mine = []string{cause}
	}
	for _, seg := range mine {
		for _, msg := range strings.Split(seg, "; ") {
			switch m := atPath.FindStringSubmatch(msg); {
			case m != nil && m[1] != "":
				add(m[1], m[3])
			case m != nil && missing.MatchString(m[3]):
				for _, name := range quoted.FindAllStringSubmatch(m[3], -1) {
					add(name[1], "required")
				}
			case m != nil:
				add("", m[3])
			default:
				name, reason, ok := strings.Cut(msg, ": ")
				if i := strings.IndexAny(name, "[ "); i > 0 && ok {
					name, reason = name[:i], msg // allow_regex[0] "(": ...
				}
				switch {
				case ok && slices.Contains(fields, name):
					add(name, reason)
				case !ok:
					more(msg)
				default:
					add("", msg)
				}
			}
		}
	}
	return out
}

var (
	// atPath reads "at '/field/...': reason" (the first path step).
	atPath  = regexp.MustCompile(`^at '(?:/([^/']*))?([^']*)': (.*)$`)
	missing = regexp.MustCompile(`^missing propert(y|ies) `)
	quoted  = regexp.MustCompile(`'([^']*)'`)
)
