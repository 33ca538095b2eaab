// Package zkwatch watches a configuration node in ZooKeeper and tells the
// program when it changes: the Go counterpart of Scrapy Cluster's
// ZookeeperWatcher (scutils/zookeeper_watcher.py).
//
// It is a circuit breaker around ZooKeeper. The program keeps working with the
// last good configuration while ZooKeeper is unreachable; the watcher
// reconnects with back-off, re-arms its watches and delivers whatever changed
// while it was away.
//
// # Modes
//
// In the plain mode the node at Config.Path holds the configuration. In the
// pointer mode (Config.Pointer) that node holds the path of another node that
// holds the configuration, so a bank of configurations can live in ZooKeeper
// and a program is switched between them by rewriting its pointer. Changes to
// the pointer and to the node it points at are both followed.
//
// # Polling and events
//
// Use any mix of the two. Poll with IsValid and GetFileContents, or set the
// handlers OnConfig, OnValid and OnError, which are called once per actual
// change:
//
//   - OnConfig(contents) when the configuration read from ZooKeeper differs
//     from the previous one. An empty node at start-up does not call it.
//   - OnValid(valid) when IsValid changes.
//   - OnError(msg) when the watcher enters a new kind of trouble, with one of
//     the original's messages: MsgBadConnection, MsgInvalidGet,
//     MsgInvalidPointer.
//
// When a change makes the configuration valid, OnConfig is called before
// OnValid(true); when it becomes invalid, OnValid(false) comes before
// OnError, as in the original.
//
// # What the contents are while something is wrong
//
//   - ZooKeeper unreachable (connection lost, server restarting): IsValid is
//     false, OnError(MsgBadConnection) is called once, and GetFileContents
//     keeps returning the last good configuration. After the reconnection the
//     nodes are read again: OnConfig is called only if they changed, then
//     OnValid(true).
//   - ZooKeeper reachable but saying there is no configuration (the watched
//     node, or in pointer mode the pointed-at node, does not exist, or the
//     pointer is empty or not a valid path): IsValid is false and
//     GetFileContents returns "". When the configuration comes back OnConfig
//     is called with it, even if it equals what was there before.
//
// This differs from the original, which after a lost session forgot the old
// contents and called the config handler again with unchanged contents. A
// program should therefore keep its configuration on MsgBadConnection (the
// original crawler reverted to its defaults on every error).
//
// # Outages
//
// The client reconnects by itself, pausing 1s, 2s, 4s, ... up to
// Config.MaxBackoff between rounds over the hosts. After a short outage the
// session survives and the client re-registers its watches; if the server
// expired the session meanwhile, a new one is created and the watches are
// armed again. Either way the nodes are read as soon as a session is back, so
// changes made while the watcher was away are delivered. The nodes are also
// read every Config.ResyncInterval as a safety net against a lost watch.
//
// Handlers are called one at a time from the watcher's goroutine.
//
// # Connections without a watcher
//
// A program that reads and writes nodes itself (the Redis Monitor applying
// domain changes) uses a Client: it connects in the background with the
// same back-off, so ZooKeeper need not be up when the program starts, and
// it logs one line per failed attempt, with the attempt's error. Dial, for
// short-lived tools, waits for a session instead.
//
// # Pointer contents
//
// The pointer node's contents are trimmed of surrounding white space before
// they are used as a path, so "/conf/a\n" points at /conf/a. (The original
// treated a trailing newline as an invalid pointer.) GetPointerContents
// returns the pointer node's contents untrimmed.
package zkwatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// Messages passed to Config.OnError; the same strings as the original's, so
// logs and dashboards keep matching.
const (
	// MsgInvalidPointer: the pointer is empty, is not a valid path, or points
	// at a node that does not exist.
	MsgInvalidPointer = "Invalid pointer path"
	// MsgInvalidGet: the watched node does not exist or cannot be read.
	MsgInvalidGet = "Invalid get on file path"
	// MsgBadConnection: the connection to ZooKeeper was lost; the last good
	// contents are kept while the watcher reconnects.
	MsgBadConnection = "Connection interrupted with Zookeeper, re-establishing"
)

// Defaults for the zero values of Config's durations.
const (
	DefaultSessionTimeout = 10 * time.Second
	DefaultConnectTimeout = 15 * time.Second
	DefaultMaxBackoff     = 10 * time.Second
	DefaultResyncInterval = time.Minute
)

