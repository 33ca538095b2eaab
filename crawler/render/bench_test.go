package render_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/render"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/testsite"
)

// BenchmarkPoolRender: pages rendered by one pool with RENDER_CONCURRENCY's
// default, Concurrency renders asked at once (the browser started before
// the timer), the test site's script pages: all of one crawl (a tab goes
// from page to page of the crawl unwiped), and each of a crawl of its own
// (every tab wiped between pages).
func BenchmarkPoolRender(b *testing.B) {
	b.Run("one-crawl", func(b *testing.B) { poolRender(b, func(int) string { return "one" }) })
	b.Run("a-crawl-per-page", func(b *testing.B) { poolRender(b, strconv.Itoa) })
}

// poolRender renders b.N script pages, page n of session(n).
func poolRender(b *testing.B, session func(n int) string) {
	site := testsite.Start(b)
	p := newPool(b, render.Config{Block: render.DefaultBlock, Concurrency: render.Concurrency.Default()})
	if _, err := p.Render(context.Background(), render.Request{URL: site.URL("/js/0"), Spec: defaultSpec}, 1<<20); err != nil {
		b.Fatal(err)
	}
	cpu := render.NewCPUTracker(os.Getpid(), map[int]string{os.Getpid(): "pool-site"})
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				cpu.Sample()
			}
		}
	})
	b.ResetTimer()
	var wg sync.WaitGroup
	next := make(chan int)
	for range render.Concurrency.Default() {
		wg.Go(func() {
			for n := range next {
				req := render.Request{URL: site.URL("/js/" + strconv.Itoa(n)), Spec: defaultSpec, Session: session(n)}
				if _, err := p.Render(context.Background(), req, 1<<20); err != nil {
					b.Error(err)
				}
			}
		})
	}
	for i := range b.N {
		next <- i
	}
	close(next)
	wg.Wait()
	b.StopTimer()
	close(stop)
	sampler.Wait()
	cpu.Sample()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
	var total time.Duration
	var kinds []string
	for k, d := range cpu.ByKind() {
		total += d
		kinds = append(kinds, fmt.Sprintf("%s %.1f", k, d.Seconds()*1000/float64(b.N)))
	}
	slices.Sort(kinds)
	b.ReportMetric(total.Seconds()*1000/float64(b.N), "cpu-ms/page")
	b.Logf("%d pages: processor ms per page by process: %s; processes %v", b.N, strings.Join(kinds, ", "), cpu.Processes())
}
