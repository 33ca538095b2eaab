package stats

import (
	"context"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

func TestCrawlerHistoryCountsEachMinuteOnceFromTheShortestWindowCoveringTheSpan(t *testing.T) {
	rdb := harness.StartRedis(t).TestClient(t)
	now := time.Now()
	link200 := rediskeys.CrawlerStatusKey("host1", "link", "200")
	// The same hits in every window a crawler keeps: only one may count.
	for _, w := range []string{":900", ":3600", ":86400"} {
		hitsAt(t, rdb, now, link200+w, 30*time.Second, 90*time.Second, 100*time.Second, 59*time.Minute+30*time.Second)
	}
	hitsAt(t, rdb, now, link200+":lifetime-not-a-window", time.Second)
	// Another host and code, with only a 15-minute window: covered in part.
	hitsAt(t, rdb, now, rediskeys.CrawlerStatusKey("host2", "link", "404")+":900", 10*time.Second, 2*time.Hour)
	heartbeat(t, rdb, rediskeys.CrawlerHeartbeatKey("host1", "link", "c1"))

	h, err := Reader{Redis: rdb, Now: now}.CrawlerHistory(context.Background(), time.Hour, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Counts) != 60 || h.Step != time.Minute || !h.Start.Equal(now.Add(-time.Hour)) {
		t.Fatalf("history has %d steps of %s from %s, want 60 of 1m0s from %s", len(h.Counts), h.Step, h.Start, now.Add(-time.Hour))
	}
	want := map[int]int64{59: 2, 58: 2, 0: 1}
	for i, n := range h.Counts {
		if n != want[i] {
			t.Errorf("step %d (from %s ago) counts %d, want %d", i, now.Sub(h.Start.Add(time.Duration(i)*time.Minute)), n, want[i])
		}
	}
	if h.Total() != 5 {
		t.Errorf("Total = %d, want 5", h.Total())
	}
	if h.Covered != time.Hour {
		t.Errorf("Covered = %s, want 1h0m0s", h.Covered)
	}
}

func TestCrawlerHistorySaysHowFarBackShortWindowsReach(t *testing.T) {
	tests := []struct {
		name    string
		windows []string
		want    time.Duration
	}{
		{"no counters at all", nil, 0},
		{"only a 15-minute window", []string{":900"}, 15 * time.Minute},
		{"a 15-minute and a 6-hour window", []string{":900", ":21600"}, time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rdb := harness.StartRedis(t).TestClient(t)
			now := time.Now()
			for _, w := range tt.windows {
				hitsAt(t, rdb, now, rediskeys.CrawlerStatusKey("h", "link", "200")+w, time.Second)
			}
			h, err := Reader{Redis: rdb, Now: now}.CrawlerHistory(context.Background(), time.Hour, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if h.Covered != tt.want {
				t.Errorf("Covered = %s, want %s", h.Covered, tt.want)
			}
			if wantTotal := int64(min(len(tt.windows), 1)); h.Total() != wantTotal {
				t.Errorf("Total = %d, want %d", h.Total(), wantTotal)
			}
		})
	}
}

func TestCrawlerHistoryRefusesAnEmptySpanOrStep(t *testing.T) {
	r := Reader{Now: time.Now()}
	if _, err := r.CrawlerHistory(context.Background(), 0, time.Minute); err == nil {
		t.Error("span 0: no error")
	}
	if _, err := r.CrawlerHistory(context.Background(), time.Hour, 0); err == nil {
		t.Error("step 0: no error")
	}
}
