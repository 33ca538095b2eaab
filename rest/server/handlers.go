package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"runtime/debug"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/rest/answers"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
)

// route answers an API request through the API's ServeMux (routes). A
// panic answers 500 instead of dropping the connection.
func (svc *Service) route(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			svc.log.Error("Uncaught Exception Thrown", logfactory.Extra{
				"error": map[string]any{"message": msgUnknownError, "cause": fmt.Sprint(p), "ex": string(debug.Stack())},
			})
			writeFailure(w, http.StatusInternalServerError, msgUnknownError, "")
		}
	}()
	if r.URL.EscapedPath() != cleanPath(r.URL.EscapedPath()) {
		// ServeMux would redirect to the clean path: a path with empty or
		// dot segments names no endpoint of the API (nor of the original's).
		svc.notFound(w, r)
		return
	}
	svc.api.ServeHTTP(w, r)
}

// routes is the API: each endpoint under a method pattern of its own, as
// in package admin. A known path asked with another method is answered 405
// with the methods it allows, any other path 404, both in the original's
// JSON envelope.
func (svc *Service) routes() *http.ServeMux {
	mux := http.NewServeMux()
	handle := func(path string, h http.HandlerFunc, methods ...string) {
		for _, m := range methods {
			mux.HandleFunc(m+" "+path, svc.named(path, h))
		}
		mux.HandleFunc(path, svc.named(path, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Allow", strings.Join(methods, ", "))
			writeFailure(w, http.StatusMethodNotAllowed, msgNotAllowed, "")
		}))
	}
	const get, head, post = http.MethodGet, http.MethodHead, http.MethodPost
	handle("/{$}", func(w http.ResponseWriter, _ *http.Request) { svc.index(w) }, get, head, post)
	handle("/feed", svc.feed, post)
	handle("/poll", svc.poll, post)
	handle("/try", svc.try, post)
	handle("/crawls", svc.crawls, get, head)
	handle("/crawls/{crawlid...}", svc.crawl, get, head)
	handle("/recrawl/cancel", svc.recrawlCancel, post)
	mux.HandleFunc("/", svc.notFound)
	return mux
}

// named answers 404 for a request whose path leaves the final wildcard of
// path ({name...}) empty, as /crawls/ names no crawl, and calls h for others.
func (svc *Service) named(path string, h http.HandlerFunc) http.HandlerFunc {
	_, wildcard, _ := strings.Cut(path, "{")
	name, ok := strings.CutSuffix(wildcard, "...}")
	if !ok {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue(name) == "" {
			svc.notFound(w, r)
			return
		}
		h(w, r)
	}
}

// notFound answers a path that is no endpoint.
func (svc *Service) notFound(w http.ResponseWriter, r *http.Request) {
	svc.log.Info("Non-existant route called", logfactory.Extra{"path": r.URL.Path, "method": r.Method})
	writeFailure(w, http.StatusNotFound, msgDoesNotExist, "")
}

// cleanPath is p as ServeMux cleans it: rooted, without empty, "." or ".."
// segments.
func cleanPath(p string) string {
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	np := path.Clean(p)
	if strings.HasSuffix(p, "/") && np != "/" {
		np += "/" // Clean drops a final slash; ServeMux keeps it
	}
	return np
}

// index reports the service's state.
func (svc *Service) index(w http.ResponseWriter) {
	svc.log.Info("'index' endpoint called")
	k, r := svc.KafkaConnected(), svc.RedisConnected()
	writeBody(w, http.StatusOK, encode(indexAnswer{
		KafkaConnected: k,
		RedisConnected: r,
		MyID:           svc.id,
		NodeHealth:     health(k, r),
		UptimeSec:      int64(time.Since(svc.started).Seconds()),
	}))
}

// readRequest reads a JSON crawl, action or stats request from r's body
// as the Kafka Monitor decodes it, and its bytes; false when it has
// answered the client (a body it cannot read, or that is not JSON).
func (svc *Service) readRequest(w http.ResponseWriter, r *http.Request) ([]byte, any, bool) {
	raw, ok := svc.readBody(w, r, true)
	if !ok {
		return nil, nil, false
	}
	v, err := plugin.DecodeRequest(raw)
	if err != nil {
		svc.mustJSON(w, err.Error(), true)
		return nil, nil, false
	}
	return raw, v, true
}

