package queues_test

import (
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/redis-monitor/queues"
)

func BenchmarkParse(b *testing.B) {
	member := `{"allow_regex":null,"allowed_domains":null,"appid":"testapp","attrs":null,"cookie":null,"crawlid":"big","deny_extensions":null,"deny_regex":null,"expires":0,"maxdepth":2,"priority":-1,"spiderid":"link","ts":1767323045.123456,"url":"http://d1.example.com/page/1","useragent":null}`
	for b.Loop() {
		if _, ok := queues.Parse(member); !ok {
			b.Fatal("not parsed")
		}
	}
}
