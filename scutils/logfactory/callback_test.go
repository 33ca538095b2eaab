package logfactory

import (
	"strings"
	"testing"
	"time"
)

func TestCallbackLevelExpressions(t *testing.T) {
	tests := []struct {
		expr string
		want string // levels whose lines run the callback
	}{
		{"DEBUG", "DEBUG"},
		{"INFO", "INFO"},
		{"WARN", "WARNING"},
		{"WARNING", "WARNING"},
		{"ERROR", "ERROR"},
		{"CRITICAL", "CRITICAL"},
		{"=INFO", "INFO"},
		{"info", "INFO"},
		{"<=INFO", "DEBUG,INFO"},
		{"<INFO", "DEBUG"},
		{"<WARN", "DEBUG,INFO"},
		{">DEBUG", "INFO,WARNING,ERROR,CRITICAL"},
		{">=WARNING", "WARNING,ERROR,CRITICAL"},
		{">ERROR", "CRITICAL"},
		{"<=CRITICAL", "DEBUG,INFO,WARNING,ERROR,CRITICAL"},
		{" >= ERROR ", "ERROR,CRITICAL"},
		{"*", "DEBUG,INFO,WARNING,ERROR,CRITICAL"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			l, _ := newBuffered(t, Config{Level: "DEBUG"})
			var got []string
			if err := l.RegisterCallback(tt.expr, func(msg string, _ map[string]any) { got = append(got, msg) }, nil); err != nil {
				t.Fatalf("RegisterCallback(%q): %v", tt.expr, err)
			}
			l.Debug("DEBUG")
			l.Info("INFO")
			l.Warn("WARNING")
			l.Error("ERROR")
			l.Critical("CRITICAL")
			if strings.Join(got, ",") != tt.want {
				t.Errorf("callback ran for %v, want %s", got, tt.want)
			}
		})
	}
}

func TestBadCallbackExpressionsAreErrors(t *testing.T) {
	l, _ := newBuffered(t, Config{})
	fn := func(string, map[string]any) {}
	for _, expr := range []string{"", "VERBOSE", "<=", ">", "=>INFO", "**", "*INFO", "<DEBUG", ">CRITICAL", "INFO,ERROR"} {
		if err := l.RegisterCallback(expr, fn, nil); err == nil {
			t.Errorf("RegisterCallback(%q) succeeded, want an error", expr)
		}
	}
	if err := l.RegisterCallback("INFO", nil, nil); err == nil {
		t.Errorf("RegisterCallback with nil fn succeeded")
	}
}

func TestCallbackCriteriaMustBeASubsetOfExtras(t *testing.T) {
	type myString string
	tests := []struct {
		name     string
		criteria map[string]any
		extra    []Extra
		want     bool
	}{
		{"no criteria matches no extras", nil, nil, true},
		{"empty criteria matches anything", map[string]any{}, []Extra{{"a": 1}}, true},
		{"subset matches", map[string]any{"a": 1}, []Extra{{"a": 1, "b": 2, "c": 3}}, true},
		{"equal sets match", map[string]any{"a": 1, "b": "x"}, []Extra{{"a": 1, "b": "x"}}, true},
		{"missing key does not match", map[string]any{"a": 1}, []Extra{{"b": 1}}, false},
		{"no extras does not match", map[string]any{"a": 1}, nil, false},
		{"different value does not match", map[string]any{"a": 1}, []Extra{{"a": 2}}, false},
		{"one of two keys does not match", map[string]any{"a": 1, "b": 2}, []Extra{{"a": 1}}, false},
		{"numbers compare by value", map[string]any{"a": 1}, []Extra{{"a": int64(1)}}, true},
		{"int matches equal float", map[string]any{"a": 1}, []Extra{{"a": 1.0}}, true},
		{"uint matches int", map[string]any{"a": uint8(7)}, []Extra{{"a": 7}}, true},
		{"negative int is no uint", map[string]any{"a": uint64(1<<64 - 1)}, []Extra{{"a": -1}}, false},
		{"number is not a string", map[string]any{"a": 1}, []Extra{{"a": "1"}}, false},
		{"string types compare by text", map[string]any{"a": myString("v")}, []Extra{{"a": "v"}}, true},
		{"nil matches nil", map[string]any{"a": nil}, []Extra{{"a": nil}}, true},
		{"nil does not match a value", map[string]any{"a": nil}, []Extra{{"a": 0}}, false},
		{"nested values compare deeply", map[string]any{"a": []string{"x"}}, []Extra{{"a": []string{"x"}}}, true},
		{"extras merge before matching", map[string]any{"a": 1, "b": 2}, []Extra{{"a": 1}, {"b": 2}}, true},
		{"later extras win", map[string]any{"a": 1}, []Extra{{"a": 1}, {"a": 2}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, _ := newBuffered(t, Config{})
			ran := false
			if err := l.RegisterCallback("*", func(string, map[string]any) { ran = true }, tt.criteria); err != nil {
				t.Fatal(err)
			}
			l.Info("m", tt.extra...)
			if ran != tt.want {
				t.Errorf("callback ran = %v, want %v", ran, tt.want)
			}
		})
	}
}

func TestCallbackSeesMessageAndExtrasAfterTheLineIsWritten(t *testing.T) {
	l, buf := newBuffered(t, Config{})
	var gotMsg string
	var gotExtra map[string]any
	linesAtCall := 0
	if err := l.RegisterCallback(">=INFO", func(msg string, extra map[string]any) {
		gotMsg, gotExtra, linesAtCall = msg, extra, len(lines(buf))
	}, nil); err != nil {
		t.Fatal(err)
	}
	l.Info("check callback")
	if gotMsg != "check callback" || gotExtra == nil || len(gotExtra) != 0 || linesAtCall != 1 {
		t.Errorf("callback got %q %v with %d lines written", gotMsg, gotExtra, linesAtCall)
	}
}

