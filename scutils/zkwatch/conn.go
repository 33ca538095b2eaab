package zkwatch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// Logger receives the watcher's and the ZooKeeper client's diagnostic lines.
// *log.Logger and *logrus.Logger satisfy it.
type Logger interface {
	Printf(format string, args ...any)
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

// clientLogger passes the ZooKeeper client's lines on with a prefix and keeps
// the last one, which names the cause when connecting gives up.
type clientLogger struct {
	next Logger
	last atomic.Value // string
}

func (l *clientLogger) Printf(format string, args ...any) {
	l.last.Store(fmt.Sprintf(format, args...))
	l.next.Printf("zkwatch: client: "+format, args...)
}

// withLast adds the client's last line to err, if there is one.
func (l *clientLogger) withLast(err error) error {
	if last, _ := l.last.Load().(string); last != "" {
		return fmt.Errorf("%w (last error: %s)", err, last)
	}
	return err
}

// SplitHosts turns a ZooKeeper connection string such as
// "zk1:2181, zk2:2181" (the ZOOKEEPER_HOSTS setting) into the Hosts list.
// Blanks around names and empty entries are dropped; a host without a port
// gets ZooKeeper's default port 2181 when connecting. Chroot suffixes
// ("zk1:2181/app") are not supported.
func SplitHosts(s string) []string { return settings.SplitList(s) }

// Dial connects to ZooKeeper and waits until the client holds a session, or
// until ctx ends. The returned connection reconnects by itself, as every
// go-zookeeper connection does; close it with Close. A nil logger discards
// the client's messages.
func Dial(ctx context.Context, hosts []string, sessionTimeout time.Duration, logger Logger) (*zk.Conn, error) {
	if len(hosts) == 0 {
		return nil, errors.New("connect to ZooKeeper: no hosts given")
	}
	if logger == nil {
		logger = discardLogger{}
	}
	if sessionTimeout <= 0 {
		sessionTimeout = DefaultSessionTimeout
	}
	log := &clientLogger{next: logger}
	conn, events, err := zkConnect(hosts, sessionTimeout, log)
	if err != nil {
		return nil, fmt.Errorf("connect to ZooKeeper %s: %w", strings.Join(hosts, ","), err)
	}
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				// events is not read any further; the client drops
				// events nobody reads, so that is safe.
				return conn, nil
			}
		case <-ctx.Done():
			conn.Close()
			return nil, fmt.Errorf("connect to ZooKeeper %s: %w", strings.Join(hosts, ","), log.withLast(ctx.Err()))
		}
	}
}

// EnsurePath creates the node at path and every missing parent, each with
// empty data and an open ACL, as kazoo's ensure_path does. Nodes that exist
// already are left as they are.
func EnsurePath(conn *zk.Conn, path string) error {
	if err := ValidatePath(path); err != nil {
		return err
	}
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		// Empty, not null, data: kazoo reads null as None, which the
		// original Python watcher cannot decode.
		_, err := conn.Create(path[:i], []byte{}, 0, zk.WorldACL(zk.PermAll))
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create ZooKeeper node %s: %w", path[:i], err)
		}
	}
	return nil
}

// ValidatePath checks the rules ZooKeeper applies to node paths: absolute, no
// empty, "." or ".." component, no trailing slash (except the root "/"), no
// control characters.
func ValidatePath(path string) error {
	switch {
	case path == "":
		return errors.New("ZooKeeper path is empty")
	case path[0] != '/':
		return fmt.Errorf("ZooKeeper path %q does not start with /", path)
	case path == "/":
		return nil
	case strings.HasSuffix(path, "/"):
		return fmt.Errorf("ZooKeeper path %q ends with /", path)
	}
	for _, part := range strings.Split(path[1:], "/") {
		switch part {
		case "":
			return fmt.Errorf("ZooKeeper path %q has an empty component", path)
		case ".", "..":
			return fmt.Errorf("ZooKeeper path %q has a relative component %q", path, part)
		}
	}
	for _, r := range path {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) {
			return fmt.Errorf("ZooKeeper path %q contains the control character %U", path, r)
		}
	}
	return nil
}

