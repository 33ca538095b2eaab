package server

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

// Back-off between connection attempts while a service is unreachable: the
// original's retry policy (0.5 s doubling up to 10 s).
const (
	minBackoff = 500 * time.Millisecond
	maxBackoff = 10 * time.Second
)

// link keeps the state of the connection to one service (Redis or Kafka) for
// the index endpoint and the handlers. It checks the service every interval
// while it is up, and with back-off while it is down; a handler whose call
// failed reports it with lost, which marks the link down at once and
// rechecks. The clients themselves reconnect on their next call; the check
// is what tells the service that they can.
type link struct {
	name     string // "Redis" or "Kafka", for logs
	check    func(ctx context.Context) error
	interval time.Duration
	log      *logfactory.Logger
	up       atomic.Bool
	kick     chan struct{}
}

func newLink(name string, interval time.Duration, log *logfactory.Logger, check func(context.Context) error) *link {
	return &link{name: name, check: check, interval: interval, log: log, kick: make(chan struct{}, 1)}
}

// connected reports the last known state.
func (l *link) connected() bool { return l.up.Load() }

// lost marks the link down after a failed call and, if it was up, asks for
// a recheck at once.
func (l *link) lost(err error) {
	if !l.up.Swap(false) {
		return // already down: the back-off schedule stands
	}
	l.log.Error("Lost connection to "+l.name, logfactory.Extra{"error": err.Error()})
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// run checks the service until ctx is done.
func (l *link) run(ctx context.Context) {
	backoff := minBackoff
	for {
		err := l.check(ctx)
		if ctx.Err() != nil {
			return
		}
		wait := l.interval
		if err == nil {
			if !l.up.Swap(true) {
				l.log.Info("Connected successfully to " + l.name)
			}
			backoff = minBackoff
		} else {
			if l.up.Swap(false) {
				l.log.Error("Lost connection to "+l.name, logfactory.Extra{"error": err.Error()})
			} else {
				l.log.Warning("Unable to connect to "+l.name+"; retrying", logfactory.Extra{"error": err.Error(), "retry_in": backoff.String()})
			}
			wait = backoff
			backoff = min(backoff*2, maxBackoff)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-l.kick:
			t.Stop()
		}
	}
}
