package dump

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestRender(t *testing.T) {
	tests := []struct {
		name     string
		format   Format
		in       string
		want     string
		wantNote bool
	}{
		{"a JSON object is compacted on one line in the order it came", Format{},
			`{ "url": "http://a.example",  "appid": "x", "n": 1 }`, `{"url":"http://a.example","appid":"x","n":1}` + "\n", false},
		{"text is printed as it came", Format{}, "not json at all", "not json at all\n", false},
		{"broken JSON is printed as text", Format{}, `{"url": `, `{"url": ` + "\n", false},
		{"a JSON array is printed as it came", Format{}, `[1, 2]`, "[1, 2]\n", false},
		{"two JSON objects in one message are text", Format{}, `{"a":1}{"b":2}`, `{"a":1}{"b":2}` + "\n", false},
		{"pretty indents an object by four spaces", Format{Pretty: true},
			`{"a":1,"b":{"c":[true,null]}}`, "{\n    \"a\": 1,\n    \"b\": {\n        \"c\": [\n            true,\n            null\n        ]\n    }\n}\n", false},
		{"pretty leaves text alone", Format{Pretty: true}, "plain\ttext", "plain\ttext\n", false},
		{"pretty leaves an array alone", Format{Pretty: true}, `[1,2]`, "[1,2]\n", false},
		{"numbers keep their exact digits", Format{}, `{"big":12345678901234567890,"f":1.50}`, `{"big":12345678901234567890,"f":1.50}` + "\n", false},
		{"decode-base64 decodes the body as UTF-8 by default", Format{DecodeBase64: true},
			`{"url":"u","body":"` + b64("<html>héllo & bye</html>") + `"}`, `{"url":"u","body":"<html>héllo & bye</html>"}` + "\n", false},
		{"decode-base64 reads the encoding field", Format{DecodeBase64: true},
			`{"encoding":"ISO-8859-1","body":"` + base64.StdEncoding.EncodeToString([]byte{'c', 'a', 'f', 0xe9}) + `"}`,
			`{"encoding":"ISO-8859-1","body":"café"}` + "\n", false},
		{"decode-base64 knows windows-1252", Format{DecodeBase64: true},
			`{"encoding":"cp1252","body":"` + base64.StdEncoding.EncodeToString([]byte{0x93, 'q', 0x94, ' ', 0x80}) + `"}`,
			`{"encoding":"cp1252","body":"“q” €"}` + "\n", false},
		{"decode-base64 accepts line breaks and missing padding", Format{DecodeBase64: true},
			`{"body":"aGVs\nbG8"}`, `{"body":"hello"}` + "\n", false},
		{"decode-base64 leaves a body that is not base64 and says so", Format{DecodeBase64: true},
			`{"body":"<html>not base64</html>"}`, `{"body":"<html>not base64</html>"}` + "\n", true},
		{"decode-base64 leaves a body that is not a string and says so", Format{DecodeBase64: true},
			`{"body":42}`, `{"body":42}` + "\n", true},
		{"decode-base64 replaces bytes invalid in the charset and says so", Format{DecodeBase64: true},
			`{"body":"` + base64.StdEncoding.EncodeToString([]byte{'a', 0xff, 'b'}) + `"}`, `{"body":"a` + "\uFFFD" + `b"}` + "\n", true},
		{"decode-base64 ignores a message without body", Format{DecodeBase64: true}, `{"a":1}`, `{"a":1}` + "\n", false},
		{"decode-base64 with pretty", Format{DecodeBase64: true, Pretty: true},
			`{"body":"` + b64("hi") + `"}`, "{\n    \"body\": \"hi\"\n}\n", false},
		{"no-body drops the body", Format{NoBody: true}, `{"a":1,"body":"x","b":2}`, `{"a":1,"b":2}` + "\n", false},
		{"just-body prints a string body as raw text", Format{JustBody: true}, `{"a":1,"body":"<p>line1\nline2</p>"}`, "<p>line1\nline2</p>\n", false},
		{"just-body decodes base64 first", Format{JustBody: true, DecodeBase64: true}, `{"body":"` + b64("<p>hi</p>") + `"}`, "<p>hi</p>\n", false},
		{"just-body prints a non-string body as JSON", Format{JustBody: true}, `{"body":{"x": [1, 2]}}`, `{"x":[1,2]}` + "\n", false},
		{"just-body prints nothing for a message without body", Format{JustBody: true}, `{"a":1}`, "", true},
		{"just-body prints nothing for text", Format{JustBody: true}, `hello`, "", true},
		{"the last of duplicate body keys is the body", Format{JustBody: true}, `{"body":"first","body":"second"}`, "second\n", false},
		{"escaped keys survive", Format{}, `{"a\"b\u00e9":1}`, `{"a\"bé":1}` + "\n", false},
		{"an empty message is an empty line", Format{}, ``, "\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, note := tt.format.Render([]byte(tt.in))
			if string(got) != tt.want {
				t.Errorf("Render(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if (note != nil) != tt.wantNote {
				t.Errorf("Render(%q) note = %v, want a note: %v", tt.in, note, tt.wantNote)
			}
		})
	}
}

func TestRenderNotesAMissingBodyWithErrNoBody(t *testing.T) {
	for _, in := range []string{`{"a":1}`, `text`} {
		if _, note := (Format{JustBody: true}).Render([]byte(in)); !errors.Is(note, ErrNoBody) {
			t.Errorf("Render(%q) note = %v, want ErrNoBody", in, note)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"a topic is enough", Options{Topic: "demo.incoming"}, ""},
		{"a topic is required", Options{}, "no topic"},
		{"a negative number of messages is refused", Options{Topic: "t", Max: -1}, "negative"},
		{"no-body and just-body exclude each other", Options{Topic: "t", Format: Format{NoBody: true, JustBody: true}}, "exclude"},
		{"pretty and just-body exclude each other", Options{Topic: "t", Format: Format{Pretty: true, JustBody: true}}, "exclude"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Validate() = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestSummaryReadsAsTheOriginalsLogLine(t *testing.T) {
	if got := (Summary{}).String(); got != "No records consumed" {
		t.Errorf("empty summary = %q", got)
	}
	got := Summary{Messages: 4, Bytes: 2048}.String()
	if want := "Num Records: 4, Total MBs: 0.001953, kb per message: 0.500"; got != want {
		t.Errorf("summary = %q, want %q", got, want)
	}
}