// zkConnect is zk.Connect with what every client of ours has: the bounded
// dialer, and the client's lines to log (its info lines dropped), plus
// extra options (go-zookeeper does not export its option type; its options
// are functions of the Conn and are applied here in order).
func zkConnect(hosts []string, sessionTimeout time.Duration, log *clientLogger, extra ...func(*zk.Conn)) (*zk.Conn, <-chan zk.Event, error) {
	return zk.Connect(hosts, sessionTimeout, zk.WithDialer(boundedDialer(sessionTimeout)), zk.WithLogger(log), zk.WithLogInfo(false),
		func(c *zk.Conn) {
			for _, o := range extra {
				o(c)
			}
		})
}

// boundedDialer is go-zookeeper's dialer (net.DialTimeout) with every read
// and write deadline the client sets cut to at most limit from now: the
// session timeout asked for. go-zookeeper gives the session handshake ten
// times its receive timeout, 67 s with a 10 s session, and a ZooKeeper
// server that is starting accepts connections for a moment without ever
// answering them (measured on ZooKeeper 3.8: about 6 of the 1,500
// connections made in its first 300 ms). A client that connected then
// held its caller's configuration back for over a minute; now it gives up
// after the session timeout and tries again. The deadlines the client sets
// once it has a session are shorter than limit already (two thirds of the
// session timeout), so they stay as they are.
func boundedDialer(limit time.Duration) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return &boundedConn{Conn: c, limit: limit}, nil
	}
}

// boundedConn is a connection whose deadlines are at most limit away.
type boundedConn struct {
	net.Conn
	limit time.Duration
}

func (c *boundedConn) SetDeadline(t time.Time) error      { return c.Conn.SetDeadline(c.bound(t)) }
func (c *boundedConn) SetReadDeadline(t time.Time) error  { return c.Conn.SetReadDeadline(c.bound(t)) }
func (c *boundedConn) SetWriteDeadline(t time.Time) error { return c.Conn.SetWriteDeadline(c.bound(t)) }

// bound returns t, or now+limit when t is later; the zero time (no
// deadline: the client clears its deadline after each exchange) stays.
func (c *boundedConn) bound(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	if latest := time.Now().Add(c.limit); t.After(latest) {
		return latest
	}
	return t
}

// backoffHosts wraps go-zookeeper's host provider to grow the pause between
// failed rounds over all hosts exponentially (with jitter), up to max. The
// client itself waits one second before each new round; the extra wait is
// added here. Next and Connected are called from the client's single
// connection goroutine only.
type backoffHosts struct {
	*zk.DNSHostProvider
	max   time.Duration
	stop  <-chan struct{}
	fails int
}

func (b *backoffHosts) Next() (string, bool) {
	server, retryStart := b.DNSHostProvider.Next()
	if retryStart {
		b.fails++
		if extra := backoffDelay(b.fails, b.max) - time.Second; extra > 0 {
			t := time.NewTimer(extra)
			select {
			case <-t.C:
			case <-b.stop:
				t.Stop()
			}
		}
	}
	return server, retryStart
}

func (b *backoffHosts) Connected() {
	b.fails = 0
	b.DNSHostProvider.Connected()
}

// backoffDelay is the pause before attempt n (1-based) after failures:
// 1s, 2s, 4s, ... capped at max, with ±20% jitter, never below 1s.
func backoffDelay(n int, max time.Duration) time.Duration {
	d := time.Second
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	d = time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
	if d < time.Second {
		d = time.Second
	}
	return d
}

