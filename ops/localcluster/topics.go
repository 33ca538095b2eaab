package localcluster

import (
	"context"
	"fmt"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// ensureOutputTopics creates the crawled and outbound firehoses as the
// crawlers and the Redis Monitor would when they first write (same KAFKA_*
// settings, read from env), so that `kafkadump dump`, which never creates a
// topic, can watch them before the first page or answer arrives. Topics that
// exist are left alone.
func ensureOutputTopics(ctx context.Context, env []string, hosts string) ([]string, error) {
	s, err := settings.Load(kafkaclient.Settings(), settings.Options{Environ: env,
		Flags: map[string]string{"KAFKA_HOSTS": hosts}})
	if err != nil {
		return nil, fmt.Errorf("read the KAFKA_* settings: %w", err)
	}
	kc, err := kafkaclient.ConfigFromSettings(s)
	if err != nil {
		return nil, err
	}
	topics := []string{kc.Topic("crawled_firehose"), kc.Topic("outbound_firehose")}
	specs := make([]kafkaclient.TopicSpec, len(topics))
	for i, t := range topics {
		specs[i] = kafkaclient.TopicSpec{Name: t}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return topics, kc.EnsureTopics(ctx, specs...)
}
