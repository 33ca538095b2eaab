package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
)

// The status and messages of the answers, as the original REST service words them.
const (
	statusSuccess = "SUCCESS"
	statusFailure = "FAILURE"

	msgUnknownError  = "An error occurred while processing your request."
	msgMustJSON      = "The payload must be valid JSON."
	msgDoesNotExist  = "The desired endpoint does not exist"
	msgBadSchema     = "JSON did not validate against schema."
	msgNoKafka       = "Unable to connect to Kafka"
	msgNoRedis       = "Unable to connect to Redis"
	msgNoPoll        = "Could not find matching poll_id"
	msgBadRedisJSON  = "Unparseable JSON Received from redis"
	msgNotAllowed    = "The method is not allowed for the requested URL."
	msgTooLarge      = "The payload is too large."
	msgTooLargeKafka = "The payload is larger than Kafka accepts."
)

// envelope is the wrapper of every answer but the index's.
type envelope struct {
	Data   json.RawMessage `json:"data"`
	Error  *apiError       `json:"error"`
	Status string          `json:"status"`
}

// apiError is the envelope's error object.
type apiError struct {
	Cause   string `json:"cause,omitempty"`
	Message string `json:"message"`
}

// indexAnswer is the index endpoint's answer.
type indexAnswer struct {
	KafkaConnected bool   `json:"kafka_connected"`
	MyID           string `json:"my_id"`
	NodeHealth     string `json:"node_health"`
	RedisConnected bool   `json:"redis_connected"`
	UptimeSec      int64  `json:"uptime_sec"`
}

// health is the index's node_health: GREEN with both Kafka and Redis,
// YELLOW with one, RED with none.
func health(kafka, redis bool) string {
	switch {
	case kafka && redis:
		return "GREEN"
	case kafka || redis:
		return "YELLOW"
	}
	return "RED"
}

// encode writes v as the original's Flask jsonify does: keys in order,
// two-space indent, a final newline.
func encode(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		// Only data that is not JSON could fail, and callers check it first.
		return encode(envelope{Status: statusFailure, Error: &apiError{Message: msgUnknownError, Cause: err.Error()}})
	}
	return buf.Bytes()
}

// successNoData is the answer to a crawl request, built once.
var successNoData = encode(envelope{Status: statusSuccess})

func writeBody(w http.ResponseWriter, code int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// writeData answers SUCCESS with data (JSON text; nil is null).
func writeData(w http.ResponseWriter, data []byte) {
	writeBody(w, http.StatusOK, encode(envelope{Status: statusSuccess, Data: data}))
}

// writeFailure answers FAILURE with code, message and an optional cause.
func writeFailure(w http.ResponseWriter, code int, message, cause string) {
	writeBody(w, code, encode(envelope{Status: statusFailure, Error: &apiError{Message: message, Cause: cause}}))
}
