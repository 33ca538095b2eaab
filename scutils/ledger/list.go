package ledger

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// Entry is one crawl with its progress, as listings show it.
type Entry struct {
	SpiderID string    `json:"spiderid"`
	AppID    string    `json:"appid"`
	CrawlID  string    `json:"crawlid"`
	Progress *Progress `json:"progress"`
}

// List returns crawls with their progress, newest first: those of appID, or
// of every app when appID is "", skipping offset and at most limit of them,
// with the number of crawls listed in all. Crawls whose ledger expired are
// dropped from the index on the way.
func List(ctx context.Context, rdb redis.Cmdable, appID string, offset, limit int) ([]Entry, int64, error) {
	key := rediskeys.LedgerCrawlsKey
	if appID != "" {
		key = rediskeys.LedgerAppCrawlsKey(appID)
	}
	if limit <= 0 {
		return nil, 0, fmt.Errorf("list crawls: limit must be positive, got %d", limit)
	}
	pipe := rdb.Pipeline()
	members := pipe.ZRevRange(ctx, key, int64(offset), int64(offset+limit-1))
	total := pipe.ZCard(ctx, key)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, 0, fmt.Errorf("list crawls: %w", err)
	}
	var crawls []Crawl
	for _, m := range members.Val() {
		if c, err := ParseMember(m); err == nil {
			crawls = append(crawls, c)
		}
	}
	progress, err := Read(ctx, rdb, crawls...)
	if err != nil {
		return nil, 0, err
	}
	entries := make([]Entry, 0, len(crawls))
	var gone []any
	for i, c := range crawls {
		if progress[i] == nil {
			gone = append(gone, c.Member())
			continue
		}
		entries = append(entries, Entry{SpiderID: c.SpiderID, AppID: c.AppID, CrawlID: c.CrawlID, Progress: progress[i]})
	}
	if len(gone) > 0 {
		pipe := rdb.Pipeline()
		pipe.ZRem(ctx, rediskeys.LedgerCrawlsKey, gone...)
		for _, m := range gone {
			c, _ := ParseMember(m.(string))
			pipe.ZRem(ctx, rediskeys.LedgerAppCrawlsKey(c.AppID), m)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, 0, fmt.Errorf("drop expired crawls from the index: %w", err)
		}
	}
	return entries, total.Val() - int64(len(gone)), nil
}
