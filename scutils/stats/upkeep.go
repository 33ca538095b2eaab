package stats

import (
	"context"
	"time"
)

// upkeep runs a counter's periodic maintenance in one goroutine; the original
// runs a thread per counter for the same purpose.
type upkeep struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// launch runs work now and then every interval until ctx is done or Stop is
// called. It starts nothing when interval is not positive.
func (u *upkeep) launch(ctx context.Context, interval time.Duration, work func(context.Context) error, onError func(error)) {
	if interval <= 0 {
		return
	}
	ctx, u.cancel = context.WithCancel(ctx)
	u.done = make(chan struct{})
	go u.run(ctx, interval, work, onError)
}

func (u *upkeep) run(ctx context.Context, interval time.Duration, work func(context.Context) error, onError func(error)) {
	defer close(u.done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if err := work(ctx); err != nil && ctx.Err() == nil && onError != nil {
			onError(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Stop ends the background upkeep (trimming expired hits, deleting old step
// keys) and waits until its goroutine has returned. It is safe to call more
// than once. The counter stays usable; Maintain still works on demand.
func (u *upkeep) Stop() {
	if u.cancel == nil {
		return
	}
	u.cancel()
	<-u.done
}

// Close calls Stop and returns nil, so a counter is an io.Closer.
func (u *upkeep) Close() error {
	u.Stop()
	return nil
}
