package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// liveBacklog is how many buffered results a new stream starts with.
const liveBacklog = 200

type liveData struct {
	Filter     filter
	Topic      string
	State      string
	Partitions int
	Read       uint64
	Streams    int
	Dropped    uint64
	Kept       int
	Backlog    int
}

func (c *Console) livePage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := &liveData{Filter: filter{AppID: strings.TrimSpace(q.Get("appid")), CrawlID: strings.TrimSpace(q.Get("crawlid"))},
		Kept: len(c.results.ring), Backlog: liveBacklog}
	d.Topic, d.State, d.Partitions = c.firehose.status()
	d.Read, d.Streams, d.Dropped = c.results.counts()
	c.render(w, r, http.StatusOK, "live", "Live", d)
}

// streamKeepAlive is how often an idle stream gets a comment, so proxies
// and the browser keep it open.
const streamKeepAlive = 15 * time.Second

// streamWriteTimeout drops a client that does not take a write in time.
const streamWriteTimeout = 10 * time.Second

// liveEvents streams the results (filtered by appid and crawlid) as
// Server-Sent Events: first those buffered after Last-Event-ID (the latest
// liveBacklog of them), then each new one as it is read. A client that
// falls subBuffer results behind is dropped; its browser reconnects with
// the last id it got and catches up from the buffer.
func (c *Console) liveEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := filter{AppID: strings.TrimSpace(q.Get("appid")), CrawlID: strings.TrimSpace(q.Get("crawlid"))}
	var after uint64
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		after, _ = strconv.ParseUint(id, 10, 64)
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	backlog, s := c.results.follow(after, f, liveBacklog)
	defer c.results.unfollow(s)

	var buf bytes.Buffer
	// send writes results and then the reading's status (or, with no
	// results, a keep-alive comment and the status).
	send := func(rs ...Result) bool {
		buf.Reset()
		for _, res := range rs {
			data, _ := json.Marshal(res)
			buf.WriteString("id: ")
			buf.WriteString(strconv.FormatUint(res.Seq, 10))
			buf.WriteString("\nevent: result\ndata: ")
			buf.Write(data)
			buf.WriteString("\n\n")
		}
		if len(rs) == 0 {
			buf.WriteString(": keep-alive\n\n")
		}
		buf.WriteString("event: status\ndata: ")
		buf.Write(c.liveStatus())
		buf.WriteString("\n\n")
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if _, err := w.Write(buf.Bytes()); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	// The retry hint, then the backlog (or a comment, so the browser
	// knows the stream is open).
	_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	if _, err := w.Write([]byte("retry: 2000\n\n")); err != nil || !send(backlog...) {
		return
	}
	keepAlive := time.NewTicker(streamKeepAlive)
	defer keepAlive.Stop()
	for {
		select {
		case res, ok := <-s.c:
			if !ok {
				return // dropped for falling behind
			}
			batch := []Result{res}
			for len(batch) < 64 && len(s.c) > 0 {
				if more, ok := <-s.c; ok {
					batch = append(batch, more)
				}
			}
			if !send(batch...) {
				return
			}
		case <-keepAlive.C:
			if !send() {
				return
			}
		case <-r.Context().Done():
			return
		case <-c.shutdown:
			return
		}
	}
}

// liveStatus is the Live page's status line as JSON: {"state", "partitions", "read", "streams", "dropped"}.
func (c *Console) liveStatus() []byte {
	_, state, partitions := c.firehose.status()
	read, streams, dropped := c.results.counts()
	b, _ := json.Marshal(map[string]any{"state": state, "partitions": partitions, "read": read, "streams": streams, "dropped": dropped})
	return b
}

type apiData struct {
	// Body and Path prefill the form (from ?poll=<id>).
	Body string
	Path string
}

func (c *Console) apiPage(w http.ResponseWriter, r *http.Request) {
	d := &apiData{Path: "/feed", Body: "{\n  \"stats\": \"all\",\n  \"appid\": \"console\",\n  \"uuid\": \"" + newUUID() + "\"\n}"}
	if id := r.URL.Query().Get("poll"); id != "" {
		body, _ := json.MarshalIndent(map[string]string{"poll_id": id}, "", "  ")
		d.Path, d.Body = "/poll", string(body)
	}
	c.render(w, r, http.StatusOK, "api", "API console", d)
}

// apiSend passes a request from the API console to /feed or /poll and
// returns the status and the answer as JSON: {"code", "answer"}.
func (c *Console) apiSend(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Path string `json:"path"`
		// Body is the request's text, sent as typed (JSON or not).
		Body string `json:"body"`
	}
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(&in); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": http.StatusBadRequest, "error": "the console's request is not {\"path\", \"body\"}: " + err.Error()})
		return
	}
	if in.Path != "/feed" && in.Path != "/poll" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": http.StatusBadRequest, "error": "path must be /feed or /poll"})
		return
	}
	a := c.callAPI(r, in.Path, []byte(in.Body))
	answer := json.RawMessage(a.Body)
	if !json.Valid(answer) {
		answer, _ = json.Marshal(string(a.Body))
	}
	writeJSON(w, http.StatusOK, map[string]any{"code": a.Code, "answer": answer, "poll_id": a.PollID()})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
