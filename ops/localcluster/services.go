package localcluster

import (
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/lifecycle"
	"github.com/twmb/franz-go/pkg/kfake"
)

// embeddedKafka is the in-process kfake broker with its retention applied on
// a ticker: kfake trims partitions to retention.ms / retention.bytes only
// when asked (or for topics with their own retention configs), so without the
// ticker it would keep every message of a long-running cluster.
type embeddedKafka struct {
	cluster *kfake.Cluster
	addr    string
	stop    chan struct{}
	wg      sync.WaitGroup
}

// retentionInterval is how often the broker's retention is applied.
const retentionInterval = 10 * time.Second

func startKafka(cfg *Config, con *console) (*embeddedKafka, error) {
	// Retention drops whole segments only, so segments are a fraction of
	// what a partition keeps: the bound is retention + one segment.
	segment := max(cfg.KafkaRetentionBytes/4, 1<<20)
	segment = min(segment, 16<<20)
	opts := []kfake.Opt{
		kfake.Ports(cfg.KafkaPort),
		kfake.AllowAutoTopicCreation(),
		kfake.BrokerConfigs(map[string]string{
			"log.retention.ms":    strconv.FormatInt(cfg.KafkaRetention.Milliseconds(), 10),
			"log.retention.bytes": strconv.FormatInt(cfg.KafkaRetentionBytes, 10),
			"log.segment.bytes":   strconv.FormatInt(segment, 10),
		}),
		kfake.WithLogger(&kafkaLogger{w: con.stream("kafka")}),
	}
	if cfg.DataDir != "" {
		opts = append(opts, kfake.DataDir(filepath.Join(cfg.DataDir, "kafka")))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("start the embedded Kafka broker on 127.0.0.1:%d: %w", cfg.KafkaPort, err)
	}
	k := &embeddedKafka{cluster: c, addr: c.ListenAddrs()[0], stop: make(chan struct{})}
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		lifecycle.Every(k.stop, retentionInterval, func(time.Time) { c.ApplyRetention() })
	}()
	return k, nil
}

// Close stops the broker; with a data directory it saves its state first.
func (k *embeddedKafka) Close() {
	close(k.stop)
	k.wg.Wait()
	k.cluster.Close()
}

// kafkaLogger passes the broker's warnings and errors to the console.
type kafkaLogger struct {
	mu sync.Mutex // a lineWriter takes one writer at a time
	w  *lineWriter
}

func (l *kafkaLogger) Logf(level kfake.LogLevel, format string, args ...any) {
	if level > kfake.LogLevelWarn {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = fmt.Fprintf(l.w, "%s: "+format+"\n", append([]any{level}, args...)...)
}

// embeddedRedis is miniredis on loopback, with key expiry following the wall
// clock.
type embeddedRedis struct {
	m    *miniredis.Miniredis
	addr string
	stop chan struct{}
	wg   sync.WaitGroup
}

// ttlTick is how often the embedded Redis ages its keys' TTLs. miniredis
// only expires keys when told to; its ClockTTL mode does so on every command
// by walking and sorting every key, so a tick is much cheaper, at the cost of
// expiring keys up to one tick late.
const ttlTick = 100 * time.Millisecond

func startMiniredis(port int) (*embeddedRedis, error) {
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:" + strconv.Itoa(port)); err != nil {
		return nil, fmt.Errorf("start the embedded Redis on 127.0.0.1:%d: %w", port, err)
	}
	r := &embeddedRedis{m: m, addr: m.Addr(), stop: make(chan struct{})}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		last := time.Now()
		lifecycle.Every(r.stop, ttlTick, func(now time.Time) {
			m.FastForward(now.Sub(last))
			last = now
		})
	}()
	return r, nil
}

// Close stops the server.
func (r *embeddedRedis) Close() {
	close(r.stop)
	r.wg.Wait()
	r.m.Close()
}
