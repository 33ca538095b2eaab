package extract

import (
	"bytes"
	"math"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/wirejson"
)

// Values are a page's extracted values as the crawl result's "extracted"
// JSON object: compact, its fields in name order, each value as
// wirejson.Append writes what Apply gives (strings in wirejson's Go style,
// as the crawler writes its results) — the bytes the crawler wrote for
// Apply's map (TestValuesAreTheMapsJSON), without the map, its lists and
// the resolved URLs' strings, which ApplyJSON writes from scratch memory
// reused page to page. The zero Values is the empty object.
type Values struct {
	json []byte
	n    int
}

// AppendJSON appends the values' JSON object to b.
func (v Values) AppendJSON(b []byte) []byte {
	if v.json == nil {
		return append(b, "{}"...)
	}
	return append(b, v.json...)
}

// MarshalJSON is the values' JSON object (encoding/json's json.Marshaler).
func (v Values) MarshalJSON() ([]byte, error) { return v.AppendJSON(nil), nil }

// Len is the number of fields.
func (v Values) Len() int { return v.n }

// Map is the values decoded (wirejson.Decode), as Apply gives them but for
// lists, which are []any.
func (v Values) Map() (map[string]any, error) {
	m, err := wirejson.Decode(v.AppendJSON(nil))
	if err != nil {
		return nil, err
	}
	return m.(map[string]any), nil
}

// scratch is the memory ApplyJSON reuses from page to page (Rules keeps a
// pool of them): each rule's list of values, the buffer of the resolved
// URLs (a joiner that writes over the last page's), the values found and
// the JSON being written. What a page's values are made of is copied into
// its Values before the scratch goes back to the pool.
type scratch struct {
	lists [][]string // by rule index
	vals  []any      // by rule index
	set   []bool     // by rule index
	urls  []byte     // the joiner's buffer
	enc   []byte
}

func (rs *Rules) getScratch() *scratch {
	if sc, ok := rs.scratches.Get().(*scratch); ok {
		return sc
	}
	n := len(rs.rules)
	sc := &scratch{lists: make([][]string, n), vals: make([]any, n), set: make([]bool, n)}
	for i := range sc.lists {
		sc.lists[i] = make([]string, 0, 1) // a rule without all: its value
	}
	return sc
}

// ApplyJSON is Apply's values as a crawl result writes them: Values.
func (rs *Rules) ApplyJSON(pageURL, text string) Values {
	p := &page{url: pageURL, text: text}
	defer p.release()
	return rs.applyJSON(p)
}

// ApplyDocJSON is ApplyDoc's values as a crawl result writes them: Values.
// The Doc is not released.
func (rs *Rules) ApplyDocJSON(d *Doc) Values {
	return rs.applyJSON(&d.p)
}

func (rs *Rules) applyJSON(p *page) Values {
	if rs.Len() == 0 {
		return Values{}
	}
	sc := rs.getScratch()
	p.sc, p.joiner = sc, joiner{buf: sc.urls[:0], reuse: true}
	n := 0
	rs.run(p, func(r *rule, v any) {
		sc.vals[r.index], sc.set[r.index] = v, true
		if list, ok := v.([]string); ok && cap(list) > cap(sc.lists[r.index]) {
			sc.lists[r.index] = list[:0] // grown: the next page's room
		}
		n++
	})
	b := append(sc.enc[:0], '{')
	for i := range rs.rules {
		if !sc.set[i] {
			continue
		}
		if b[len(b)-1] != '{' {
			b = append(b, ',')
		}
		b = append(wirejson.AppendString(b, rs.rules[i].name, wirejson.Go), ':')
		b = appendValue(b, sc.vals[i])
	}
	b = append(b, '}')
	out := Values{json: bytes.Clone(b), n: n}
	// Nothing of the page stays in the scratch (its strings would keep the
	// page's text alive).
	sc.urls, sc.enc = p.joiner.buf[:0], b[:0]
	p.sc, p.joiner = nil, joiner{}
	for i := range sc.lists {
		clear(sc.lists[i][:cap(sc.lists[i])])
	}
	clear(sc.vals)
	clear(sc.set)
	rs.scratches.Put(sc)
	return out
}

// appendValue appends a rule's value as wirejson.Append writes it in Go
// style; a value JSON cannot hold (an xpath number that is not finite:
// number('x') is NaN) as null.
func appendValue(b []byte, v any) []byte {
	if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return append(b, "null"...)
	}
	out, err := wirejson.Append(b, v, wirejson.Go)
	if err != nil {
		return append(b, "null"...)
	}
	return out
}
