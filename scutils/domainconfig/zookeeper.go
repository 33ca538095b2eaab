package domainconfig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/zkwatch"
)

// ZooKeeperStore keeps the document as the data of a ZooKeeper node, where
// the crawlers (Go and Python) watch it. Writes are Set with the version
// read, so concurrent writers never overwrite each other's changes. While the
// connection is down, calls wait for it to come back (the client reconnects
// by itself) until their ctx ends, and then fail with ErrUnavailable;
// Connected tells beforehand.
type ZooKeeperStore struct {
	conn   func() *zk.Conn // nil while there is none yet
	close  func()          // closes what the store owns
	path   string
	closed atomic.Bool
}

// NewZooKeeperStore uses conn (which the caller keeps and closes) for the
// node at path. The node and its parents are created on the first write.
func NewZooKeeperStore(conn *zk.Conn, path string) (*ZooKeeperStore, error) {
	if err := zkwatch.ValidatePath(path); err != nil {
		return nil, err
	}
	return &ZooKeeperStore{conn: func() *zk.Conn { return conn }, close: func() {}, path: path}, nil
}

// DialZooKeeper connects to hosts (waiting for a session until ctx ends) and
// returns a store for the node at path that owns the connection: Close
// closes it. log may be nil.
func DialZooKeeper(ctx context.Context, hosts []string, path string, log *logfactory.Logger) (*ZooKeeperStore, error) {
	if err := zkwatch.ValidatePath(path); err != nil {
		return nil, err
	}
	conn, err := zkwatch.Dial(ctx, hosts, zkwatch.DefaultSessionTimeout, zkLogger(log, logfactory.LevelWarning))
	if err != nil {
		return nil, err
	}
	return &ZooKeeperStore{conn: func() *zk.Conn { return conn }, close: conn.Close, path: path}, nil
}

// OpenZooKeeper returns at once a store for the node at path on hosts that
// owns its connection (Close closes it): the connection is made in the
// background, and made again after each outage, with back-off (see
// zkwatch.Client), so ZooKeeper need not be up when a component starts.
// log (may be nil) receives one warning per failed connection attempt, with
// its error.
func OpenZooKeeper(hosts []string, path string, log *logfactory.Logger) (*ZooKeeperStore, error) {
	if err := zkwatch.ValidatePath(path); err != nil {
		return nil, err
	}
	client, err := zkwatch.NewClient(zkwatch.ClientConfig{Hosts: hosts, Logger: zkLogger(log, logfactory.LevelWarning)})
	if err != nil {
		return nil, err
	}
	return &ZooKeeperStore{conn: client.Conn, close: client.Close, path: path}, nil
}

// Path is the node's path.
func (s *ZooKeeperStore) Path() string { return s.path }

// Connected reports whether the store holds a ZooKeeper session, so a call
// would be sent at once rather than wait for the connection.
func (s *ZooKeeperStore) Connected() bool { return !s.closed.Load() && s.session() != nil }

// session returns the connection if it holds a session, else nil.
func (s *ZooKeeperStore) session() *zk.Conn {
	if conn := s.conn(); conn != nil && conn.State() == zk.StateHasSession {
		return conn
	}
	return nil
}

// Close closes the connection if the store owns it. Calls after Close
// fail with zk.ErrClosing.
func (s *ZooKeeperStore) Close() error {
	if !s.closed.Swap(true) {
		s.close()
	}
	return nil
}

// Get reads the document; a missing or empty node is the empty document.
func (s *ZooKeeperStore) Get(ctx context.Context) (Document, error) {
	var doc Document
	err := s.retry(ctx, func() error {
		data, _, err := s.read(ctx)
		if err != nil {
			return err
		}
		if doc, err = Parse(data); err != nil {
			return fmt.Errorf("%w at %s: %w", ErrRead, s.path, err)
		}
		return nil
	})
	return doc, err
}

