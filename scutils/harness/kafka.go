package harness

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// KafkaOptions configures LaunchKafka. The zero value is one broker with
// topic auto-creation on and 1-partition default topics.
type KafkaOptions struct {
	// Brokers is the number of brokers (default 1).
	Brokers int
	// Topics are created at start with Partitions partitions each.
	Topics []string
	// Partitions for Topics and for auto-created topics (default 1).
	Partitions int32
	// NoAutoCreate turns topic auto-creation off, as production clusters often do.
	NoAutoCreate bool
	// DataDir, when set, persists the broker's state there across restarts.
	DataDir string
	// Ports, when set, are the brokers' ports (one per broker), e.g. to start
	// a broker again where clients expect it after Close.
	Ports []int
}

// Kafka is an in-process kfake broker cluster speaking the real Kafka protocol
// on loopback. kafka-go, franz-go and librdkafka clients all work against it.
type Kafka struct {
	Cluster *kfake.Cluster
	// Addrs are the brokers' "127.0.0.1:<port>" addresses.
	Addrs []string
}

// Hosts returns the broker addresses joined by commas, usable as KAFKA_HOSTS.
func (k *Kafka) Hosts() string { return strings.Join(k.Addrs, ",") }

// StartKafka starts a kfake cluster for tb and closes it when tb ends.
func StartKafka(tb testing.TB, opts ...KafkaOptions) *Kafka {
	tb.Helper()
	k, err := LaunchKafka(optional(opts))
	return started(tb, "kafka", k, err)
}

// LaunchKafka starts a kfake cluster on free loopback ports. Close stops it.
func LaunchKafka(o KafkaOptions) (*Kafka, error) {
	brokers := o.Brokers
	if brokers <= 0 {
		brokers = 1
	}
	parts := o.Partitions
	if parts <= 0 {
		parts = 1
	}
	ports := make([]int, brokers)
	copy(ports, o.Ports)
	for i := range ports {
		if ports[i] != 0 {
			continue
		}
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	kopts := []kfake.Opt{
		kfake.Ports(ports...),
		kfake.DefaultNumPartitions(int(parts)),
		kfake.GroupMinSessionTimeout(100 * time.Millisecond),
	}
	if !o.NoAutoCreate {
		kopts = append(kopts, kfake.AllowAutoTopicCreation())
	}
	if len(o.Topics) > 0 {
		kopts = append(kopts, kfake.SeedTopics(parts, o.Topics...))
	}
	if o.DataDir != "" {
		kopts = append(kopts, kfake.DataDir(o.DataDir))
	}
	c, err := kfake.NewCluster(kopts...)
	if err != nil {
		return nil, fmt.Errorf("start kfake cluster: %w", err)
	}
	return &Kafka{Cluster: c, Addrs: c.ListenAddrs()}, nil
}

// Close stops the brokers.
func (k *Kafka) Close() { k.Cluster.Close() }