// feed validates a request, sends it to the incoming topic and, when it has
// a uuid, waits for the answer. The verdict is the Kafka Monitor's
// (plugin.Validate): an invalid request is answered 400 with the reason as
// the error's cause, the same reason the monitor would log.
func (svc *Service) feed(w http.ResponseWriter, r *http.Request) {
	raw, v, ok := svc.readRequest(w, r)
	if !ok {
		return
	}
	svc.log.Info("'feed' endpoint called", logfactory.Extra{"content": v})
	// The request goes to Kafka as given; the defaults ValidateValue fills
	// into v are the monitor's business.
	_, _, err := plugin.ValidateValue(svc.plugins, v)
	if err != nil {
		if v == nil {
			svc.mustJSON(w, err.Error(), true) // Flask's get_json reads null as no JSON
		} else {
			svc.badSchema(w, err.Error())
		}
		return
	}
	if !svc.KafkaConnected() {
		writeFailure(w, http.StatusInternalServerError, msgNoKafka, "")
		return
	}
	obj, _ := v.(map[string]any)
	uuid, _ := obj["uuid"].(string)
	var wait *answers.Wait
	if uuid != "" {
		wait = svc.waiters.Add(uuid) // before sending, so a quick answer is not missed
	}
	ctx, cancel := context.WithTimeout(r.Context(), svc.feedLimit)
	err = svc.kafka.send(ctx, raw)
	cancel()
	if err != nil {
		if wait != nil {
			svc.waiters.Cancel(wait)
		}
		svc.sendFailed(w, r, err)
		return
	}
	if wait == nil {
		svc.log.Debug("Not expecting response from kafka")
		writeBody(w, http.StatusOK, successNoData)
		return
	}
	svc.log.Debug("expecting kafka response for request", logfactory.Extra{"uuid": uuid})
	answer := svc.await(r.Context(), wait)
	if answer == nil {
		svc.log.Warning("Did not get response within timeout from kafka. If the request is still running, use the `/poll` API",
			logfactory.Extra{"uuid": uuid})
		pollID, _ := json.Marshal(map[string]string{"poll_id": uuid})
		writeData(w, pollID)
		return
	}
	svc.log.Debug("Got successful reponse back from kafka", logfactory.Extra{"uuid": uuid})
	writeData(w, answer)
}

// await waits up to WAIT_FOR_RESPONSE_TIME for the answer; nil when it did
// not come (it will then be stored for /poll when it does).
func (svc *Service) await(ctx context.Context, wait *answers.Wait) []byte {
	t := time.NewTimer(svc.waitFor)
	defer t.Stop()
	select {
	case a := <-wait.C():
		return a
	case <-t.C:
	case <-ctx.Done():
	}
	return svc.waiters.Cancel(wait)
}

// sendFailed answers a request Kafka did not take.
func (svc *Service) sendFailed(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, kafka.MessageSizeTooLarge):
		svc.log.Warning("Kafka refused the request as too large", logfactory.Extra{"error": err.Error()})
		writeFailure(w, http.StatusRequestEntityTooLarge, msgTooLargeKafka, "")
		return
	case r.Context().Err() != nil:
		svc.log.Info("The client went away before the request was sent", logfactory.Extra{"error": err.Error()})
	case errors.Is(err, errNotConnected):
	default:
		svc.kafkaLink.lost(err)
		svc.log.Error("Failed to send the request to Kafka", logfactory.Extra{"error": err.Error()})
	}
	writeFailure(w, http.StatusInternalServerError, msgNoKafka, "")
}

// poll returns the stored answer for a poll_id, once.
func (svc *Service) poll(w http.ResponseWriter, r *http.Request) {
	v, ok := svc.readValid(w, r, svc.pollSchema, "poll")
	if !ok {
		return
	}
	if !svc.RedisConnected() {
		writeFailure(w, http.StatusInternalServerError, msgNoRedis, "")
		return
	}
	pollID := v["poll_id"].(string)
	answer, err := svc.store.Take(r.Context(), pollID)
	switch {
	case errors.Is(err, answers.ErrNotFound):
		svc.log.Debug("poll key does not exist", logfactory.Extra{"poll_id": pollID})
		writeFailure(w, http.StatusNotFound, msgNoPoll, "")
	case err != nil:
		svc.log.Error("Failed to read a poll result from Redis", logfactory.Extra{"poll_id": pollID, "error": err.Error()})
		writeFailure(w, http.StatusInternalServerError, msgNoRedis, "")
	case !json.Valid(answer):
		svc.log.Warning("Unparseable JSON Received from redis", logfactory.Extra{"poll_id": pollID, "value": string(answer)})
		writeFailure(w, http.StatusInternalServerError, msgBadRedisJSON, "")
	default:
		svc.log.Debug("Found previous poll", logfactory.Extra{"poll_id": pollID})
		writeData(w, answer)
	}
}