// Config configures a Watcher. Hosts and Path are required; every other zero
// value is a sensible default.
type Config struct {
	// Hosts are the ZooKeeper servers as "host:port" (port 2181 when
	// missing). SplitHosts turns a "h1:2181,h2:2181" string into this list.
	Hosts []string
	// Path is the absolute path of the watched node, e.g.
	// "/scrapy-cluster/crawler/all".
	Path string
	// Pointer: the node at Path holds the path of the node with the real
	// configuration. Default false.
	Pointer bool
	// Ensure: create the node at Path (and its parents, empty) whenever it is
	// found missing, so it always exists. Default false.
	Ensure bool
	// ValidInit: New waits until it has connected and read the nodes once,
	// and fails if that does not happen within ConnectTimeout. Default false:
	// New returns at once and connects in the background. (The original's
	// default is true; set it for the same behaviour.)
	ValidInit bool

	// SessionTimeout is the ZooKeeper session timeout asked for; the server
	// bounds it (by default to 2-20 ticks). Default 10s.
	SessionTimeout time.Duration
	// ConnectTimeout bounds New's wait when ValidInit is set. Default 15s.
	ConnectTimeout time.Duration
	// MaxBackoff caps the pause between reconnection rounds, which starts
	// at 1s and doubles. Default 10s.
	MaxBackoff time.Duration
	// ResyncInterval: how often the nodes are read again without a watch
	// event, a safety net against a watch the server lost. Default 1m;
	// negative disables it.
	ResyncInterval time.Duration

	// OnValid is called with the new validity each time IsValid changes.
	OnValid func(valid bool)
	// OnConfig is called with the new configuration each time it changes.
	OnConfig func(contents string)
	// OnError is called with one of the Msg* messages when the watcher
	// enters a new kind of trouble.
	OnError func(msg string)
	// Logger receives diagnostic lines (connection changes, read errors).
	// Default: discarded.
	Logger Logger
}

func (c Config) withDefaults() Config {
	positiveOr(&c.SessionTimeout, DefaultSessionTimeout)
	positiveOr(&c.ConnectTimeout, DefaultConnectTimeout)
	positiveOr(&c.MaxBackoff, DefaultMaxBackoff)
	if c.ResyncInterval == 0 {
		c.ResyncInterval = DefaultResyncInterval
	}
	if c.Logger == nil {
		c.Logger = discardLogger{}
	}
	return c
}

// positiveOr sets *d to def unless it is positive.
func positiveOr(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

// Watcher watches one configuration node (two in pointer mode). Its methods
// are safe for concurrent use. Handlers are called one at a time from the
// watcher's own goroutine; they should return promptly and must not call
// Close (Close waits for that goroutine).
type Watcher struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	// ready is closed after the first read of the nodes (ValidInit waits).
	ready     chan struct{}
	readyOnce sync.Once

	conn   atomic.Pointer[zk.Conn]
	kick   chan struct{} // coalesced "something happened" from the client
	client *clientLogger // keeps the last connection error for New's message

	// watches holds, per path, the watch armed on it. A watch fires once and
	// must then be armed again. Only the run goroutine uses the map.
	watches map[string]*watch

	mu sync.RWMutex
	st state
}

// watch is one armed ZooKeeper watch. A goroutine waits for it to fire, marks
// it and wakes the run loop, so the loop never mistakes a watch that has just
// fired for an armed one.
type watch struct{ fired atomic.Bool }

// state is what the watcher currently knows. problem is the Msg* of the
// current trouble, "" when valid.
type state struct {
	valid    bool
	contents string
	pointer  string
	problem  string
}

// New starts watching cfg.Path. Cancelling ctx stops the watcher as Close
// does. With cfg.ValidInit, New returns only after the first read, or an
// error when ZooKeeper could not be reached within cfg.ConnectTimeout.
func New(ctx context.Context, cfg Config) (*Watcher, error) {
	if len(cfg.Hosts) == 0 {
		return nil, errors.New("start ZooKeeper watcher: no hosts given")
	}
	if err := ValidatePath(cfg.Path); err != nil {
		return nil, fmt.Errorf("start ZooKeeper watcher: %w", err)
	}
	cfg = cfg.withDefaults()
	w := &Watcher{
		cfg:     cfg,
		done:    make(chan struct{}),
		ready:   make(chan struct{}),
		kick:    make(chan struct{}, 1),
		client:  &clientLogger{next: cfg.Logger},
		watches: make(map[string]*watch),
	}
	w.ctx, w.cancel = context.WithCancel(ctx)
	go w.run()
	if !cfg.ValidInit {
		return w, nil
	}

	timer := time.NewTimer(cfg.ConnectTimeout)
	defer timer.Stop()
	var err error
	select {
	case <-w.ready:
		return w, nil
	case <-timer.C:
		err = w.client.withLast(fmt.Errorf("no session within %s", cfg.ConnectTimeout))
	case <-ctx.Done():
		err = ctx.Err()
	}
	w.Close()
	return nil, fmt.Errorf("connect to ZooKeeper %s: %w", strings.Join(cfg.Hosts, ","), err)
}

