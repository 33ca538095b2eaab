package request_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/crawler/request"
)

// asQueued is a request as the Kafka Monitor queues it (schema defaults filled in).
const asQueued = `{"url":"http://istresearch.com","appid":"testapp","crawlid":"ABC123","spiderid":"link","priority":1,` +
	`"maxdepth":2,"domain_max_pages":null,"allowed_domains":null,"allow_regex":["/a"],"deny_regex":null,` +
	`"deny_extensions":null,"expires":0,"useragent":null,"cookie":"a=b","attrs":{"k":[1,2]},"ts":1767323045.123456}`

func TestDecodeTheKafkaMonitorsForm(t *testing.T) {
	r, err := request.Decode([]byte(asQueued))
	if err != nil {
		t.Fatal(err)
	}
	if r.URL != "http://istresearch.com" || r.AppID != "testapp" || r.CrawlID != "ABC123" || r.SpiderID != "link" ||
		r.Priority != 1 || r.MaxDepth != 2 || r.CurDepth != 0 || r.Cookie != "a=b" || r.UserAgent != "" ||
		!reflect.DeepEqual(r.AllowRegex, []string{"/a"}) || r.AllowedDomains != nil || string(r.Attrs) != `{"k":[1,2]}` {
		t.Fatalf("decoded %+v", r)
	}
	if ts, ok := r.Extra("ts"); !ok || string(ts) != "1767323045.123456" {
		t.Fatalf("ts %s %v", ts, ok)
	}
}

func TestEncodeKeepsEveryFieldAndRoundTrips(t *testing.T) {
	r, _ := request.Decode([]byte(asQueued))
	b, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var got, want map[string]any
	_ = json.Unmarshal(b, &got)
	_ = json.Unmarshal([]byte(asQueued), &want)
	want["curdepth"], want["retry_times"] = 0.0, 0.0
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("encoded %s", b)
	}
	again, err := request.Decode(b)
	if err != nil || !reflect.DeepEqual(again, r) {
		t.Fatalf("round trip %+v, %v", again, err)
	}
}

func TestDecodeTheOriginalCrawlersSerializedForm(t *testing.T) {
	member := `{"url":"http://a.com/x","callback":"parse","meta":{"appid":"app","crawlid":"c","spiderid":"link",` +
		`"priority":-9,"curdepth":1,"maxdepth":2,"retry_times":0,"expires":0,"cookie":{"b":"2","a":"1"},"attrs":null}}`
	r, err := request.Decode([]byte(member))
	if err != nil {
		t.Fatal(err)
	}
	if r.URL != "http://a.com/x" || r.Priority != -9 || r.CurDepth != 1 || r.Cookie != "a=1; b=2" || r.Attrs != nil {
		t.Fatalf("decoded %+v", r)
	}
}

func TestDecodeRejectsWhatCannotBeCrawled(t *testing.T) {
	for member, want := range map[string]string{
		`nope`:                               "not a JSON object",
		`{"appid":"a","crawlid":"c"}`:        "no url",
		`{"url":"http://a.com","appid":"a"}`: "no appid or crawlid",
		`{"url":"http://a.com","appid":"a","crawlid":"c","priority":"high"}`: "priority is not an integer",
		`{"url":"http://a.com","appid":"a","crawlid":"c","allow_regex":"x"}`: "allow_regex is not a list",
	} {
		if _, err := request.Decode([]byte(member)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Decode(%s) = %v, want %q", member, err, want)
		}
	}
}

func TestFollowAndRetry(t *testing.T) {
	r, _ := request.Decode([]byte(asQueued))
	r.RetryTimes = 2
	c := r.Follow("http://istresearch.com/about")
	if c.URL != "http://istresearch.com/about" || c.Priority != -9 || c.CurDepth != 1 || c.RetryTimes != 0 || c.CrawlID != "ABC123" {
		t.Fatalf("follow %+v", c)
	}
	c.AllowRegex[0] = "changed"
	if r.AllowRegex[0] != "/a" {
		t.Fatal("Follow shares the parent's slices")
	}
	if rt := r.Retry(); rt.RetryTimes != 3 || rt.Priority != -9 || rt.URL != r.URL {
		t.Fatalf("retry %+v", rt)
	}
	r.Expires = float64(time.Now().Add(-time.Second).Unix())
	if !r.Expired(time.Now()) {
		t.Fatal("not expired")
	}
}
