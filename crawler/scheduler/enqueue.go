package scheduler

import (
	"context"
	_ "embed"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/fingerprint"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// Enqueued says what became of each follow-up request.
type Enqueued struct {
	Queued, Duplicate, PageLimit, Expired, Blacklisted, Invalid int
}

//go:embed enqueue.lua
var enqueueSource string

var enqueueScript = redis.NewScript(enqueueSource)

// Enqueue queues the follow-up requests of parent's page (all of parent's
// crawl): skipping expired crawls and, without SCHEDULER_BACKLOG_BLACKLIST,
// blacklisted domains, then in one atomic step the crawl blacklist, the
// duplicate filter (parent's own URL is marked seen too), domain_max_pages
// and GLOBAL_PAGE_PER_DOMAIN_LIMIT. A queue created by it is announced.
func (s *Scheduler) Enqueue(ctx context.Context, parent *crawlrequest.Request, reqs []*crawlrequest.Request) (Enqueued, error) {
	var out Enqueued
	if parent.Expired(s.now()) {
		out.Expired = len(reqs)
		return out, nil
	}
	s.mu.Lock()
	blacklist := s.config.Blacklist
	s.mu.Unlock()
	keys := []string{rediskeys.BlacklistKey(s.cfg.SpiderID), rediskeys.DupeFilterKey(s.cfg.SpiderID, parent.CrawlID)}
	args := []any{
		parent.AppID + "||" + parent.CrawlID, seconds(s.cfg.DupeTimeout), seconds(s.cfg.DomainMaxPageTimeout),
		s.cfg.GlobalPageLimit, seconds(s.cfg.GlobalPageTimeout), fingerprint.Of(parent.URL),
	}
	var channels []any
	for _, r := range reqs {
		dom, err := rediskeys.DomainOfURL(r.URL)
		if err != nil {
			out.Invalid++
			continue
		}
		if !s.cfg.BacklogBlacklist && slices.Contains(blacklist, dom) {
			out.Blacklisted++
			continue
		}
		member, err := r.Encode()
		if err != nil {
			out.Invalid++
			continue
		}
		keys = append(keys, rediskeys.QueueKey(r.SpiderID, dom),
			rediskeys.DomainMaxPageKey(s.cfg.SpiderID, dom, r.CrawlID), rediskeys.GlobalPageCountKey(s.cfg.SpiderID, dom, r.CrawlID))
		args = append(args, fingerprint.Of(r.URL), string(member), r.Score(), r.DomainMaxPages)
		channels = append(channels, rediskeys.QueueChannel(r.SpiderID))
	}
	args = append(args, channels...)
	codes, err := enqueueScript.Run(ctx, s.rdb, keys, args...).Int64Slice()
	if err != nil {
		return out, fmt.Errorf("queue follow-up requests: %w", err)
	}
	if len(codes) == 1 && codes[0] == -1 {
		out.Blacklisted += len(channels)
		return out, nil
	}
	for i, c := range codes {
		switch c {
		case 0:
			out.Queued++
			if key := keys[2+3*i]; key[:len(s.cfg.SpiderID)+1] == s.cfg.SpiderID+":" {
				s.addDomain(key)
			}
		case 1:
			out.Duplicate++
		default:
			out.PageLimit++
		}
	}
	return out, nil
}

func seconds(d time.Duration) string { return strconv.FormatInt(int64(math.Ceil(d.Seconds())), 10) }
