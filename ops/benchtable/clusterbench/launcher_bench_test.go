package clusterbench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
)

// Shape of the crawl BenchmarkLauncherMemory runs: sites × pagesPerSite
// pages of about pageBytes of HTML each, every page linking to up to
// treeFanout children, so one link crawl per site seeded at its root with
// crawlDepth reaches every page.
const (
	crawlSites   = 4
	pagesPerSite = 25_000
	pageBytes    = 4 << 10
	treeFanout   = 30
	crawlDepth   = 3 // the schema's most; 1+30+900+27,000 pages >= pagesPerSite
)

// BenchmarkLauncherMemory runs `local-cluster` as `make run` does, as its
// own process, and measures its memory after a 100k-page crawl: per
// iteration it feeds one link crawl of each of 4 loopback sites of 25,000
// pages of about 4 KiB (100,000 pages, about 450 MB of crawl results on
// demo.crawled_firehose, more than the broker retains) and waits until every
// page's result has been read from the firehose. Then it reports the
// launcher's resident memory (VmRSS) and its peak (VmHWM) from /proc, and
// the pages per second of the crawl.
//
// The launcher runs with its default flags (the embedded kfake broker
// keeping its data in .local-cluster/ of its working directory, embedded
// miniredis, one link crawler), and with an empty --data-dir (everything in
// memory), on free ports, with the throttle opened (QUEUE_HITS 100000,
// QUEUE_MODERATED false) so the crawl is not held to 10 pages a minute per
// domain.
func BenchmarkLauncherMemory(b *testing.B) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		b.Skip("needs /proc")
	}
	bin := buildBinaries(b, "./ops/cmd/local-cluster")
	sites := make([]*treeSite, crawlSites)
	for i := range sites {
		sites[i] = startTreeSite(b, fmt.Sprintf("127.0.0.%d", i+1), pagesPerSite)
	}
	for _, bc := range []struct {
		name string
		args []string
	}{
		{"flags=default", nil},
		{"flags=data-dir-none", []string{"--data-dir", ""}},
	} {
		b.Run(bc.name, func(b *testing.B) { launcherMemory(b, bin, sites, bc.args) })
	}
}

func launcherMemory(b *testing.B, bin string, sites []*treeSite, args []string) {
	l := startLauncher(b, bin, args...)
	writer := l.kc.NewWriter(l.kc.Topic("incoming"))
	writer.AllowAutoTopicCreation = true
	defer writer.Close()

	b.ResetTimer()
	var crawled time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		want := map[string]bool{}
		var msgs []kafka.Message
		for j, s := range sites {
			crawlID := fmt.Sprintf("memory-%d-%d", i, j)
			want[crawlID] = true
			req, _ := json.Marshal(map[string]any{"url": s.url("/"), "appid": "bench", "crawlid": crawlID,
				"maxdepth": crawlDepth, "priority": 5})
			msgs = append(msgs, kafka.Message{Value: req})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := writer.WriteMessages(ctx, msgs...)
		cancel()
		if err != nil {
			b.Fatalf("produce the crawl requests: %v", err)
		}
		l.waitPages(b, want, len(sites)*pagesPerSite, 30*time.Minute)
		crawled += time.Since(start)
	}
	b.StopTimer()
	rss, err := procStatusMB(l.proc.Pid(), "VmRSS")
	if err != nil {
		b.Fatal(err)
	}
	hwm, err := procStatusMB(l.proc.Pid(), "VmHWM")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(rss, "launcher-VmRSS-MB")
	b.ReportMetric(hwm, "launcher-VmHWM-MB")
	b.ReportMetric(float64(b.N*len(sites)*pagesPerSite)/crawled.Seconds(), "pages/s")
}

// launcher is a local-cluster process and a reader of its crawled firehose.
type launcher struct {
	proc  *harness.Process
	out   *launcherOutput
	kc    kafkaclient.Config
	pages chan result
}

