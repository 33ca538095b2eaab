package console

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// tryExample is the request the Try page starts with: the URL asked for
// (?url=), one link deep, with a rule of each kind.
func tryExample(url string) string {
	if url == "" {
		url = "http://example.com/"
	}
	b, _ := json.MarshalIndent(map[string]any{
		"url": url, "appid": "console", "crawlid": "try", "maxdepth": 1,
		"extract": map[string]any{
			"title": map[string]any{"css": "title"},
			"links": map[string]any{"xpath": "//a/@href", "all": true},
			"ld":    map[string]any{"jsonld": true},
		},
	}, "", "  ")
	return string(b)
}

type tryData struct {
	// Request is the request as edited.
	Request string
	// Message and Cause are /try's refusal.
	Message, Cause string
	// Tried is what /try answered.
	Tried *tried
}

// tried is /try's answer as the page shows it.
type tried struct {
	Status           int
	URL, ResponseURL string
	// Extracted are the fields, in name order, each value as JSON.
	Extracted []extractedField
	HasRules  bool
	Followed  []struct {
		URL  string `json:"url"`
		Text string `json:"text"`
	}
	Refused []struct {
		URL    string `json:"url"`
		Reason string `json:"reason"`
	}
	// Answer is the whole answer, indented.
	Answer string
}

type extractedField struct{ Name, Value string }

func (c *Console) tryPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "try", "Try a request", &tryData{Request: tryExample(r.URL.Query().Get("url"))})
}

// tryRequest sends the edited request to /try and shows the result, its
// extracted fields and its links, or why it was refused.
func (c *Console) tryRequest(w http.ResponseWriter, r *http.Request) {
	d := &tryData{}
	if err := r.ParseForm(); err != nil {
		d.Message = "The form could not be read: " + err.Error()
		c.render(w, r, http.StatusOK, "try", "Try a request", d)
		return
	}
	d.Request = r.PostForm.Get("request")
	a := c.callAPI(r, "/try", []byte(d.Request))
	if !a.OK {
		d.Message, d.Cause = a.Message, a.Cause
		if d.Message == "" {
			d.Message = "The service answered " + http.StatusText(a.Code) + "."
		}
		c.render(w, r, http.StatusOK, "try", "Try a request", d)
		return
	}
	d.Tried = readTried(a.Data)
	c.render(w, r, http.StatusOK, "try", "Try a request", d)
}

// readTried reads /try's data for the page.
func readTried(data []byte) *tried {
	t := &tried{}
	var ans struct {
		Result struct {
			URL         string         `json:"url"`
			ResponseURL string         `json:"response_url"`
			Status      int            `json:"status_code"`
			Extracted   map[string]any `json:"extracted"`
		} `json:"result"`
	}
	_ = json.Unmarshal(data, &ans)
	_ = json.Unmarshal(data, t) // followed, refused
	t.Status, t.URL, t.ResponseURL = ans.Result.Status, ans.Result.URL, ans.Result.ResponseURL
	t.HasRules = ans.Result.Extracted != nil
	for _, name := range slices.Sorted(maps.Keys(ans.Result.Extracted)) {
		v, _ := json.MarshalIndent(ans.Result.Extracted[name], "", "  ")
		t.Extracted = append(t.Extracted, extractedField{Name: name, Value: string(v)})
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, data, "", "  ") == nil {
		t.Answer = strings.TrimSpace(pretty.String())
	}
	return t
}
