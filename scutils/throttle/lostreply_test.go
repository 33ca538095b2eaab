package throttle_test

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisqueue"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/throttle"
)

// replyDropper is a TCP proxy to Redis that, once armed, closes the
// connection instead of passing on the next answer: as a Redis restart
// does to a command it ran but did not answer.
type replyDropper struct {
	ln    net.Listener
	armed atomic.Bool
}

func startReplyDropper(t *testing.T, to string) *replyDropper {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &replyDropper{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", to)
			if err != nil {
				c.Close()
				continue
			}
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			go p.answers(c, s)
		}
	}()
	return p
}

func (p *replyDropper) answers(c, s net.Conn) {
	defer c.Close()
	defer s.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 && p.armed.CompareAndSwap(true, false) {
			return // the answer is lost with the connection
		}
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// A leased pop whose answer is lost with its connection is sent again by
// go-redis (its default retries, as every component's client has): the
// items the first run popped are answered, not lost.
func TestAPopWhoseAnswerIsLostIsNotLost(t *testing.T) {
	ctx := context.Background()
	l, c, _ := leasedQueue(t, 30*time.Second, 5, 10)
	p := startReplyDropper(t, server.Addr)
	via := redis.NewClient(&redis.Options{Addr: p.ln.Addr().String(), ReadTimeout: 5 * time.Second})
	defer via.Close()
	tq, err := throttle.New(via, redisqueue.NewPriority[string](via, "link:a.com:queue"), throttle.Config{Window: time.Minute, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	// A pop answered: the script is loaded, a connection in the pool.
	if res, err := tq.AttemptN(ctx, l.New(), 1); err != nil || res.Raw != `"item-9"` {
		t.Fatalf("first pop %+v, %v", res, err)
	}
	p.armed.Store(true)
	res, err := tq.AttemptN(ctx, l.New(), 1)
	if err != nil || res.Status != throttle.Popped || res.Raw != `"item-8"` {
		t.Fatalf("pop with its first answer lost: %+v, %v; want item-8", res, err)
	}
	if p.armed.Load() {
		t.Fatal("no answer was dropped")
	}
	if n := c.ZCard(ctx, "link:a.com:queue").Val(); n != 8 {
		t.Fatalf("%d items queued, want 8 (two popped, leased)", n)
	}
	if n, _ := l.Count(ctx); n != 2 {
		t.Fatalf("%d leases, want 2", n)
	}
}
