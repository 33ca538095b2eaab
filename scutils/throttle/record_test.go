package throttle_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/throttle"
)

func TestLeaseRecordsReadBackInEitherForm(t *testing.T) {
	member := `{"url":"http://a.com/x\ny","appid":"app:1","crawlid":"c\"1"}`
	for _, tc := range []struct {
		name, stored string
		want         throttle.Record
	}{
		{"as pops write them", throttle.Record{Queue: "link:a.com:queue", Score: "-50", Member: member}.String(),
			throttle.Record{Queue: "link:a.com:queue", Score: "-50", Member: member}},
		{"a queue key with a colon, a newline and digits in it", throttle.Record{Queue: "sp\n1:9:a.com:queue", Score: "-1.5", Member: "m"}.String(),
			throttle.Record{Queue: "sp\n1:9:a.com:queue", Score: "-1.5", Member: "m"}},
		{"an empty member", throttle.Record{Queue: "q", Score: "0", Member: ""}.String(), throttle.Record{Queue: "q", Score: "0"}},
		{"as earlier versions wrote them", `{"q":"link:a.com:queue","s":"-50","m":"{\"url\":\"http://a.com/x\\ny\",\"appid\":\"app:1\",\"crawlid\":\"c\\\"1\"}"}`,
			throttle.Record{Queue: "link:a.com:queue", Score: "-50", Member: member}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := throttle.ParseRecord(tc.stored)
			if !ok || got != tc.want {
				t.Fatalf("ParseRecord(%q) = %+v, %v; want %+v", tc.stored, got, ok, tc.want)
			}
		})
	}
	for _, bad := range []string{"", "abc", "99:short-1\nm", "5:queue-1", "-1:q\nm", "{not json"} {
		if got, ok := throttle.ParseRecord(bad); ok {
			t.Errorf("ParseRecord(%q) = %+v, want not ok", bad, got)
		}
	}
}

// A crawler of this version releases (and reaps) the records of earlier
// versions as well as its own: each item goes back to its queue with its
// score and its bytes.
func TestReleasePutsBackRecordsOfEitherForm(t *testing.T) {
	ctx := context.Background()
	l, c := newLeases(t, 30*time.Second)
	// Earlier versions kept a deadline per lease in the sorted set named
	// by the leases ("leases:link"); the records hash is the same.
	zset, hash := "leases:link", "leases:link:items"
	member := `{"url":"http://a.com/1","appid":"app","crawlid":"c1","note":"a/b \"q\"\n"}`
	records := map[string]string{
		"new": throttle.Record{Queue: "link:a.com:queue", Score: "-7", Member: member}.String(),
		"old": `{"q":"link:b.com:queue","s":"-3","m":"{\"url\":\"http://b.com/1\"}"}`,
	}
	for id, rec := range records {
		c.ZAdd(ctx, zset, redis.Z{Score: 1e12, Member: id})
		c.HSet(ctx, hash, id, rec)
	}
	n, err := l.Release(ctx, "new", "old")
	if err != nil || n != 2 {
		t.Fatalf("released %d, %v; want 2", n, err)
	}
	if got := c.ZRangeWithScores(ctx, "link:a.com:queue", 0, -1).Val(); len(got) != 1 || got[0].Member != member || got[0].Score != -7 {
		t.Fatalf("link:a.com:queue after release: %v", got)
	}
	if got := c.ZRangeWithScores(ctx, "link:b.com:queue", 0, -1).Val(); len(got) != 1 || got[0].Member != `{"url":"http://b.com/1"}` || got[0].Score != -3 {
		t.Fatalf("link:b.com:queue after release: %v", got)
	}
	if c.HLen(ctx, hash).Val() != 0 || c.ZCard(ctx, zset).Val() != 0 {
		t.Fatal("released leases left")
	}
	// A lease of an earlier version past its deadline is reaped.
	c.ZAdd(ctx, zset, redis.Z{Score: 1, Member: "dead"})
	c.HSet(ctx, hash, "dead", records["old"])
	if n, err := l.Reap(ctx, 10); err != nil || n != 1 || c.ZCard(ctx, "link:b.com:queue").Val() != 1 || c.HLen(ctx, hash).Val() != 0 {
		t.Fatalf("reaped %d, %v; want the earlier version's lease back in its queue", n, err)
	}
}
