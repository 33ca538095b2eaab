// Package wandering is the "wandering" spider, the original's
// WanderingSpider (the spec's extension example): it stumbles through the
// web one random link at a time, until it reaches a page without links it
// may follow, or a page the crawl has already seen (the scheduler's
// duplicate filter drops the request).
//
// Behaviour, as the original's:
//   - One Page per response, with attrs.step: how many hops from the seed
//     (the seed is step 0). attrs null becomes {"step": n}; other attrs
//     keep their keys, step overwritten. Links stay [] (the hop taken is
//     not listed).
//   - Of the links the request's filters allow (see package links), one,
//     chosen at random, becomes the next request: same crawl, spider,
//     priority and curdepth (maxdepth does not stop a wanderer), and the
//     top-level field "step" one higher. That field is where the original
//     keeps the count (its request meta), so original and Go wanderers can
//     share a crawl.
//
// Differences: as for the link spider (status_msg, invalid regexes, non-
// markup responses). attrs that are not a JSON object cannot hold a step
// and are published unchanged; the original's spider failed on them.
package wandering

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider/links"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
)

// Name is the spider's name and the spiderid of its requests.
const Name = "wandering"

// StepField is the request field counting the hops.
const StepField = "step"

func init() { spider.Register(Name, func() spider.Spider { return &Spider{} }) }

// Spider is the wandering spider. It is safe for concurrent use.
type Spider struct {
	// Choose picks the link to follow among n (it returns 0 <= i < n);
	// nil picks uniformly at random. Tests set it.
	Choose func(n int) int
}

// Name returns "wandering".
func (*Spider) Name() string { return Name }

// Parse publishes the response with its step and follows one random link.
func (s *Spider) Parse(_ context.Context, resp *spider.Response) (spider.Output, error) {
	page := spider.NewPage(resp)
	out := spider.Output{Pages: []*spider.Page{page}}
	req := resp.Request
	if req == nil {
		return out, nil
	}
	step := Step(req)
	page.Attrs = withStep(page.Attrs, step)
	found, refused, err := links.Follow(page, req)
	if err != nil {
		return out, fmt.Errorf("links of %s: %w", page.ResponseURL, err)
	}
	out.Refused = refused // the links not taken are no refusal: one is taken at random
	if len(found) == 0 {
		return out, nil
	}
	choose := s.Choose
	if choose == nil {
		choose = rand.IntN
	}
	next, err := hop(req, found[choose(len(found))].URL, step+1)
	if err != nil {
		return out, fmt.Errorf("next hop from %s: %w", page.ResponseURL, err)
	}
	out.Requests = []*crawlrequest.Request{next}
	return out, nil
}

// Step returns a request's hop count (0 for a seed or an unreadable value).
func Step(r *crawlrequest.Request) int {
	raw, ok := r.Extra(StepField)
	if !ok {
		return 0
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil || f < 0 || f > 1e9 {
		return 0
	}
	return int(f)
}

// withStep returns attrs with "step" set: {} when null, unchanged when it
// is not an object.
func withStep(attrs json.RawMessage, step int) json.RawMessage {
	m := map[string]json.RawMessage{}
	if len(attrs) > 0 && string(attrs) != "null" {
		if err := json.Unmarshal(attrs, &m); err != nil || m == nil {
			return attrs
		}
	}
	m[StepField] = json.RawMessage(strconv.Itoa(step))
	b, err := json.Marshal(m)
	if err != nil {
		return attrs
	}
	return b
}

// hop is the request for the next page: r's crawl one hop further, at r's
// priority and depth, with the step field set.
func hop(r *crawlrequest.Request, url string, step int) (*crawlrequest.Request, error) {
	next := r.Follow(url)
	next.Priority, next.CurDepth = r.Priority, r.CurDepth
	if err := next.SetExtra(StepField, json.RawMessage(strconv.Itoa(step))); err != nil {
		return nil, err
	}
	return next, nil
}
