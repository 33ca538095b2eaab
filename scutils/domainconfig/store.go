package domainconfig

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
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
	// Close releases what the store holds (the ZooKeeper connection it
	// opened); the Redis client passed in stays open.
	Close() error
}

// ErrRead marks a failure to read or parse the stored document and ErrWrite
// a failure to store it, so callers can tell the two apart (the original
// answers "Unable to load Zookeeper config" and "Unable to store Zookeeper
// config"). Use errors.Is.
var (
	ErrRead  = errors.New("read the domain configuration")
	ErrWrite = errors.New("store the domain configuration")
)

// The settings naming the document's place; the same in every component.
const (
	SettingHosts      = "ZOOKEEPER_HOSTS"
	SettingAssignPath = "ZOOKEEPER_ASSIGN_PATH"
	SettingID         = "ZOOKEEPER_ID"
)

// Defaults are the spec's defaults of the ZooKeeper settings, shared by the
// crawler and the Redis Monitor.
func Defaults() settings.Defaults {
	return settings.Defaults{
		SettingHosts:      "localhost:2181",
		SettingAssignPath: "/scrapy-cluster/crawler/",
		SettingID:         "all",
	}
}

// PathFromSettings is the document's path: ZOOKEEPER_ASSIGN_PATH and
// ZOOKEEPER_ID joined as written, as the original does (so the assign path
// should end with "/").
func PathFromSettings(s *settings.Settings) (string, error) {
	assign, err := settings.Lookup[string](s, SettingAssignPath)
	if err != nil {
		return "", err
	}
	id, err := settings.Lookup[string](s, SettingID)
	if err != nil {
		return "", err
	}
	path := assign + id
	if err := zkwatch.ValidatePath(path); err != nil {
		return "", fmt.Errorf("%s %q + %s %q: %w", SettingAssignPath, assign, SettingID, id, err)
	}
	return path, nil
}

// FromSettings opens the store the settings name: the ZooKeeper node at
// PathFromSettings when ZOOKEEPER_HOSTS is set, otherwise the Redis key for
// that path on rdb. Connecting to ZooKeeper is bounded by
// zkwatch.DefaultConnectTimeout (and ctx); log (may be nil) receives the
// ZooKeeper client's warnings.
func FromSettings(ctx context.Context, s *settings.Settings, rdb *redis.Client, log *logfactory.Logger) (Store, error) {
	path, err := PathFromSettings(s)
	if err != nil {
		return nil, err
	}
	hosts, err := settings.Lookup[string](s, SettingHosts)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(hosts) == "" {
		if rdb == nil {
			return nil, fmt.Errorf("domain configuration in Redis (%s is empty): no Redis client", SettingHosts)
		}
		return NewRedisStore(rdb, path), nil
	}
	ctx, cancel := context.WithTimeout(ctx, zkwatch.DefaultConnectTimeout)
	defer cancel()
	return DialZooKeeper(ctx, zkwatch.SplitHosts(hosts), path, log)
}

// printfLogger passes the ZooKeeper client's lines to a logfactory logger.
type printfLogger struct{ log *logfactory.Logger }

func (p printfLogger) Printf(format string, args ...any) { p.log.Warn(fmt.Sprintf(format, args...)) }
