package server

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// accessLogged writes a line per request to w, in the format of the Flask
// development server the original runs on (FLASK_LOGGING_ENABLED):
//
//	127.0.0.1 - - [11/Nov/2016 09:51:26] "GET / HTTP/1.1" 200 -
//
// with the body size in place of the dash.
func accessLogged(next http.Handler, w io.Writer) http.Handler {
	var mu sync.Mutex
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: rw, code: http.StatusOK}
		next.ServeHTTP(sw, r)
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		line := make([]byte, 0, 128)
		line = append(line, host...)
		line = append(line, " - - ["...)
		line = time.Now().AppendFormat(line, "02/Jan/2006 15:04:05")
		line = append(line, "] \""...)
		line = append(line, r.Method...)
		line = append(line, ' ')
		line = append(line, r.RequestURI...)
		line = append(line, ' ')
		line = append(line, r.Proto...)
		line = append(line, "\" "...)
		line = strconv.AppendInt(line, int64(sw.code), 10)
		line = append(line, ' ')
		line = strconv.AppendInt(line, sw.size, 10)
		line = append(line, '\n')
		mu.Lock()
		_, _ = w.Write(line)
		mu.Unlock()
	})
}

// statusWriter remembers the status code and body size written.
type statusWriter struct {
	http.ResponseWriter
	code int
	size int64
}

func (s *statusWriter) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	n, err := s.ResponseWriter.Write(p)
	s.size += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
