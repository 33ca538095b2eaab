package customplugin_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/examples/customplugin"
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/monitor"
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin/plugintest"
	_ "github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugins/all"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

func TestNewPluginStoresMyStringAtCustomUUID(t *testing.T) {
	rdb := harness.StartRedis(t).TestClient(t)
	f := plugintest.Setup(t, &customplugin.NewPlugin{}, rdb, nil, nil)
	if err := f.Handle(t, `{"uuid": "abc", "my_string": "hello"}`); err != nil {
		t.Fatal(err)
	}
	if got := plugintest.StringKeys(t, rdb); len(got) != 1 || got["custom:abc"] != "hello" {
		t.Fatalf("Redis holds %v, want custom:abc = hello", got)
	}
}

func TestNewPluginRefusesAStringOfSpaces(t *testing.T) {
	for raw, want := range map[string]string{
		`{"uuid": "abc", "my_string": "   "}`: "my_string: only spaces",
		`{"uuid": "abc", "my_string": " x "}`: "",
	} {
		_, err := plugintest.Validate(t, &customplugin.NewPlugin{}, raw)
		if (err == nil) != (want == "") || (err != nil && err.Error() != want) {
			t.Errorf("Validate(%s) = %v, want %q", raw, err, want)
		}
	}
}

func TestTheSettingNameEnablesIt(t *testing.T) {
	loaded, err := plugin.Load(map[string]any{customplugin.Key: 500})
	if err != nil || len(loaded) != 1 || loaded[0].Plugin.Name() != "NewPlugin" {
		t.Fatalf("%v %v", loaded, err)
	}
}

// The example plugin, enabled beside the built-in ones, handles its requests
// through a running monitor.
func TestNewPluginStoresItsRequestsThroughTheMonitor(t *testing.T) {
	r := harness.StartRedis(t)
	k := harness.StartKafka(t)
	s, err := settings.Load(monitor.Settings(), settings.Options{NoEnv: true, Flags: map[string]string{
		"REDIS_HOST": "127.0.0.1", "REDIS_PORT": strconv.Itoa(r.Port), "KAFKA_HOSTS": k.Hosts(),
		"STATS_DUMP": "0", "LOG_LEVEL": "WARNING",
		"PLUGINS": `{"` + customplugin.Key + `": 500}`,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(plugin.Plugins.From(s)); got != 5 {
		t.Fatalf("PLUGINS has %d entries, want the 4 defaults plus the example", got)
	}
	log, err := logfactory.New(logfactory.Settings("").Config(s))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rdb := r.TestClient(t)
	m, err := monitor.New(ctx, s, log, rdb)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()

	// Sent with feed, which validates against the same plugins.
	if err := monitor.Feed(ctx, s, log, []byte(`{"uuid": "abc", "my_string": "hello"}`)); err != nil {
		t.Fatal(err)
	}
	kcfg, _ := kafkaclient.ConfigFromSettings(s)
	w := kcfg.NewWriter("demo.incoming")
	defer w.Close()
	if err := w.WriteMessages(ctx, kafka.Message{Value: []byte(`{"uuid": "def", "my_string": ""}`)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for m.Processed() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("processed %d of 2", m.Processed())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := rdb.Get(ctx, "custom:abc").Val(); got != "hello" {
		t.Fatalf("custom:abc = %q", got)
	}
	if rdb.Exists(ctx, "custom:def").Val() != 0 {
		t.Fatal("a request with an empty my_string (minLength 1) was stored")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
