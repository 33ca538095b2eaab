package opscheck_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

// The monitoring material: monitoring/docker-compose.monitoring.yml (an
// overlay of docker-compose.yml), Prometheus's configuration and alerts, and
// Grafana's provisioning and dashboards.
const (
	monitoringCompose = "monitoring/docker-compose.monitoring.yml"
	prometheusConfig  = "monitoring/prometheus/prometheus.yml"
	dashboardsDir     = "monitoring/grafana/dashboards"
	datasourcesFile   = "monitoring/grafana/provisioning/datasources/prometheus.yml"
)

// TestComposeHealthchecksAskTheProcessesReadiness checks that every
// component of both compose files is health-checked by its binary's
// healthcheck sub-command (GET /readyz of the process; the images have no
// curl), run as the image's entrypoint runs the binary, and that the
// sub-command exists.
func TestComposeHealthchecksAskTheProcessesReadiness(t *testing.T) {
	for _, file := range composeFiles {
		services := loadCompose(t, file)
		for name, bin := range componentBinary {
			hc, _ := services[name]["healthcheck"].(map[string]any)
			want := []any{"CMD", "/usr/local/bin/" + bin, "--settings", "/etc/scrapy-cluster/settings.yaml", "healthcheck"}
			if got, _ := hc["test"].([]any); !slices.Equal(got, want) {
				t.Errorf("%s: %s's healthcheck is %v, want %v", file, name, hc["test"], want)
			}
		}
	}
	for name, bin := range componentBinary {
		if help := run(t, time.Minute, nil, binary(t, bin), "healthcheck", "--help"); !strings.Contains(help, "/readyz") {
			t.Errorf("%s healthcheck --help does not mention /readyz:\n%s", name, help)
		}
	}
}

// TestComposeMonitoringOverlayAddsPrometheusAndGrafana runs `docker-compose
// config -q` on docker-compose.yml with the monitoring overlay and checks
// that everything the overlay mounts is in the repository.
func TestComposeMonitoringOverlayAddsPrometheusAndGrafana(t *testing.T) {
	root := harness.Root(t)
	var doc struct {
		Services map[string]struct {
			Volumes []string `yaml:"volumes"`
		} `yaml:"services"`
	}
	readYAML(t, root, monitoringCompose, &doc)
	for _, want := range []string{"prometheus", "grafana"} {
		if _, ok := doc.Services[want]; !ok {
			t.Errorf("%s has no %s service", monitoringCompose, want)
		}
	}
	for name, svc := range doc.Services {
		for _, v := range svc.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if !strings.HasPrefix(src, "./") {
				continue // a named volume
			}
			// Relative to the first compose file, the repository root.
			if _, err := os.Stat(filepath.Join(root, src)); err != nil {
				t.Errorf("%s: %s mounts %s, which is not in the repository: %v", monitoringCompose, name, src, err)
			}
		}
	}
	bin := harness.Tool(t, "docker-compose", "docker-compose")
	out, err := runErr(time.Minute, nil, bin, "-f", filepath.Join(root, "docker-compose.yml"), "-f", filepath.Join(root, monitoringCompose), "config", "-q")
	if err != nil {
		t.Errorf("docker-compose config with the monitoring overlay: %v\n%s", err, out)
	}
}

