// Package logfactory is the Scrapy Cluster logger: the Go counterpart of the
// original's scutils.log_factory. A line is formatted in a pooled buffer
// and written whole, in one Write, under the logger's lock; the rotating
// file is its own (rotate.go). Nothing is copied per line but the extras'
// keys for sorting: a text line with a crawl request's fields costs a few
// microseconds (BenchmarkTextLine), which a component logging every request
// pays many thousand times a second.
//
// A line logged often with the same keys (the crawler's two lines per
// page) can give its extras as a list of typed fields instead of a map
// (LogFields, InfoFields; String, Int, Bool, Any): the same bytes in every
// format and the same callbacks, without the map to build and sort
// (BenchmarkPageLine: no allocation for a text line of a page's ten
// fields, against five).
//
// Every component builds one Logger from its LOG_* settings with New and
// passes it down; there is no process-wide instance. Named and With derive
// loggers that share the output, level and callbacks.
//
// # Formats
//
// Text lines read
//
//	2017-02-01 15:27:48,814 [scrapy-cluster] WARNING: warn output
//
// in local time with milliseconds after a comma, and Python's level names
// (DEBUG, INFO, WARNING, ERROR, CRITICAL). With Config.TextFields (setting
// LOG_TEXT_FIELDS, on by default) the extra fields follow the message as
// logfmt key=value pairs:
//
//	2017-02-01 15:27:48,814 [sc-crawler] ERROR: Gave up retrying the request; dropped url=http://example.com/a appid=testapp crawlid=abc123 spiderid=link error="dial tcp 127.0.0.1:9: connect: connection refused" retry_times=3
//
// url, appid, crawlid, spiderid, uuid, reason and error come first when
// present, then the other keys sorted. A value is written as is unless it
// is empty or holds a space, '=', '"' or an unprintable character; then it
// is quoted with Go's escapes (\" \\ \n \t \u2028 \x00). Numbers and
// booleans are their text, nil is null, errors and fmt.Stringers their
// text, maps, lists and structs compact JSON. Each value shows at most
// 1,024 bytes of its text, the rest replaced by "...(N bytes)" (N the whole
// length), and the fields of a line take at most 8 KiB, so a page body or a
// huge URL never makes a huge line; fields beyond that are left out and
// counted in a closing "...(N more fields)". JSON lines always carry every
// field whole. Without TextFields a line is the message alone, as the
// original's. With Config.IncludeExtra the extra fields follow the message
// instead as Python's str(dict) would print them, keys sorted: "warn
// output {'key': 'value', 'key2': 'value2'}".
//
// JSON lines (Config.JSON) are one object per line, as the ELK material
// (Logstash json codec, Kibana's "timestamp" time field, "%{[logger]}"
// document type) expects:
//
//	{"message": "warn output", "logger": "scrapy-cluster", "timestamp": "2017-02-01T20:29:24.548895Z", "level": "WARNING", "key": "value", "key2": "value2"}
//
// The four fixed fields come first, the extras follow in key order, written
// with Python's separators. Non-ASCII text stays UTF-8. An extra that
// encoding/json cannot encode (a channel, a function, NaN, a cycle) is
// written in a best-effort form (a string, or its exported fields) instead
// of losing the line. An extra named message, logger, timestamp or level is
// written as "fields.<name>"; it never replaces the logger's own field.
//
// # Files
//
// With Stdout false and no Output, lines go to Dir/File. A line that would
// take the file past MaxBytes goes to a fresh file; the old one is kept as a
// lumberjack backup named after its rotation time in UTC, main.log becoming
// main-2017-02-01T20-29-24.548.log (the original's handler used main.log.1,
// main.log.2, ...), and only the newest Backups backups are kept; pruning runs
// in the background just after a rotation. Backups still end in .log, so the
// ELK guide's '/var/log/scrapy-cluster/*.log' glob sees them; Logstash's file
// input follows files by inode, so a renamed file is not read twice. Only when
// lines come faster than one rotation per millisecond does a file grow past
// MaxBytes, until the next millisecond (two backups named after the same
// millisecond would overwrite one another). A file is meant for one process:
// unlike the original's ConcurrentRotatingFileHandler, nothing coordinates
// several processes rotating the same file, so give each process its own
// File.
//
// # Callbacks
//
// RegisterCallback runs a function for written lines of chosen levels whose
// extras match given criteria, as the original's register_callback.
package logfactory
