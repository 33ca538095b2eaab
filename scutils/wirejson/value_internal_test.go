package wirejson

import (
	"encoding/json"
	"testing"
)

// Without its own writer every value would still be written right, by
// encoding/json, only slower: what requests and log lines usually hold
// must not need it.
func TestAppendWritesUsualValuesItself(t *testing.T) {
	for _, v := range []any{
		[]any{"a", map[string]any{"b": []string{"c"}}, json.Number("12"), nil, true, 7, int64(-3)},
		map[string]any{"url": "http://example.com/<a>", "attrs": map[string]any{"n": 1.5}},
	} {
		if _, ok := appendValue(nil, v, KafkaMonitor, 0); !ok {
			t.Errorf("%#v is left to encoding/json", v)
		}
	}
}
