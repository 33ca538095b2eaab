package scheduler

import (
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainconfig"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisqueue"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/throttle"
)

// SetDomainConfig applies a new domain configuration (blacklist and
// per-domain throttles) to every known domain at once.
func (s *Scheduler) SetDomainConfig(doc domainconfig.Document) {
	s.mu.Lock()
	s.config = doc.Clone()
	for _, d := range s.domains {
		s.configure(d)
	}
	s.mu.Unlock()
	s.signal()
}

// configure (re)builds d's throttle from the domain config and the IP.
func (s *Scheduler) configure(d *domain) {
	hits, window := s.cfg.Hits, s.cfg.Window
	if c, ok := s.config.Domains[d.name]; ok {
		hits, window = c.ScaledHits(), time.Duration(c.Window)*time.Second
	}
	d.blocked = s.config.Blacklisted(d.name) || hits < 1 || window <= 0
	if !d.blocked {
		prefix := s.cfg.Layout.Throttle(s.cfg.SpiderID, s.ip, d.name, s.cfg.ByType, s.cfg.ByIP)
		q := redisqueue.NewPriority[string](s.rdb, d.key)
		tq, err := throttle.New(s.rdb, q, throttle.Config{
			Window: window, Limit: hits, Moderate: s.cfg.Moderated, Elastic: true,
			WindowName: prefix, ModName: prefix,
		})
		if err != nil {
			s.log.Error("Bad throttle for domain; not crawling it", logfactory.Extra{"domain": d.name, "error": err.Error()})
			d.blocked = true
		} else {
			d.q = tq
		}
	}
	switch {
	case d.blocked:
		s.setNext(d, never)
	case d.next.Equal(never) && d.fetching < s.cfg.PerDomain:
		s.setNext(d, s.now())
	}
}

// Throttle returns the throttle settings in force for a domain (for tests
// and logs): hits per window, and whether the domain is blocked.
func (s *Scheduler) Throttle(domainName string) (hits int, window time.Duration, blocked bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.domains[s.cfg.Layout.Queue(s.cfg.SpiderID, domainName)]
	if !ok {
		return 0, 0, false
	}
	if d.blocked {
		return 0, 0, true
	}
	c := d.q.Config()
	return c.Limit, c.Window, false
}
