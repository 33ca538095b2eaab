package zkwatch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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
	conn, events, err := zk.Connect(hosts, sessionTimeout, zk.WithLogger(log), zk.WithLogInfo(false))
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