// IsValid reports whether the watcher is connected and the watched nodes hold
// a configuration. Use it for polling.
func (w *Watcher) IsValid() bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.st.valid
}

// GetFileContents returns the current configuration: the watched node's
// contents, or in pointer mode the pointed-at node's. While ZooKeeper is
// unreachable it is the last good configuration; when ZooKeeper says there is
// none (missing node, invalid pointer) it is "".
func (w *Watcher) GetFileContents() string {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.st.contents
}

// GetPointerContents returns the pointer node's contents as stored
// (untrimmed) in pointer mode, and "" otherwise.
func (w *Watcher) GetPointerContents() string {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.st.pointer
}

// Ping reports whether ZooKeeper answers right now, with one round trip. It
// returns false at once when there is no session, and otherwise within about
// the session timeout.
func (w *Watcher) Ping() bool {
	conn := w.conn.Load()
	if conn == nil || conn.State() != zk.StateHasSession || w.ctx.Err() != nil {
		return false
	}
	_, _, err := conn.Exists("/")
	return err == nil
}

// Done returns a channel closed when the watcher has stopped, after Close or
// when the context given to New ends.
func (w *Watcher) Done() <-chan struct{} { return w.done }

// Close stops the watcher and closes its ZooKeeper session, and returns when
// its goroutines are gone. Calling it again does nothing. Afterwards IsValid
// is false and GetFileContents keeps the last contents; no handler is called.
func (w *Watcher) Close() {
	w.cancel()
	<-w.done
}

// run owns the ZooKeeper connection: it reads the nodes whenever the client
// reports something (a watch fired, the session came or went), and on a timer.
func (w *Watcher) run() {
	defer close(w.done)
	defer func() {
		w.mu.Lock()
		w.st.valid = false
		w.mu.Unlock()
	}()

	conn, events := connect(w.ctx, w.cfg.Hosts, w.cfg.SessionTimeout, w.cfg.MaxBackoff, w.client, w.onEvent)
	if conn == nil {
		return
	}
	w.conn.Store(conn)
	// Closing the connection as soon as ctx ends also unblocks a read in
	// flight, so Close is prompt.
	stopClose := context.AfterFunc(w.ctx, conn.Close)
	defer func() {
		stopClose()
		conn.Close()
		waitClosed(events, w.cfg.SessionTimeout, w.cfg.Logger)
	}()

	var resync <-chan time.Time
	if w.cfg.ResyncInterval > 0 {
		t := time.NewTicker(w.cfg.ResyncInterval)
		defer t.Stop()
		resync = t.C
	}
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()

	up := false // whether the last look found a session
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-w.kick:
		case <-resync:
		case <-retry.C:
		}
		if w.ctx.Err() != nil {
			return
		}
		if conn.State() != zk.StateHasSession {
			if up {
				up = false
				w.cfg.Logger.Printf("zkwatch: lost the ZooKeeper connection; keeping the last configuration while reconnecting")
				w.update(func(s state) state {
					s.valid, s.problem = false, MsgBadConnection
					return s
				})
			}
			continue
		}
		if !up {
			w.cfg.Logger.Printf("zkwatch: ZooKeeper session 0x%x established with %s", conn.SessionID(), conn.Server())
		}
		up = true
		if err := w.sync(conn); err != nil {
			if w.ctx.Err() != nil {
				return
			}
			// A connection error: the client reports the disconnection
			// too, but try again in case it does not.
			w.cfg.Logger.Printf("zkwatch: read %s: %v; retrying", w.cfg.Path, err)
			retry.Reset(time.Second)
			continue
		}
		w.readyOnce.Do(func() { close(w.ready) })
	}
}

// onEvent is called by the client for every event; it must not block. It
// wakes the run loop on session changes; fired watches wake it through arm.
func (w *Watcher) onEvent(ev zk.Event) {
	if ev.Type == zk.EventSession {
		w.wake()
	}
}