func (svc *Service) badSchema(w http.ResponseWriter, cause string) {
	svc.log.Error("Invalid Schema", logfactory.Extra{"status": statusFailure, "error": map[string]any{"message": msgBadSchema, "cause": cause}})
	writeFailure(w, http.StatusBadRequest, msgBadSchema, cause)
}

// readValid reads a JSON body valid against schema, answering the client
// itself when it is not (readJSON, badSchema), and logs the endpoint's call.
func (svc *Service) readValid(w http.ResponseWriter, r *http.Request, schema *plugin.Schema, endpoint string) (map[string]any, bool) {
	_, v, ok := svc.readJSON(w, r)
	if !ok {
		return nil, false
	}
	if err := schema.Validate(v); err != nil {
		svc.badSchema(w, err.Error())
		return nil, false
	}
	svc.log.Info("'"+endpoint+"' endpoint called", logfactory.Extra{"content": v})
	obj, _ := v.(map[string]any) // the schemas want an object
	return obj, true
}

// readJSON reads a JSON request body (see readBody) of UTF-8 holding one
// JSON value that is not null. Otherwise it answers the failure and
// returns false.
func (svc *Service) readJSON(w http.ResponseWriter, r *http.Request) ([]byte, any, bool) {
	raw, ok := svc.readBody(w, r, false)
	if !ok {
		return nil, nil, false
	}
	if !utf8.Valid(raw) {
		svc.mustJSON(w, "the body is not UTF-8", false)
		return nil, nil, false
	}
	v, err := wirejson.Decode(raw)
	if err != nil {
		svc.mustJSON(w, err.Error(), false)
		return nil, nil, false
	}
	if v == nil {
		svc.mustJSON(w, "the body is null", false)
		return nil, nil, false
	}
	return raw, v, true
}

// readBody reads a request body whose content type is JSON
// (application/json or application/*+json, as Flask's get_json), of at
// most MAX_REQUEST_BYTES. Otherwise it answers the failure (with the cause
// when withCause) and returns false.
func (svc *Service) readBody(w http.ResponseWriter, r *http.Request, withCause bool) ([]byte, bool) {
	if !isJSON(r.Header.Get("Content-Type")) {
		svc.mustJSON(w, "content type is "+fmt.Sprintf("%q", r.Header.Get("Content-Type")), withCause)
		return nil, false
	}
	raw, err := readLimited(w, r, svc.maxBody)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			svc.log.Warning("Request too large", logfactory.Extra{"max_bytes": svc.maxBody})
			writeFailure(w, http.StatusRequestEntityTooLarge, msgTooLarge,
				fmt.Sprintf("The body must not be larger than %d bytes (MAX_REQUEST_BYTES).", svc.maxBody))
			return nil, false
		}
		svc.mustJSON(w, "reading the body: "+err.Error(), withCause)
		return nil, false
	}
	return raw, true
}

// readLimited reads at most limit bytes of body, in one allocation when the
// client gave the length.
func readLimited(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, limit)
	if n := r.ContentLength; n > 0 && n <= limit {
		buf := make([]byte, n)
		if _, err := io.ReadFull(body, buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	return io.ReadAll(body)
}

// mustJSON answers 400 "The payload must be valid JSON.", with why as the
// error's cause when withCause (the original gives none).
func (svc *Service) mustJSON(w http.ResponseWriter, why string, withCause bool) {
	svc.log.Error(msgMustJSON, logfactory.Extra{"cause": why})
	cause := ""
	if withCause {
		cause = why
	}
	writeFailure(w, http.StatusBadRequest, msgMustJSON, cause)
}

// isJSON reports whether a Content-Type names JSON.
func isJSON(contentType string) bool {
	if contentType == "application/json" {
		return true // the common case, without parsing
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}