// startLauncher starts bin/local-cluster with args on free ports in a
// temporary working directory (so its default --data-dir is there) and
// waits until it says the cluster is up. It is stopped with SIGTERM when the
// benchmark ends.
func startLauncher(tb testing.TB, bin string, args ...string) *launcher {
	tb.Helper()
	kafkaPort, redisPort, restPort := harness.Port(tb), harness.Port(tb), harness.Port(tb)
	out := &launcherOutput{}
	proc := harness.StartProcess(tb, harness.ProcessSpec{Path: filepath.Join(bin, "local-cluster"), Args: append([]string{"--bin", bin,
		"--color", "never", "--kafka-port", strconv.Itoa(kafkaPort), "--redis-port", strconv.Itoa(redisPort),
		"--rest-port", strconv.Itoa(restPort)}, args...),
		Env:    append(embeddedEnv(), "QUEUE_HITS=100000", "QUEUE_MODERATED=false", loopbackFetchEnv),
		Stdout: out, Stderr: out, StopGrace: 60 * time.Second, Supervise: true})
	waitFor(tb, "local-cluster to say the cluster is up", 90*time.Second, func() bool {
		if proc.Exited() {
			tb.Fatalf("local-cluster exited: %v\n%s", proc.Wait(), out.tail())
		}
		return out.contains("The cluster is up.")
	})
	l := &launcher{proc: proc, out: out, pages: make(chan result, 1<<16), kc: kafkaclient.Config{
		Brokers: []string{"127.0.0.1:" + strconv.Itoa(kafkaPort)}, TopicPrefix: "demo", ConnTimeout: 5 * time.Second,
		BatchLinger: time.Millisecond, MaxRequestBytes: 1 << 20, StartAtEarliest: true, FetchMaxBytes: 10 << 20,
		FetchMaxWait: 100 * time.Millisecond, Partitions: 3, ReplicationFactor: 1,
	}}
	l.readFirehose(tb)
	return l
}

// readFirehose reads every partition of the crawled firehose from its
// start into l.pages until the benchmark ends.
func (l *launcher) readFirehose(tb testing.TB) {
	tb.Helper()
	topic := l.kc.Topic("crawled_firehose")
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	partitions := harness.TopicPartitions(ctx, tb, l.kc, topic, 30*time.Second)
	harness.ReadTopic(ctx, tb, l.kc, topic, partitions, func(v []byte) {
		var res result
		if json.Unmarshal(v, &res) == nil {
			select {
			case l.pages <- res:
			case <-ctx.Done():
			}
		}
	})
}

// waitPages waits until n distinct pages of the crawls in crawlIDs have been
// read from the firehose.
func (l *launcher) waitPages(tb testing.TB, crawlIDs map[string]bool, n int, timeout time.Duration) {
	tb.Helper()
	seen := make(map[string]struct{}, n)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for len(seen) < n {
		select {
		case r := <-l.pages:
			if crawlIDs[r.CrawlID] {
				seen[r.URL] = struct{}{}
			}
		case <-timer.C:
			tb.Fatalf("%d of %d pages within %s; launcher output:\n%s", len(seen), n, timeout, l.out.tail())
		}
	}
}

// embeddedEnv is the environment without the settings that would point the
// launcher at real services: these benchmarks measure the embedded ones.
func embeddedEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "KAFKA_HOSTS", "REDIS_HOST", "REDIS_PORT", "ZOOKEEPER_HOSTS", "KAFKA_TOPIC_PREFIX":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// treeSite is a web site on one loopback address whose pages form a tree:
// page k (the root "/" is page 0, the others /n/<k>) links to pages
// k*treeFanout+1 .. k*treeFanout+treeFanout that are below its size, and
// carries about pageBytes of text.
type treeSite struct {
	srv  *http.Server
	addr string
}

func startTreeSite(tb testing.TB, ip string, size int) *treeSite {
	tb.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		tb.Fatal(err)
	}
	filler := strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", pageBytes/57)
	s := &treeSite{addr: ln.Addr().String()}
	s.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := 0
		if r.URL.Path != "/" {
			n, ok := strings.CutPrefix(r.URL.Path, "/n/")
			var err error
			if k, err = strconv.Atoi(n); !ok || err != nil || k <= 0 || k >= size {
				http.NotFound(w, r)
				return
			}
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		var body strings.Builder
		fmt.Fprintf(&body, "<html><head><title>page %d</title></head><body><h1>page %d</h1><ul>\n", k, k)
		for c := k*treeFanout + 1; c <= k*treeFanout+treeFanout && c < size; c++ {
			fmt.Fprintf(&body, "<li><a href=\"/n/%d\">page %d</a></li>\n", c, c)
		}
		fmt.Fprintf(&body, "</ul><p>%s</p></body></html>\n", filler)
		_, _ = io.WriteString(w, body.String())
	})}
	go func() { _ = s.srv.Serve(ln) }()
	tb.Cleanup(func() { _ = s.srv.Close() })
	return s
}

func (s *treeSite) url(path string) string { return "http://" + s.addr + path }
