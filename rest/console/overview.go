package console

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/stats"
)

// The Overview's chart: responses per minute over the last hour.
const (
	chartSpan = time.Hour
	chartStep = time.Minute
	// failWindow is the window of the failure counts shown (SECONDS_15_MINUTE).
	failWindow = "900"
)

type overviewData struct {
	Err        string
	Components []componentView
	Spiders    []spiderView
	Crawlers   int
	Backlog    int64
	Chart      chart
	Failures   []failureView
}

// componentView is one plugin-style component's instances.
type componentView struct {
	Name  string
	Hosts []hostView
	Count int
}

type hostView struct {
	Host string
	IDs  []string
	N    int
}

// spiderView is one spider type: its crawlers by host and its backlog.
type spiderView struct {
	Name    string
	Running int
	Hosts   []hostView
	Backlog int64
	Domains int64
}

type failureView struct {
	Component string
	Count     int64
}

func (c *Console) overviewPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := pageContext(r)
	defer cancel()
	data := c.overview(ctx, time.Now())
	c.render(w, r, http.StatusOK, "overview", "Overview", data, c.refreshing)
}

// componentNames are the plugin-style components as the Overview names them.
var componentNames = map[string]string{"kafka-monitor": "Kafka Monitors", "redis-monitor": "Redis Monitors", "rest": "REST services"}

// overview reads the stats (one pass over stats:* and the queues) and the
// crawlers' history at once.
func (c *Console) overview(ctx context.Context, now time.Time) *overviewData {
	reader := c.front.Stats(now)
	var (
		cluster    *stats.ClusterStats
		history    *stats.History
		errC, errH error
		wg         sync.WaitGroup
	)
	wg.Go(func() { cluster, errC = reader.Cluster(ctx) })
	wg.Go(func() { history, errH = reader.CrawlerHistory(ctx, chartSpan, chartStep) })
	wg.Wait()
	d := &overviewData{}
	if errC != nil {
		d.Err = errC.Error()
		return d
	}
	if errH != nil {
		d.Err = errH.Error()
	} else {
		d.Chart = newChart(history, now)
	}
	for _, name := range stats.PluginComponents() {
		cs := cluster.Components[name]
		cv := componentView{Name: componentNames[name]}
		for host, ids := range cs.Nodes {
			cv.Hosts = append(cv.Hosts, hostView{Host: host, IDs: ids, N: len(ids)})
			cv.Count += len(ids)
		}
		sortHosts(cv.Hosts)
		d.Components = append(d.Components, cv)
		if name != "rest" {
			d.Failures = append(d.Failures, failureView{Component: componentNames[name], Count: cs.Fail[failWindow]})
		}
	}
	spiders := map[string]*spiderView{}
	spider := func(name string) *spiderView {
		if spiders[name] == nil {
			spiders[name] = &spiderView{Name: name}
		}
		return spiders[name]
	}
	for name, s := range cluster.Crawlers.Spiders {
		sv := spider(name)
		sv.Running = s.Running
		for host, n := range s.Hosts {
			sv.Hosts = append(sv.Hosts, hostView{Host: host, N: n})
		}
		sortHosts(sv.Hosts)
	}
	for name, q := range cluster.Queues.Spiders {
		sv := spider(name)
		sv.Backlog, sv.Domains = q.SpiderBacklog, int64(q.NumDomains)
	}
	for _, sv := range spiders {
		d.Spiders = append(d.Spiders, *sv)
	}
	slices.SortFunc(d.Spiders, func(a, b spiderView) int { return strings.Compare(a.Name, b.Name) })
	d.Crawlers = cluster.Crawlers.Running
	d.Backlog = cluster.Queues.TotalBacklog
	return d
}

func sortHosts(h []hostView) {
	slices.SortFunc(h, func(a, b hostView) int { return strings.Compare(a.Host, b.Host) })
}

// chart is the responses-per-minute chart, drawn as inline SVG bars.
type chart struct {
	Bars    []bar
	Max     int64
	Total   int64
	Width   int
	Height  int
	Covered string // how far back the counters reach, when less than the span
	Empty   bool   // no crawler counter found
	Labels  []axisLabel
}

type bar struct {
	X, Y, W, H int
	Title      string
}

type axisLabel struct {
	X      int
	Text   string
	Anchor string // SVG text-anchor
}

// The chart's drawing area, in SVG user units.
const (
	chartWidth  = 720
	chartHeight = 160
)

func newChart(h *stats.History, now time.Time) chart {
	ch := chart{Width: chartWidth, Height: chartHeight, Total: h.Total(), Empty: h.Covered == 0}
	if h.Covered > 0 && h.Covered < chartSpan {
		ch.Covered = h.Covered.String()
	}
	for _, n := range h.Counts {
		ch.Max = max(ch.Max, n)
	}
	n := len(h.Counts)
	if n == 0 {
		return ch
	}
	w := chartWidth / n
	for i, count := range h.Counts {
		height := 0
		if ch.Max > 0 {
			height = int(int64(chartHeight) * count / ch.Max)
		}
		if count > 0 && height == 0 {
			height = 1
		}
		from := h.Start.Add(time.Duration(i) * h.Step)
		ch.Bars = append(ch.Bars, bar{
			X: i * w, Y: chartHeight - height, W: max(w-1, 1), H: height,
			Title: fmt.Sprintf("%s–%s UTC: %d responses", from.UTC().Format("15:04"), from.Add(h.Step).UTC().Format("15:04"), count),
		})
	}
	for _, back := range []int{60, 45, 30, 15, 0} {
		x := chartWidth - back*chartWidth/60
		label := axisLabel{X: x, Text: fmt.Sprintf("−%d min", back), Anchor: "middle"}
		switch back {
		case 60:
			label.Anchor = "start"
		case 0:
			label.Text, label.Anchor = "now", "end"
		}
		ch.Labels = append(ch.Labels, label)
	}
	return ch
}
