package scheduler

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/lifecycle"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

// refreshIP reads the public IP from PUBLIC_IP_URL (the first match of
// IP_ADDR_REGEX). When it cannot (no URL, unreachable, no match) the last
// known address stays, 127.0.0.1 at first, as the original falls back. A
// changed address re-keys every domain's throttle.
func (s *Scheduler) refreshIP(ctx context.Context) {
	if s.cfg.PublicIPURL == "" {
		return
	}
	ip, err := lookupIP(ctx, s.cfg.PublicIPURL, s)
	if err != nil {
		s.log.Error("Could not reach out to get public ip", logfactory.Extra{"url": s.cfg.PublicIPURL, "error": err.Error()})
		return
	}
	s.mu.Lock()
	old := s.ip
	s.ip = ip
	if old != ip {
		for _, d := range s.domains {
			s.configure(d)
		}
	}
	s.mu.Unlock()
	if old != ip {
		s.log.Info("Changed Public IP: "+old+" -> "+ip, logfactory.Extra{"old": old, "new": ip})
	}
}

type ipError string

func (e ipError) Error() string { return string(e) }

func lookupIP(ctx context.Context, url string, s *Scheduler) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", err
	}
	m := s.cfg.IPRegex.FindSubmatch(body)
	if m == nil {
		return "", ipError("no IP address in the answer")
	}
	if len(m) > 1 {
		return string(m[1]), nil
	}
	return string(m[0]), nil
}

func (s *Scheduler) ipLoop(ctx context.Context) {
	if !s.cfg.ByIP || s.cfg.PublicIPURL == "" {
		return
	}
	for lifecycle.Sleep(ctx, s.cfg.IPRefresh) {
		s.refreshIP(ctx)
	}
}

// IP returns the public IP the throttle keys use.
func (s *Scheduler) IP() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ip
}
