// Package wirejson writes and reads the JSON our components exchange: the
// crawl requests the Kafka Monitor reads and stores, the queue members
// crawlers and the Redis Monitor read and write, the crawl results on
// Kafka, and JSON log lines. encoding/json does most of the work; what
// lives here is what must be written byte for byte as before (other
// components, the Python original among them, and the fixtures read
// those bytes) or read in the original's way, and so cannot be left to
// encoding/json:
//
//   - AppendString and AppendText: the one JSON string escaper, with
//     Options for the variants our writers have always written (Go,
//     KafkaMonitor, LogLine); every style writes non-ASCII text as UTF-8
//     (none of our writers ever wrote Python's ensure_ascii \uXXXX form,
//     so there is no option for it);
//   - Append: the values decoded JSON holds, written with those Options
//     (floats as Python writes them with PythonFloats), keys sorted;
//   - Decode: a document read as Python's json.loads reads it (integers
//     as json.Number, other numbers as float64);
//   - EachMember, Unquote and Strings: an object split into its members'
//     JSON text without decoding the values, a string and a list of
//     strings read, for the readers of queue members.
//
// Decode has a decoder of its own beside encoding/json for the usual
// request, because it pays on the Kafka Monitor's ingest path. With
// encoding/json alone, BenchmarkIngestCrawlRequests (go test -run '^$'
// -bench 'IngestCrawlRequests$' -benchtime 20000x ./kafka-monitor/monitor/,
// 12 runs interleaved with the decoder's) took a median 42.6 µs of the
// process's CPU per request instead of 33.1 (+29%; 13,500 instead of
// 18,200 requests/s), and BenchmarkValidateCrawlRequest
// (./kafka-monitor/plugin/) 21.0 µs and 43 allocations instead of 11.2 µs
// and 23. TestDecodeFastReadsWhatEncodingJSONReads and its fuzz test hold
// the two to the same values; BenchmarkDecode measures it alone.
package wirejson
