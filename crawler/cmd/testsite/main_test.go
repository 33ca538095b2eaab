package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli/clitest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// syncBuffer is a bytes.Buffer safe to read while the command writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestHelpDescribesTheFlags(t *testing.T) {
	clitest.ExpectContains(t, "help", clitest.Output(t, newRoot(), "--help"), "--addr", "--pages", "--fanout", "--depth", "--robots", "--peer", "/__hits")
}

func TestServesUntilCancelled(t *testing.T) {
	root := newRoot()
	var out syncBuffer
	root.SetOut(&out)
	root.SetArgs([]string{"--addr", "127.0.0.1:0", "--pages", "2"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	var base string
	re := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`)
	for deadline := time.Now().Add(10 * time.Second); base == ""; {
		select {
		case err := <-done:
			t.Fatalf("testsite stopped early: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no URL printed: %q", out.String())
		}
		base = re.FindString(out.String())
		time.Sleep(10 * time.Millisecond) // polling the output
	}
	resp, err := http.Get(base + "page/2")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Page 2") {
		t.Fatalf("GET /page/2: %d %s", resp.StatusCode, body)
	}
	cancel()
	harness.WaitDone(t, "testsite", 10*time.Second, done) // stops when cancelled
}
