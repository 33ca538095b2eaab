package all_test

import (
	"slices"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/spider"
	_ "github.com/scrapycluster/scrapy-cluster-go/crawler/spiders/all"
)

func TestTheBuiltInSpidersAreRegistered(t *testing.T) {
	for _, name := range []string{"link", "wandering"} {
		if !slices.Contains(spider.Registered(), name) {
			t.Errorf("%s not registered: %v", name, spider.Registered())
		}
		if s, err := spider.New(name); err != nil || s.Name() != name {
			t.Errorf("spider.New(%s) = %v, %v", name, s, err)
		}
	}
}