// wake makes the run loop look at the connection and read the nodes again.
func (w *Watcher) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// sync reads the watched node (and in pointer mode the node it points at),
// arming watches where none is armed, and applies what it found. It returns an
// error only for connection trouble, which leaves the state unchanged.
func (w *Watcher) sync(conn *zk.Conn) error {
	data, ok, err := w.readOr(conn, w.cfg.Path, w.cfg.Ensure, "", func(state) state { return state{problem: MsgInvalidGet} })
	if !ok {
		return err
	}
	if !w.cfg.Pointer {
		w.update(func(state) state { return state{valid: true, contents: string(data)} })
		return nil
	}

	pointer := string(data)
	target := strings.TrimSpace(pointer)
	invalid := func(state) state { return state{pointer: pointer, problem: MsgInvalidPointer} }
	if ValidatePath(target) != nil {
		w.cfg.Logger.Printf("zkwatch: pointer %s holds %q, not a node path", w.cfg.Path, pointer)
		w.update(invalid)
		return nil
	}
	missing := fmt.Sprintf("pointer %s points at %s, which does not exist", w.cfg.Path, target)
	if data, ok, err = w.readOr(conn, target, false, missing, invalid); !ok {
		return err
	}
	w.update(func(state) state { return state{valid: true, contents: string(data), pointer: pointer} })
	return nil
}

// readOr reads path for sync (read). When the node is missing or cannot be
// read it logs why (missing, when not "", says it of a missing node) and
// sets the state bad gives, and ok is false; err is only connection trouble,
// which leaves the state unchanged.
func (w *Watcher) readOr(conn *zk.Conn, path string, ensure bool, missing string, bad func(state) state) (data []byte, ok bool, err error) {
	data, found, err := w.read(conn, path, ensure)
	switch {
	case isConnectionError(err):
		return nil, false, err
	case err != nil:
		w.cfg.Logger.Printf("zkwatch: %v", err)
	case found:
		return data, true, nil
	case missing != "":
		w.cfg.Logger.Printf("zkwatch: %s", missing)
	}
	w.update(bad)
	return nil, false, nil
}

// read returns the node's data and whether it exists, making sure a watch is
// armed on it: a data watch while it exists, an existence watch while it does
// not, so its creation is seen too. With ensure a missing node is created.
func (w *Watcher) read(conn *zk.Conn, path string, ensure bool) ([]byte, bool, error) {
	for range 3 {
		var data []byte
		var err error
		if w.armed(path) {
			data, _, err = conn.Get(path)
		} else {
			var ch <-chan zk.Event
			data, _, ch, err = conn.GetW(path)
			if err == nil {
				w.arm(path, ch)
			}
		}
		if err == nil {
			return data, true, nil
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return nil, false, fmt.Errorf("read ZooKeeper node %s: %w", path, err)
		}
		if ensure {
			w.cfg.Logger.Printf("zkwatch: creating missing node %s", path)
			if err := EnsurePath(conn, path); err != nil {
				return nil, false, err
			}
			continue
		}
		if !w.armed(path) {
			exists, _, ch, err := conn.ExistsW(path)
			if err != nil {
				return nil, false, fmt.Errorf("watch for ZooKeeper node %s: %w", path, err)
			}
			w.arm(path, ch)
			if exists { // created in the meantime: read it
				continue
			}
		}
		return nil, false, nil
	}
	return nil, false, fmt.Errorf("read ZooKeeper node %s: it keeps appearing and disappearing", path)
}

// arm records the watch on path whose events come on ch, and wakes the run
// loop when it fires (or is dropped with an expired or closed session).
func (w *Watcher) arm(path string, ch <-chan zk.Event) {
	wt := &watch{}
	w.watches[path] = wt
	go func() {
		select {
		case <-ch:
			wt.fired.Store(true)
			w.wake()
		case <-w.ctx.Done():
		}
	}()
}

// armed reports whether a watch on path is armed and has not fired yet.
func (w *Watcher) armed(path string) bool {
	wt, ok := w.watches[path]
	if ok && wt.fired.Load() {
		delete(w.watches, path)
		return false
	}
	return ok
}

// update replaces the state with next(current) and calls the handlers for
// what changed. Contents are kept only when next keeps them.
func (w *Watcher) update(next func(state) state) {
	w.mu.Lock()
	old := w.st
	w.st = next(old)
	cur := w.st
	w.mu.Unlock()
	if w.ctx.Err() != nil {
		return // stopping: no more handler calls
	}

	if cur.valid {
		if cur.contents != old.contents && w.cfg.OnConfig != nil {
			w.cfg.OnConfig(cur.contents)
		}
		if !old.valid && w.cfg.OnValid != nil {
			w.cfg.OnValid(true)
		}
		return
	}
	if old.valid && w.cfg.OnValid != nil {
		w.cfg.OnValid(false)
	}
	if cur.problem != old.problem && w.cfg.OnError != nil {
		w.cfg.OnError(cur.problem)
	}
}

// isConnectionError tells errors that say nothing about the node (the
// connection or session failed; retry) from answers about it.
func isConnectionError(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrSessionMoved) ||
		errors.Is(err, zk.ErrClosing)
}
