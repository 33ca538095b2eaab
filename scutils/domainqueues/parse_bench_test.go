package domainqueues_test

import (
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/domainqueues"
)

const benchMember = `{"allow_regex":null,"allowed_domains":null,"appid":"testapp","attrs":null,"cookie":null,"crawlid":"big","deny_extensions":null,"deny_regex":null,"expires":0,"maxdepth":2,"priority":-1,"spiderid":"link","ts":1767323045.123456,"url":"http://d1.example.com/page/1","useragent":null}`

func BenchmarkParse(b *testing.B) {
	for b.Loop() {
		if _, ok := domainqueues.Parse(benchMember); !ok {
			b.Fatal("not parsed")
		}
	}
}

// BenchmarkParseWithTheSharedCodec is what Parse saves: the same member
// read with crawlrequest.Decode.
func BenchmarkParseWithTheSharedCodec(b *testing.B) {
	for b.Loop() {
		if _, err := crawlrequest.Decode([]byte(benchMember)); err != nil {
			b.Fatal(err)
		}
	}
}
