package dump_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/dump"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// Dump the crawl results already in the firehose topic, pretty-printed, and
// stop after two; `kafkadump dump -t demo.crawled_firehose -b -p -n 2` does
// the same.
func ExampleDump() {
	broker, err := harness.LaunchKafka(harness.KafkaOptions{Topics: []string{"demo.crawled_firehose"}}) // a real cluster in production
	if err != nil {
		panic(err)
	}
	defer broker.Close()
	s, _ := settings.Load(kafkaclient.Settings(), settings.Options{Environ: []string{"KAFKA_HOSTS=" + broker.Hosts()}})
	cfg, err := kafkaclient.ConfigFromSettings(s)
	if err != nil {
		panic(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := cfg.NewWriter("demo.crawled_firehose")
	_ = w.WriteMessages(ctx,
		kafka.Message{Value: []byte(`{"url": "http://example.com", "status_code": 200}`)},
		kafka.Message{Value: []byte(`not a JSON object`)})
	w.Close()

	opts := dump.Options{Topic: "demo.crawled_firehose", FromBeginning: true, Max: 2, Format: dump.Format{Pretty: true}}
	sum, err := dump.Dump(ctx, cfg, opts, os.Stdout, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(sum.Messages, "messages")
	// Output:
	// {
	//     "url": "http://example.com",
	//     "status_code": 200
	// }
	// not a JSON object
	// 2 messages
}

// A crawl result whose body the crawler base64-encoded (KAFKA_BASE_64_ENCODE)
// is printed with its page decoded.
func ExampleFormat_Render() {
	body := base64.StdEncoding.EncodeToString([]byte("<html>hello</html>"))
	msg := `{"url": "http://example.com", "body": "` + body + `"}`

	out, _ := dump.Format{DecodeBase64: true}.Render([]byte(msg))
	fmt.Print(string(out))
	out, _ = dump.Format{DecodeBase64: true, JustBody: true}.Render([]byte(msg))
	fmt.Print(string(out))
	// Output:
	// {"url":"http://example.com","body":"<html>hello</html>"}
	// <html>hello</html>
}
