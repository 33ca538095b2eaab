package domainconfig

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/zkwatch"
)

// Store keeps the domain configuration document where the crawlers read it.
// Its methods are safe for concurrent use, also by many processes sharing
// the same ZooKeeper node or Redis key.
type Store interface {
	// Get returns the current document; a missing or empty one is the
	// empty document.
	Get(ctx context.Context) (Document, error)
	// Update applies edit to the current document and stores the result,
	// unless edit changed nothing. If another writer stored a new version
	// meanwhile, Update starts over with that version, so edit may run
	// several times, each time on a fresh copy. An error from edit stops
	// Update and is returned as it is.
	Update(ctx context.Context, edit func(*Document) error) error
	// Connected reports whether a call would reach the store now: false
	// while a ZooKeeper store has no session, when calls would wait for
	// one. A Redis store always says true: the Redis client connects per
	// call, and an outage shows as ErrUnavailable.
	Connected() bool
	// Close releases what the store holds (the ZooKeeper connection it
	// opened); the Redis client passed in stays open.
	Close() error
}

// ErrRead marks a failure to read or parse the stored document and ErrWrite
// a failure to store it, so callers can tell the two apart (the original
// answers "Unable to load Zookeeper config" and "Unable to store Zookeeper
// config"). ErrUnavailable marks, besides one of those, a failure because
// the store could not be reached (no connection, no answer in time): an
// outage, after which the same call may succeed, not a refusal. Use
// errors.Is.
var (
	ErrRead        = errors.New("read the domain configuration")
	ErrWrite       = errors.New("store the domain configuration")
	ErrUnavailable = errors.New("domain configuration store unreachable")
)

// The settings naming the document's place, the same in every component
// that reads or writes it (the crawler, the Redis Monitor, the REST
// service's console).
var (
	Hosts      = settings.String("ZOOKEEPER_HOSTS", "localhost:2181", "ZooKeeper of the domain config, comma-separated; empty keeps the config in Redis (Go)")
	AssignPath = settings.String("ZOOKEEPER_ASSIGN_PATH", "/scrapy-cluster/crawler/", "folder of the domain config")
	ID         = settings.String("ZOOKEEPER_ID", "all", "the domain config's name in that folder")
)

// Settings are the ZooKeeper settings, for a component's settings.Group.
func Settings() settings.Group { return settings.Declare(Hosts, AssignPath, ID) }

// PathFromSettings is the document's path: ZOOKEEPER_ASSIGN_PATH and
// ZOOKEEPER_ID joined as written, as the original does (so the assign path
// should end with "/").
func PathFromSettings(s *settings.Settings) (string, error) {
	assign, id := AssignPath.From(s), ID.From(s)
	path := assign + id
	if err := zkwatch.ValidatePath(path); err != nil {
		return "", fmt.Errorf("%s %q + %s %q: %w", AssignPath.Name(), assign, ID.Name(), id, err)
	}
	return path, nil
}

// FromSettings opens the store the settings name: the ZooKeeper node at
// PathFromSettings when ZOOKEEPER_HOSTS is set (OpenZooKeeper: it returns
// at once and connects in the background, so ZooKeeper need not be up),
// otherwise the Redis key for that path on rdb. log (may be nil) receives
// the ZooKeeper client's warnings, one per failed connection attempt.
func FromSettings(s *settings.Settings, rdb redis.UniversalClient, log *logfactory.Logger) (Store, error) {
	loc, err := locate(s)
	if err != nil {
		return nil, err
	}
	if loc.zkHosts == nil {
		if rdb == nil {
			return nil, errNoRedis
		}
		return NewRedisStore(rdb, loc.path), nil
	}
	return OpenZooKeeper(loc.zkHosts, loc.path, log)
}

// Describe says where the settings put the document, for log lines and
// messages: "ZooKeeper zk1:2181,zk2:2181 node /scrapy-cluster/crawler/all"
// or "Redis key domainconfig:/scrapy-cluster/crawler/all".
func Describe(s *settings.Settings) (string, error) {
	loc, err := locate(s)
	if err != nil {
		return "", err
	}
	if loc.zkHosts == nil {
		return "Redis key " + rediskeys.DomainConfigKey(loc.path), nil
	}
	return "ZooKeeper " + strings.Join(loc.zkHosts, ",") + " node " + loc.path, nil
}

// location is where the settings put the document: the ZooKeeper servers
// (nil for Redis) and the path.
type location struct {
	zkHosts []string
	path    string
}

// locate reads the settings that name the document's place; FromSettings
// and Watch share it, so the Redis Monitor and the crawlers agree.
func locate(s *settings.Settings) (location, error) {
	path, err := PathFromSettings(s)
	if err != nil {
		return location{}, err
	}
	if zkHosts := zkwatch.SplitHosts(Hosts.From(s)); len(zkHosts) > 0 {
		return location{zkHosts: zkHosts, path: path}, nil
	}
	return location{path: path}, nil
}

// errNoRedis: the document is in Redis, and no Redis client was given.
var errNoRedis = fmt.Errorf("domain configuration in Redis (%s is empty): no Redis client", Hosts.Name())

// zkLogger passes the ZooKeeper client's and watcher's lines to a
// logfactory logger at one level; with a nil logger they are dropped.
func zkLogger(log *logfactory.Logger, level logfactory.Level) zkwatch.Logger {
	if log == nil {
		return nil
	}
	return printfLogger{log: log, level: level}
}

type printfLogger struct {
	log   *logfactory.Logger
	level logfactory.Level
}

func (p printfLogger) Printf(format string, args ...any) {
	p.log.Log(p.level, fmt.Sprintf(format, args...))
}
