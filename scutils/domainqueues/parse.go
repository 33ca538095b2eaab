package domainqueues

import (
	"encoding/json"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/crawlrequest"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
)

// Parse reads the identity fields of one queue member. It is the hot path
// of info, stop and expire over large queues, so it splits the member's
// JSON text (wirejson.EachMember) for the few fields it needs instead of
// reading the whole request with crawlrequest.Decode, which checks the
// whole text and every field first (see the package doc for what that
// saves). Members that are not a single JSON object, or lack appid or
// crawlid strings, are rejected: exactly the members that
// crawlrequest.Decode says name no crawl (DecodeError.Named), which the
// tests check on the shared fixtures and by fuzzing.
func Parse(member string) (Entry, bool) {
	var top, meta scanned
	inMeta, bad := false, false
	ok := wirejson.EachMember(member, func(key, value string) {
		top.note(key, value)
		if key == crawlrequest.FieldMeta { // of repeated keys the last counts
			if inMeta = value[0] == '{'; inMeta {
				meta = scanned{}
				bad = bad || !wirejson.EachMember(value, meta.note)
			}
		}
	})
	f := &top
	if inMeta {
		f = &meta
	}
	if !ok || bad || !f.hasAppID || !f.hasCrawlID {
		return Entry{}, false
	}
	return Entry{Member: member, AppID: f.appID, CrawlID: f.crawlID, Priority: f.priority, Expires: f.expires}, true
}

// scanned is what Parse keeps of an object's fields.
type scanned struct {
	appID, crawlID       string
	hasAppID, hasCrawlID bool
	priority, expires    json.Number
}

// note keeps one field, if it is one of interest.
func (f *scanned) note(key, raw string) {
	switch key {
	case crawlrequest.FieldAppID:
		f.appID, f.hasAppID = wirejson.Unquote(raw)
	case crawlrequest.FieldCrawlID:
		f.crawlID, f.hasCrawlID = wirejson.Unquote(raw)
	case crawlrequest.FieldPriority:
		f.priority = number(raw)
	case crawlrequest.FieldExpires:
		f.expires = number(raw)
	}
}

// number keeps a numeric literal; anything else (null, a string) is "".
func number(raw string) json.Number {
	if raw == "" || !(raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		return ""
	}
	return json.Number(raw)
}
