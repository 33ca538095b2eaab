package render_test

import (
	"bytes"
	"context"
	"os"
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
	cpu := treeCPU()
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
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
	b.ReportMetric((treeCPU()-cpu).Seconds()*1000/float64(b.N), "cpu-ms/page")
}

// treeCPU is the processor time of this process and every process below
// it, with their reaped children's (the browsers' dead renderers): what
// rendering costs, whatever else the machine runs.
func treeCPU() time.Duration {
	var ticks int64
	for _, pid := range append([]int{os.Getpid()}, render.Descendants(os.Getpid())...) {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:])) // state is f[0]; utime, stime, cutime, cstime are f[11:15]
		for _, v := range f[11:15] {
			n, _ := strconv.ParseInt(v, 10, 64)
			ticks += n
		}
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}
