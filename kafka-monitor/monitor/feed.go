package monitor

import (
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

// ErrInvalidRequest is wrapped by Feed's error when the request fails local
// validation; nothing was sent.
var ErrInvalidRequest = errors.New("invalid request")

// Feed validates raw against the enabled plugins' schemas and, when one
// accepts it, sends it to the incoming topic within KAFKA_FEED_TIMEOUT,
// creating the topic if it does not exist. An invalid request is not sent.
func Feed(ctx context.Context, s *settings.Settings, log *logfactory.Logger, raw []byte) error {
	plugins, err := plugin.LoadPlugins(s)
	if err != nil {
		return err
	}
	v, err := plugin.DecodeJSON(raw)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	// Send the request as given (Match fills defaults into v); the monitor
	// fills them in after its own validation, as the original does.
	value, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	var shown any
	_ = json.Unmarshal(value, &shown)
	if p, _, errs := plugin.Match(plugins, v); p == nil {
		return fmt.Errorf("%w: no plugin's schema accepts it: %s", ErrInvalidRequest, plugin.JoinErrors(errs))
	}
	kcfg, err := kafkaclient.ConfigFromSettings(s)
	if err != nil {
		return err
	}
	topic := s.String("KAFKA_INCOMING_TOPIC")
	if s.Bool("LOG_JSON") {
		log.Info("Feeding JSON into "+topic, logfactory.Extra{"value": shown})
	} else {
		pretty, _ := json.MarshalIndent(shown, "", "    ")
		log.Info("Feeding JSON into " + topic + "\n" + string(pretty))
	}

	fctx, cancel := context.WithTimeout(ctx, s.Seconds("KAFKA_FEED_TIMEOUT"))
	defer cancel()
	if err := kcfg.EnsureTopics(fctx, kafkaclient.TopicSpec{Name: topic, Partitions: s.Int("KAFKA_INCOMING_PARTITIONS")}); err != nil {
		log.Error("Failed to feed item into Kafka", logfactory.Extra{"error": err.Error()})
		return err
	}
	w := kcfg.NewWriter(topic)
	w.BatchSize = 1 // one message: send it at once
	err = w.WriteMessages(fctx, kafka.Message{Value: value})
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
