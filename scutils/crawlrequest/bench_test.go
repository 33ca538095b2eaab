package crawlrequest_test

import (
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
)

// benchMember is a seed as the Kafka Monitor queues it.
const benchMember = `{"allow_regex":null,"allowed_domains":null,"appid":"testapp","attrs":null,"cookie":null,"crawlid":"big",` +
	`"deny_extensions":null,"deny_regex":null,"domain_max_pages":null,"expires":0,"maxdepth":2,"priority":1,"spiderid":"link",` +
	`"url":"http://d1.example.com/page/1","useragent":null}`

// BenchmarkDecode reads a popped member (the crawler does it once per page).
func BenchmarkDecode(b *testing.B) {
	for b.Loop() {
		if _, err := crawlrequest.Decode([]byte(benchMember)); err != nil {
			b.Fatal(err)
		}
	}
}

// benchListMember is a follow-up of a crawl that names its links' domains
// and patterns (BenchmarkCrawlCost's has allow_regex ["/page/"]). A
// string with escapes (a regex's \\.) is still read by encoding/json.
const benchListMember = `{"allow_regex":["/page/"],"allowed_domains":["d1.example.com","d2.example.com"],` +
	`"appid":"testapp","attrs":null,"cookie":null,"crawlid":"big","deny_extensions":null,"deny_regex":null,` +
	`"domain_max_pages":null,"expires":0,"maxdepth":2,"priority":1,"spiderid":"link","url":"http://d1.example.com/page/1","useragent":null}`

// BenchmarkDecodeLists reads a popped member with lists of strings.
func BenchmarkDecodeLists(b *testing.B) {
	for b.Loop() {
		if _, err := crawlrequest.Decode([]byte(benchListMember)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFollowEncode derives and writes one follow-up request (the
// crawler does it once per link queued).
func BenchmarkFollowEncode(b *testing.B) {
	r, err := crawlrequest.Decode([]byte(benchMember))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := r.Follow("http://d1.example.com/page/2").Encode(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeEncode is the Kafka Monitor's path: a member read and
// written back unchanged.
func BenchmarkDecodeEncode(b *testing.B) {
	for b.Loop() {
		r, err := crawlrequest.Decode([]byte(benchMember))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}
