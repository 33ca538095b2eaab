package monitor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// ErrInvalidRequest is wrapped by Feed's error when the request fails
// validation; nothing was sent.
var ErrInvalidRequest = errors.New("invalid request")

// Feed validates raw as the monitor will (MAX_REQUEST_BYTES, then
// plugin.Validate) and, when it is valid, sends it as given (compacted,
// without the defaults the monitor fills in) to the incoming topic within
// KAFKA_FEED_TIMEOUT, creating the topic if it does not exist. An invalid
// request is not sent: the error wraps ErrInvalidRequest and gives the
// reason, as the monitor would log it.
func Feed(ctx context.Context, s *settings.Settings, log *logfactory.Logger, raw []byte) error {
	plugins, err := plugin.LoadPlugins(s)
	if err != nil {
		return err
	}
	if err := plugin.CheckSize(raw, MaxRequestBytes.From(s)); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	if _, _, err := plugin.Validate(plugins, raw); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	var value bytes.Buffer
	if err := json.Compact(&value, raw); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidRequest, err) // Validate read it: cannot happen
	}
	var shown any
	_ = json.Unmarshal(value.Bytes(), &shown)
	kcfg, err := kafkaclient.ConfigFromSettings(s)
	if err != nil {
		return err
	}
	topic := IncomingTopic.From(s)
	if logfactory.Settings("").JSON.From(s) {
		log.Info("Feeding JSON into "+topic, logfactory.Extra{"value": shown})
	} else {
		pretty, _ := json.MarshalIndent(shown, "", "    ")
		log.Info("Feeding JSON into " + topic + "\n" + string(pretty))
	}

	fctx, cancel := context.WithTimeout(ctx, FeedTimeout.From(s))
	defer cancel()
	if err := kcfg.EnsureTopics(fctx, kafkaclient.TopicSpec{Name: topic, Partitions: plugin.IncomingPartitions.From(s)}); err != nil {
		log.Error("Failed to feed item into Kafka", logfactory.Extra{"error": err.Error()})
		return err
	}
	w := kcfg.NewWriter(topic)
	w.BatchSize = 1 // one message: send it at once
	err = w.WriteMessages(fctx, kafka.Message{Value: value.Bytes()})
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		log.Error("Failed to feed item into Kafka", logfactory.Extra{"error": err.Error()})
		return fmt.Errorf("send to %s: %w", topic, err)
	}
	log.Info("Successfully fed item to Kafka")
	return nil
}