// Update edits the document with a version-checked write; see Store.
func (s *ZooKeeperStore) Update(ctx context.Context, edit func(*Document) error) error {
	return s.retry(ctx, func() error {
		data, stat, err := s.read(ctx)
		if err != nil {
			return err
		}
		out, err := applyEdit(data, stat != nil, s.path, edit)
		if out == nil {
			return err
		}
		if stat == nil {
			err = s.create(ctx, out)
		} else {
			err = s.call(ctx, func(conn *zk.Conn) error {
				_, err := conn.Set(s.path, out, stat.Version)
				return err
			})
		}
		if err != nil {
			return fmt.Errorf("%w at %s: %w", ErrWrite, s.path, err)
		}
		return nil
	})
}

// read returns the node's data and stat, or a nil stat when it does not
// exist.
func (s *ZooKeeperStore) read(ctx context.Context) ([]byte, *zk.Stat, error) {
	var data []byte
	var stat *zk.Stat
	err := s.call(ctx, func(conn *zk.Conn) (err error) {
		data, stat, err = conn.Get(s.path)
		return err
	})
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, nil, nil
	case err != nil:
		return nil, nil, fmt.Errorf("%w at %s: %w", ErrRead, s.path, err)
	}
	return data, stat, nil
}

// create makes the node with data, and its parents, empty, if missing.
func (s *ZooKeeperStore) create(ctx context.Context, data []byte) error {
	return s.call(ctx, func(conn *zk.Conn) error {
		if parent := path.Dir(s.path); parent != "/" {
			if err := zkwatch.EnsurePath(conn, parent); err != nil {
				return err
			}
		}
		_, err := conn.Create(s.path, data, 0, zk.WorldACL(zk.PermAll))
		return err
	})
}

// applyEdit parses data, the document stored at where (exists: stored at
// all), edits it and returns its new form to store; nil (and no error) when
// the edit changed nothing stored. An edit's error comes back as an
// editError, an unreadable document's as ErrRead.
func applyEdit(data []byte, exists bool, where string, edit func(*Document) error) ([]byte, error) {
	doc, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%w at %s: %w", ErrRead, where, err)
	}
	if err := edit(&doc); err != nil {
		return nil, editError{err}
	}
	out := doc.Marshal()
	if exists && bytes.Equal(out, data) {
		return nil, nil
	}
	return out, nil
}

// editError carries an error from the caller's edit through retry untouched.
type editError struct{ err error }

func (e editError) Error() string { return e.err.Error() }

// errNoSession: the client is between sessions; the request was not sent.
var errNoSession = errors.New("not connected to ZooKeeper")

// Back-off between attempts that failed for want of a connection.
const (
	minRetryPause = 50 * time.Millisecond
	maxRetryPause = time.Second
)

// retry runs attempt until it succeeds or fails for good: a write that lost
// a race (the node changed or appeared meanwhile) starts over at once; a
// lost connection is waited out, with back-off, until ctx ends.
func (s *ZooKeeperStore) retry(ctx context.Context, attempt func() error) error {
	pause := minRetryPause
	for {
		err := attempt()
		var edit editError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &edit):
			return edit.err
		case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNodeExists),
			errors.Is(err, ErrWrite) && errors.Is(err, zk.ErrNoNode):
			continue
		case !transient(err):
			return err
		}
		if ctx.Err() != nil {
			// err already says ctx ended, or is the last connection error.
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: %w (giving up: %w)", ErrUnavailable, err, ctx.Err())
		case <-t.C:
		}
		pause = min(2*pause, maxRetryPause)
	}
}

// transient reports errors that a retry after a reconnection may cure.
func transient(err error) bool {
	for _, e := range []error{errNoSession, zk.ErrConnectionClosed, zk.ErrSessionExpired,
		zk.ErrSessionMoved, zk.ErrNoServer, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// call runs one request, returning early when ctx ends. It does not send
// requests while the client has no session: go-zookeeper would queue them
// and send them after reconnecting, perhaps long after the caller gave up.
func (s *ZooKeeperStore) call(ctx context.Context, request func(*zk.Conn) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return zk.ErrClosing
	}
	conn := s.session()
	if conn == nil {
		return errNoSession
	}
	done := make(chan error, 1)
	go func() { done <- request(conn) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