// connect creates a go-zookeeper client that connects and reconnects in the
// background with back-off (backoffHosts), retrying with back-off while the
// client cannot even be created (a host name that does not resolve yet). It
// returns nil when ctx ends first. log receives the client's lines: one per
// failed connection attempt, with its error.
func connect(ctx context.Context, hosts []string, sessionTimeout, maxBackoff time.Duration, log *clientLogger, onEvent func(zk.Event)) (*zk.Conn, <-chan zk.Event) {
	for attempt := 1; ; attempt++ {
		hp := &backoffHosts{DNSHostProvider: zk.NewDNSHostProvider(), max: maxBackoff, stop: ctx.Done()}
		conn, events, err := zkConnect(hosts, sessionTimeout, log, zk.WithHostProvider(hp), zk.WithEventCallback(onEvent))
		if err == nil {
			return conn, events
		}
		log.Printf("connect to ZooKeeper %s: %v", strings.Join(hosts, ","), err)
		t := time.NewTimer(backoffDelay(attempt, maxBackoff))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, nil
		}
	}
}

// waitClosed waits for a closed client's goroutines to end (they close
// events when they do), bounded in case the server stopped answering
// mid-close.
func waitClosed(events <-chan zk.Event, sessionTimeout time.Duration, logger Logger) {
	limit := sessionTimeout + 2*time.Second
	t := time.NewTimer(limit)
	defer t.Stop()
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-t.C:
			logger.Printf("zkwatch: ZooKeeper client did not shut down within %s", limit)
			return
		}
	}
}

// ClientConfig configures a Client. Hosts is required; every other zero
// value is a sensible default.
type ClientConfig struct {
	// Hosts are the ZooKeeper servers as "host:port" (SplitHosts).
	Hosts []string
	// SessionTimeout is the session timeout asked for. Default 10s.
	SessionTimeout time.Duration
	// MaxBackoff caps the pause between reconnection rounds, which starts
	// at 1s and doubles. Default 10s.
	MaxBackoff time.Duration
	// Logger receives the client's lines: one per failed connection
	// attempt, with the attempt's error. Default: discarded.
	Logger Logger
}

// Client is a ZooKeeper connection that never makes its owner wait for
// ZooKeeper: NewClient returns at once, and the connection is made, and
// made again after an outage, in the background, pausing 1s, 2s, 4s, ... up
// to MaxBackoff between rounds over the hosts (also while a host name does
// not resolve). Use HasSession before sending a request: go-zookeeper keeps
// requests made without a session until it reconnects. Its methods are safe
// for concurrent use.
type Client struct {
	cfg    ClientConfig
	conn   atomic.Pointer[zk.Conn]
	cancel context.CancelFunc
	done   chan struct{}
}

// NewClient starts connecting to cfg.Hosts in the background. It fails only
// when no host is given.
func NewClient(cfg ClientConfig) (*Client, error) {
	if len(cfg.Hosts) == 0 {
		return nil, errors.New("connect to ZooKeeper: no hosts given")
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.Logger == nil {
		cfg.Logger = discardLogger{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{cfg: cfg, cancel: cancel, done: make(chan struct{})}
	go c.run(ctx)
	return c, nil
}

func (c *Client) run(ctx context.Context) {
	defer close(c.done)
	conn, events := connect(ctx, c.cfg.Hosts, c.cfg.SessionTimeout, c.cfg.MaxBackoff, &clientLogger{next: c.cfg.Logger}, func(zk.Event) {})
	if conn == nil {
		return
	}
	c.conn.Store(conn)
	<-ctx.Done()
	conn.Close()
	waitClosed(events, c.cfg.SessionTimeout, c.cfg.Logger)
}

// Conn returns the go-zookeeper connection, or nil before it was created or
// after Close.
func (c *Client) Conn() *zk.Conn {
	select {
	case <-c.done:
		return nil
	default:
		return c.conn.Load()
	}
}

// HasSession reports whether the client holds a ZooKeeper session now, so
// a request would be sent at once.
func (c *Client) HasSession() bool {
	conn := c.Conn()
	return conn != nil && conn.State() == zk.StateHasSession
}

// Close closes the connection and returns when the client's goroutines are
// gone (within about the session timeout). Calling it again does nothing.
func (c *Client) Close() {
	c.cancel()
	<-c.done
}