// TestMonitoringPrometheusConfigIsValid runs `promtool check config` (which
// also checks the alert rules) and checks that each component's scrape job
// uses the component's default admin port (REST: its API port).
func TestMonitoringPrometheusConfigIsValid(t *testing.T) {
	root := harness.Root(t)
	var cfg struct {
		ScrapeConfigs []struct {
			JobName    string `yaml:"job_name"`
			DNSConfigs []struct {
				Names []string `yaml:"names"`
				Port  int      `yaml:"port"`
			} `yaml:"dns_sd_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, root, prometheusConfig, &cfg)
	jobs := map[string]int{} // compose service -> the port its job scrapes
	for _, sc := range cfg.ScrapeConfigs {
		for _, d := range sc.DNSConfigs {
			for _, n := range d.Names {
				jobs[n] = d.Port
				if componentBinary[n] != sc.JobName {
					t.Errorf("job %s resolves %s, not a compose service running %s", sc.JobName, n, sc.JobName)
				}
			}
		}
	}
	for name, bin := range componentBinary {
		var settings map[string]any
		if err := yaml.Unmarshal([]byte(run(t, time.Minute, nil, binary(t, bin), "settings")), &settings); err != nil {
			t.Fatal(err)
		}
		var want int
		if name == "rest" {
			want, _ = settings["FLASK_PORT"].(int)
		} else {
			addr, _ := settings["ADMIN_ADDR"].(string)
			_, port, _ := strings.Cut(addr, ":")
			want, _ = strconv.Atoi(port)
		}
		if jobs[name] != want || want == 0 {
			t.Errorf("%s: Prometheus scrapes port %d, the component serves /metrics on %d", prometheusConfig, jobs[name], want)
		}
	}
	promtool := harness.Tool(t, "promtool", "prometheus")
	if out, err := runErr(time.Minute, nil, promtool, "check", "config", filepath.Join(root, prometheusConfig)); err != nil {
		t.Errorf("promtool check config: %v\n%s", err, out)
	}
}

// dashboardQuery is one PromQL expression of a dashboard panel.
type dashboardQuery struct{ where, expr string }

// dashboardQueries are the expressions of every panel of every dashboard,
// rows' panels included.
func dashboardQueries(t *testing.T) []dashboardQuery {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(harness.Root(t), dashboardsDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in %s: %v", dashboardsDir, err)
	}
	ds, err := os.ReadFile(filepath.Join(harness.Root(t), datasourcesFile))
	if err != nil {
		t.Fatal(err)
	}
	var provisioned struct {
		Datasources []struct {
			UID string `yaml:"uid"`
		} `yaml:"datasources"`
	}
	if err := yaml.Unmarshal(ds, &provisioned); err != nil || len(provisioned.Datasources) != 1 {
		t.Fatalf("%s: %v", datasourcesFile, err)
	}
	uid := provisioned.Datasources[0].UID
	type panel struct {
		Title      string `json:"title"`
		Datasource *struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var out []dashboardQuery
	var walk func(file string, raw []json.RawMessage)
	walk = func(file string, raw []json.RawMessage) {
		for _, r := range raw {
			var p panel
			if err := json.Unmarshal(r, &p); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if len(p.Targets) > 0 && (p.Datasource == nil || p.Datasource.UID != uid) {
				t.Errorf("%s: panel %q does not use the provisioned data source %q", file, p.Title, uid)
			}
			for _, tg := range p.Targets {
				out = append(out, dashboardQuery{where: filepath.Base(file) + ": " + p.Title, expr: tg.Expr})
			}
			walk(file, p.Panels)
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			UID    string            `json:"uid"`
			Panels []json.RawMessage `json:"panels"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if d.UID == "" {
			t.Errorf("%s has no uid", f)
		}
		walk(f, d.Panels)
	}
	return out
}

var (
	promIdent = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*`)
	// promKeywords are PromQL words that are not metric names.
	promKeywords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true,
		"group_right": true, "bool": true, "and": true, "or": true, "unless": true, "offset": true, "inf": true, "nan": true}
	// promAggregations may have by/without between their name and "(".
	promAggregations = map[string]bool{"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true,
		"stdvar": true, "count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
		"limitk": true, "limit_ratio": true}
)

// metricNames returns the metric names a PromQL expression selects: the
// identifiers that are neither functions, aggregations, keywords, label
// names (in braces or after by/without/on/ignoring) nor inside strings or
// range brackets.
func metricNames(expr string) []string {
	var names []string
	skipParen := false // the next (...) lists labels
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(expr) && expr[j] != c {
				if expr[j] == '\\' {
					j++
				}
				j++
			}
			i = j + 1
		case c == '{' || c == '[':
			end := map[byte]byte{'{': '}', '[': ']'}[c]
			j := strings.IndexByte(expr[i:], end)
			if j < 0 {
				return names
			}
			i += j + 1
		case c == '(' && skipParen:
			j := strings.IndexByte(expr[i:], ')')
			if j < 0 {
				return names
			}
			i += j + 1
			skipParen = false
		case c >= '0' && c <= '9' || c == '.': // a number or a duration (1e3, 0.95, 5m)
			for i < len(expr) && (expr[i] == '.' || promIdent.MatchString(expr[i:i+1]) || expr[i] >= '0' && expr[i] <= '9') {
				i++
			}
		default:
			id := promIdent.FindString(expr[i:])
			if id == "" {
				i++
				continue
			}
			i += len(id)
			rest := strings.TrimLeft(expr[i:], " \t\n")
			switch {
			case id == "by" || id == "without" || id == "on" || id == "ignoring" || id == "group_left" || id == "group_right":
				skipParen = true
			case promKeywords[strings.ToLower(id)], promAggregations[id]:
			case strings.HasPrefix(rest, "("): // a function or an aggregation
			default:
				names = append(names, id)
			}
		}
	}
	return names
}

func TestMetricNamesFindsTheSelectedMetricsOnly(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`up`, []string{"up"}},
		{`sum by (class) (rate(scrapy_crawler_responses_total{code!="200", job=~"a|b"}[5m]))`, []string{"scrapy_crawler_responses_total"}},
		{`histogram_quantile(0.95, sum by (le) (rate(x_bucket[5m]))) / on(instance) group_left y`, []string{"x_bucket", "y"}},
		{`max without (instance) (a) > bool 1e3 or b offset 5m`, []string{"a", "b"}},
		{`count(z{label="by (x) rate(q)"})`, []string{"z"}},
	} {
		if got := metricNames(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("metricNames(%q) = %v, want %v", tc.expr, got, tc.want)
		}
	}
}

// TestDashboardPanelsQueryOnlyMetricsTheBinariesExport checks every
// dashboard panel's query: valid PromQL (promtool), and every metric it
// selects exported by a live run of the four binaries that crawls a page,
// drops a request, and serves REST, info and stats requests. It also checks
// that docs/metrics.md documents exactly the scrapy_* metrics the binaries
// export.
func TestDashboardPanelsQueryOnlyMetricsTheBinariesExport(t *testing.T) {
	queries := dashboardQueries(t)
	if len(queries) < 10 {
		t.Fatalf("only %d panel queries in the dashboards", len(queries))
	}
	exported := liveMetrics(t)
	for _, q := range queries {
		names := metricNames(q.expr)
		if len(names) == 0 {
			t.Errorf("%s: %q selects no metric", q.where, q.expr)
		}
		for _, n := range names {
			if !exported[n] {
				t.Errorf("%s: %q queries %s, which no binary exports", q.where, q.expr, n)
			}
		}
	}

	docs, err := os.ReadFile(filepath.Join(harness.Root(t), "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("`(scrapy_[a-z_]+)`").FindAllStringSubmatch(string(docs), -1) {
		documented[m[1]] = true
	}
	families := map[string]bool{}
	for n := range exported {
		if strings.HasPrefix(n, "scrapy_") {
			families[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")] = true
		}
	}
	for n := range families {
		if !documented[n] && !documented[strings.TrimSuffix(n, "_total")] {
			t.Errorf("docs/metrics.md does not document %s", n)
		}
	}
	for n := range documented {
		if !families[n] {
			t.Errorf("docs/metrics.md documents %s, which no binary exported in the live run", n)
		}
	}

	// The queries are valid PromQL: promtool checks them as recording rules.
	promtool := harness.Tool(t, "promtool", "prometheus")
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rule
	for i, q := range queries {
		rules = append(rules, rule{Record: "dashboard:query_" + strconv.Itoa(i), Expr: q.expr})
	}
	b, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboards", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "dashboard-queries.yml")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runErr(time.Minute, nil, promtool, "check", "rules", file); err != nil {
		t.Errorf("promtool check rules on the dashboards' queries: %v\n%s", err, out)
	}
}

// liveMetrics runs the four binaries against real services, makes each
// count something, scrapes their /metrics and returns every sample name.
func liveMetrics(t *testing.T) map[string]bool {
	t.Helper()
	r := harness.StartRedis(t)
	k := harness.StartKafka(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/robots.txt":
			fmt.Fprint(w, "User-agent: *\nDisallow: /private\n")
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<html><body><a href="/a">a</a></body></html>`)
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<html><body>a page</body></html>`)
		}
	}))
	t.Cleanup(site.Close)
	ports := map[string]int{}
	for _, name := range []string{"kafka-monitor", "redis-monitor", "crawler", "rest"} {
		p := harness.Port(t)
		ports[name] = p
	}
	env := []string{
		"REDIS_HOST=127.0.0.1", "REDIS_PORT=" + strconv.Itoa(r.Port), "KAFKA_HOSTS=" + k.Hosts(), "ZOOKEEPER_HOSTS=",
		"PUBLIC_IP_URL=", "QUEUE_MODERATED=false", "QUEUE_HITS=1000", "ROBOTSTXT_OBEY=true",
		"FETCH_ALLOWED_NETWORKS=127.0.0.0/8", "FLASK_HOST=127.0.0.1", "FLASK_PORT=" + strconv.Itoa(ports["rest"]),
		"LOG_LEVEL=WARNING", "SC_LOG_LEVEL=WARNING",
		// Waiting for a replica that the one Redis does not have: the
		// crawler and the Kafka Monitor export scrapy_redis_wait_short_total
		// only when they wait (each write then waits 1 ms and carries on).
		"REDIS_WAIT_REPLICAS=1", "REDIS_WAIT_TIMEOUT_MS=1",
	}
	admin := func(name string) []string {
		return append(slices.Clone(env), "ADMIN_ADDR=127.0.0.1:"+strconv.Itoa(ports[name]))
	}
	startProc(t, "", admin("kafka-monitor"), binary(t, "kafka-monitor"), "run")
	startProc(t, "", admin("redis-monitor"), binary(t, "redis-monitor"))
	startProc(t, "", admin("crawler"), binary(t, "crawler"))
	startProc(t, "", env, binary(t, "rest"))
	base := func(name string) string { return "http://127.0.0.1:" + strconv.Itoa(ports[name]) }

	feed := func(req string) { run(t, 30*time.Second, env, binary(t, "kafka-monitor"), "feed", req) }
	feed(`{"url": "` + site.URL + `/", "appid": "testapp", "crawlid": "mon1", "maxdepth": 1}`)
	feed(`{"url": "` + site.URL + `/private/1", "appid": "testapp", "crawlid": "mon2"}`)
	feed(`{"action": "info", "appid": "testapp", "uuid": "mon-info-1", "crawlid": "mon1", "spiderid": "link"}`)
	feed(`{"stats": "queue", "appid": "testapp", "uuid": "mon-stats-1"}`)

	var samples map[string]map[string]float64
	scrapeAll := func() {
		samples = map[string]map[string]float64{}
		for _, name := range []string{"kafka-monitor", "redis-monitor", "crawler", "rest"} {
			samples[name] = scrapeSamples(base(name))
		}
	}
	has := func(component, prefix string) bool {
		for s, v := range samples[component] {
			if strings.HasPrefix(s, prefix) && v > 0 {
				return true
			}
		}
		return false
	}
	waitFor(t, 60*time.Second, "every component to count the requests", func() bool {
		if resp, err := http.Get(base("rest") + "/"); err == nil {
			resp.Body.Close()
		}
		scrapeAll()
		return has("crawler", `scrapy_crawler_responses_total{class="2xx"`) && has("crawler", `scrapy_crawler_requests_dropped_total{reason="robots"`) &&
			has("redis-monitor", `scrapy_redis_monitor_requests_total{outcome="handled", plugin="InfoMonitor"}`) &&
			has("kafka-monitor", `scrapy_kafka_monitor_requests_total{outcome="stored", plugin="ScraperHandler"}`) &&
			has("rest", `scrapy_rest_requests_total{code="200", endpoint="/"}`)
	})
	names := map[string]bool{}
	for _, s := range samples {
		for series := range s {
			name, _, _ := strings.Cut(series, "{")
			names[name] = true
		}
	}
	return names
}

// scrapeSamples reads a /metrics page into values by series
// (name{label="value", ...}); nil while it does not answer.
func scrapeSamples(base string) map[string]float64 {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil
	}
	out := map[string]float64{}
	for _, f := range families {
		vec, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{Timestamp: model.Now()}, f)
		if err != nil {
			return nil
		}
		for _, s := range vec {
			out[s.Metric.String()] = float64(s.Value)
		}
	}
	return out
}
