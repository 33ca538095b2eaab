package lifecycle_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/lifecycle"
)

func TestSleepIsInterruptedByCancellation(t *testing.T) {
	if !lifecycle.Sleep(context.Background(), time.Millisecond) {
		t.Fatal("an uninterrupted sleep reported cancellation")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if lifecycle.Sleep(ctx, time.Hour) || time.Since(start) > time.Second {
		t.Fatal("a cancelled sleep did not return at once")
	}
}

func TestWithGraceOutlivesTheSignalByTheGrace(t *testing.T) {
	ctx, signal := context.WithCancel(context.Background())
	work, stop := lifecycle.WithGrace(ctx, 200*time.Millisecond)
	defer stop()
	signal()
	if work.Err() != nil {
		t.Fatal("work cancelled with the signal")
	}
	select {
	case <-work.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("work never cancelled after the grace")
	}
	// stop ends the work context at once.
	work2, stop2 := lifecycle.WithGrace(context.Background(), time.Hour)
	stop2()
	if work2.Err() == nil {
		t.Fatal("stop did not cancel the work context")
	}
}

func TestEveryTicksUntilStopIsClosed(t *testing.T) {
	stop := make(chan struct{})
	ticks := make(chan time.Time, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		lifecycle.Every(stop, time.Millisecond, func(now time.Time) { ticks <- now })
	}()
	var last time.Time
	for range 3 {
		select {
		case now := <-ticks:
			if !now.After(last) {
				t.Fatalf("tick at %v after one at %v", now, last)
			}
			last = now
		case <-time.After(10 * time.Second):
			t.Fatal("no tick within 10 s")
		}
	}
	close(stop)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Every did not return after stop was closed")
	}
}

// slowServer serves, with ServeHTTP and grace, a handler whose /slow
// requests wait for release (each announced on started); it returns the
// server's URL, what ends it and where ServeHTTP's error comes.
func slowServer(t *testing.T, grace time.Duration, started, release chan struct{}) (string, context.CancelFunc, <-chan error) {
	t.Helper()
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			started <- struct{}{}
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- lifecycle.ServeHTTP(ctx, &http.Server{Handler: handler}, ln, grace) }()
	t.Cleanup(cancel)
	return "http://" + ln.Addr().String(), cancel, errc
}

// get requests url in the background; its error comes on the channel.
func get(url string) <-chan error {
	done := make(chan error, 1)
	go func() {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	return done
}

func returned(t *testing.T, errc <-chan error) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("ServeHTTP did not return")
		return nil
	}
}

// ServeHTTP answers until its context ends, then lets the requests in
// flight finish within the grace and returns nil.
func TestServeHTTPLetsTheRequestsInFlightFinish(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	url, shutdown, errc := slowServer(t, 30*time.Second, started, release)
	if err := <-get(url + "/"); err != nil {
		t.Fatal(err)
	}
	slow := get(url + "/slow")
	<-started
	shutdown()
	close(release)
	if err := <-slow; err != nil {
		t.Errorf("the request in flight at shutdown failed: %v", err)
	}
	if err := returned(t, errc); err != nil {
		t.Errorf("a graceful shutdown returned %v", err)
	}
}

// A request that outlasts the grace is cut, and the shutdown says so; a
// listener that fails is the error at once.
func TestServeHTTPReportsWhatItCutAndAFailedListener(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	url, shutdown, errc := slowServer(t, 50*time.Millisecond, started, release)
	get(url + "/slow")
	<-started
	shutdown()
	if err := returned(t, errc); err == nil || !strings.Contains(err.Error(), "shut down the http server on 127.0.0.1:") {
		t.Errorf("a shutdown that cut a request returned %v", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	err = lifecycle.ServeHTTP(context.Background(), &http.Server{}, ln, time.Second)
	if err == nil || !strings.Contains(err.Error(), "serve http on 127.0.0.1:") {
		t.Errorf("a closed listener: got %v", err)
	}
}