func TestCallbacksOnlySeeWrittenLines(t *testing.T) {
	// As in the original, the level check comes first: at INFO a DEBUG
	// callback never runs.
	l, _ := newBuffered(t, Config{Level: "INFO"})
	ran := 0
	if err := l.RegisterCallback("*", func(string, map[string]any) { ran++ }, nil); err != nil {
		t.Fatal(err)
	}
	l.Debug("dropped")
	l.Info("kept")
	if ran != 1 {
		t.Errorf("callback ran %d times, want 1", ran)
	}
}

func TestCallbackCriteriaAreCopied(t *testing.T) {
	l, _ := newBuffered(t, Config{})
	crit := map[string]any{"a": 1}
	ran := false
	if err := l.RegisterCallback("INFO", func(string, map[string]any) { ran = true }, crit); err != nil {
		t.Fatal(err)
	}
	crit["a"] = 2
	l.Info("m", Extra{"a": 1})
	if !ran {
		t.Errorf("changing the criteria map after registering changed the callback")
	}
}

func TestCallbackMayLog(t *testing.T) {
	l, buf := newBuffered(t, Config{})
	if err := l.RegisterCallback("ERROR", func(msg string, _ map[string]any) { l.Info("saw " + msg) }, nil); err != nil {
		t.Fatal(err)
	}
	l.Error("boom")
	if got := lines(buf); len(got) != 2 || !strings.HasSuffix(got[1], "INFO: saw boom") {
		t.Errorf("lines = %q", got)
	}
}

// exampleLF runs the spec's utils/examples/example_lf.py against a logger and
// returns my_var.
func exampleLF(t *testing.T, l *Logger) int {
	t.Helper()
	myVar := 1
	theCallback := func(string, map[string]any) { myVar += 5 }
	theCallback2 := func(string, map[string]any) { myVar *= 2 }
	if err := l.RegisterCallback("DEBUG", theCallback, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.RegisterCallback("WARN", theCallback2, map[string]any{"key": "value"}); err != nil {
		t.Fatal(err)
	}
	l.Debug("debug output 1")
	l.Warn("warn output", Extra{"key": "value", "key2": "value2"})
	l.Warn("warn output 2")
	l.Debug("debug output 2")
	l.Critical("critical fault, closing")
	l.Debug("debug output 3")
	sum := 2 + 2
	l.Info("Info output closing.", Extra{"sum": sum})
	l.Error("Final var value", Extra{"value": myVar})
	return myVar
}

func TestSpecExampleLFAtDebugYields22(t *testing.T) {
	// python example_lf.py -ll DEBUG -ie
	l, buf := newBuffered(t, Config{Level: "DEBUG", IncludeExtra: true})
	if got := exampleLF(t, l); got != 22 {
		t.Errorf("my_var = %d, want 22", got)
	}
	want := "" +
		"2017-02-01 15:27:48,814 [scrapy-cluster] DEBUG: debug output 1\n" +
		"2017-02-01 15:27:48,814 [scrapy-cluster] WARNING: warn output {'key': 'value', 'key2': 'value2'}\n" +
		"2017-02-01 15:27:48,814 [scrapy-cluster] WARNING: warn output 2\n" +
		"2017-02-01 15:27:48,814 [scrapy-cluster] DEBUG: debug output 2\n" +
		"2017-02-01 15:27:48,814 [scrapy-cluster] CRITICAL: critical fault, closing\n" +
		"2017-02-01 15:27:48,814 [scrapy-cluster] DEBUG: debug output 3\n" +
		"2017-02-01 15:27:48,814 [scrapy-cluster] INFO: Info output closing. {'sum': 4}\n" +
		"2017-02-01 15:27:48,814 [scrapy-cluster] ERROR: Final var value {'value': 22}\n"
	if buf.String() != want {
		t.Errorf("output:\n got %s\nwant %s", buf, want)
	}
}

func TestSpecExampleLFAtInfoInJSON(t *testing.T) {
	// python example_lf.py --log-level INFO --log-json: the DEBUG callback
	// never runs, so the final value is 2.
	l, buf := newBuffered(t, Config{Level: "INFO", JSON: true, Now: fixedClock(time.Date(2017, 2, 1, 20, 29, 24, 548895000, time.UTC))})
	if got := exampleLF(t, l); got != 2 {
		t.Errorf("my_var = %d, want 2", got)
	}
	const ts = `"timestamp": "2017-02-01T20:29:24.548895Z"`
	want := "" +
		`{"message": "warn output", "logger": "scrapy-cluster", ` + ts + `, "level": "WARNING", "key": "value", "key2": "value2"}` + "\n" +
		`{"message": "warn output 2", "logger": "scrapy-cluster", ` + ts + `, "level": "WARNING"}` + "\n" +
		`{"message": "critical fault, closing", "logger": "scrapy-cluster", ` + ts + `, "level": "CRITICAL"}` + "\n" +
		`{"message": "Info output closing.", "logger": "scrapy-cluster", ` + ts + `, "level": "INFO", "sum": 4}` + "\n" +
		`{"message": "Final var value", "logger": "scrapy-cluster", ` + ts + `, "level": "ERROR", "value": 2}` + "\n"
	if buf.String() != want {
		t.Errorf("output:\n got %s\nwant %s", buf, want)
	}
}
