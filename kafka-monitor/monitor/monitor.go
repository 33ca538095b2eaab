// Package monitor is the Kafka Monitor: it consumes requests from the
// incoming Kafka topic, validates each against the enabled plugins' schemas
// in rank order and lets the first matching plugin store it in Redis.
//
// Delivery is at-least-once, and each request is stored once: requests are
// handled in batches, a batch's Redis writes go in one pipelined round trip
// with marks naming the messages stored (storedMarks), and its Kafka
// offsets are committed as soon as Redis accepted them, never before. A
// monitor that takes partitions over after another was killed between the
// two skips the marked messages it gets again. When Redis is down the batch
// is retried with back-off (nothing is skipped, nothing committed) until it
// succeeds or the monitor is stopped; plugin writes are idempotent, so a
// batch stored twice after all (a rebalance in the middle of a batch)
// leaves the same state, but for a second queue entry of a crawl request.
//
// Bad input (empty, not UTF-8, not JSON, too large, no schema matches, a
// request a plugin's Validator refuses: plugin.Validate's verdict, the same
// as the REST service's and the feed command's) is logged with its reason
// ("Request rejected: <reason>"), counted in stats:kafka-monitor:fail:*, and
// committed; it never stops the monitor.
package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/kafka-monitor/plugin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/heartbeat"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/lifecycle"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/pyrepr"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisconn"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/stats"
)

// Monitor is one Kafka Monitor process.
type Monitor struct {
	settings *settings.Settings
	log      *logfactory.Logger
	rdb      redis.UniversalClient
	wait     *redisconn.Waiter // REDIS_WAIT_REPLICAS: the stores wait for replicas before the offsets are committed
	kafka    kafkaclient.Config
	plugins  []plugin.Loaded

	host, id  string
	maxBytes  int
	batchSize int
	readAhead int64 // READ_AHEAD_BYTES: Run's budget for the messages it holds

	topic, group string        // KAFKA_INCOMING_TOPIC, KAFKA_GROUP
	partitions   int           // KAFKA_INCOMING_PARTITIONS, when Run creates the topic
	heartbeat    time.Duration // HEARTBEAT_TIMEOUT
	dumpEvery    time.Duration // STATS_DUMP; 0 never

	processed atomic.Int64 // messages handled (stored, failed or skipped as stored before), for tests and benchmarks
	launched  struct {     // batches (and their messages) launched into Redis, landed or not, for tests
		batches, messages atomic.Int64
	}
	budget  atomic.Pointer[readAhead] // while Run runs: its read-ahead budget, for tests
	marks   *storedMarks
	reports chan outcome // while Run runs: the stored batches for reportLoop

	statsCh   chan statsDelta
	statsDone chan struct{}

	stats *stats.MonitorStats

	metrics *metrics // Prometheus's (metrics.go)
}

// New loads and sets up the enabled plugins and the stats collectors.
// rdb is the Redis client the monitor writes through; the caller closes it.
func New(ctx context.Context, s *settings.Settings, log *logfactory.Logger, rdb redis.UniversalClient) (*Monitor, error) {
	kcfg, err := kafkaclient.ConfigFromSettings(s)
	if err != nil {
		return nil, err
	}
	plugins, err := plugin.LoadPlugins(s)
	if err != nil {
		return nil, err
	}
	wait, err := redisconn.NewWaiter(s, log)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	m := &Monitor{
		settings: s, log: log, rdb: rdb, wait: wait, kafka: kcfg, plugins: plugins,
		host: host, id: heartbeat.NewID(), maxBytes: MaxRequestBytes.From(s), batchSize: max(1, BatchSize.From(s)),
		readAhead: int64(ReadAheadBytes.From(s)),
		topic:     IncomingTopic.From(s), group: ConsumerGroup.From(s), partitions: plugin.IncomingPartitions.From(s),
		heartbeat: HeartbeatTimeout.From(s), dumpEvery: stats.Dump.From(s),
	}
	m.marks = newStoredMarks(rdb, m.group, m.topic)
	m.metrics = newMetrics(m)
	env := plugin.Env{Settings: s, Logger: log, Redis: rdb}
	for _, p := range plugins {
		if err := p.Plugin.Setup(ctx, env); err != nil {
			return nil, fmt.Errorf("set up plugin %s: %w", p.Key, err)
		}
		log.Debug("Loaded plugin", logfactory.Extra{"plugin": p.Key, "rank": p.Rank})
	}
	if err := m.setupStats(ctx); err != nil {
		m.Close()
		return nil, err
	}
	m.statsCh, m.statsDone = make(chan statsDelta, 64), make(chan struct{})
	go m.statsLoop(context.WithoutCancel(ctx))
	return m, nil
}

func (m *Monitor) setupStats(ctx context.Context) error {
	names := make([]string, len(m.plugins))
	for i, p := range m.plugins {
		names[i] = p.Plugin.Name()
	}
	var err error
	m.stats, err = stats.NewMonitorStatsFromSettings(ctx, m.rdb, m.settings, m.log, "kafka-monitor", names)
	return err
}

// Processed returns how many messages this monitor has handled, stored or failed.
func (m *Monitor) Processed() int64 { return m.processed.Load() }

// Close writes the pending stats and stops the stats collectors. It does
// not close the Redis client. Process must not be called after Close.
func (m *Monitor) Close() {
	if m.statsCh != nil {
		close(m.statsCh)
		<-m.statsDone
		m.statsCh = nil
	}
	if m.stats != nil {
		m.stats.Close()
	}
}

// Run consumes the incoming topic until ctx is cancelled, then finishes the
// batch in hand (when Redis is reachable), commits it and returns nil.
func (m *Monitor) Run(ctx context.Context) error {
	topic := m.topic
	if err := m.ensureTopic(ctx, topic); err != nil {
		return nil // cancelled while Kafka was unreachable
	}
	kcfg := m.kafka
	kcfg.CommitInterval = 0 // commits are synchronous, sent by the committer once a batch is stored
	// Messages are held ahead by fetchLoop, within READ_AHEAD_BYTES; the
	// reader's own queue only bridges a fetch.
	kcfg.QueueCapacity = readerQueue
	reader := kcfg.NewGroupReader(topic, m.group)
	defer reader.Close()
	commits := startCommitter(reader, m.marks, m.log)
	defer commits.close() // before reader.Close: the last commits go out first

	bg, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBackground()
	go heartbeat.Run(bg, m.rdb, rediskeys.HeartbeatKey("kafka-monitor", m.host, m.id), m.heartbeat, m.log)
	if m.dumpEvery > 0 {
		go m.dumpLoop(bg, m.dumpEvery)
	}
	m.log.Info("Kafka Monitor running", logfactory.Extra{"topic": topic, "group": m.group, "id": m.id})

	budget := newReadAhead(m.readAhead)
	m.budget.Store(budget)
	defer m.startReports(budget)()
	msgs := make(chan kafka.Message, m.batchSize)
	go m.fetchLoop(ctx, reader, budget, msgs)
	m.consume(ctx, msgs, commits)
	return nil
}

// startReports has stored batches reported (logs, stats) beside the next
// batch's work, by reportLoop: at most one waits. The function it returns
// waits until every one is reported.
func (m *Monitor) startReports(budget *readAhead) (wait func()) {
	m.reports = make(chan outcome, 1)
	reported := make(chan struct{})
	go m.reportLoop(m.reports, budget, reported)
	return func() {
		close(m.reports)
		<-reported
		m.reports = nil
	}
}

// consume validates and stores the messages fetched into msgs, batch by
// batch, until msgs is closed, ctx ends or a batch is not stored.
//
// A batch is the first waiting message plus whatever else is already
// waiting. Two batches are in flight at most: the next one is validated
// and stored while the writes of the one before are in Redis, so that
// neither this process nor Redis waits for the other. Batches are
// committed and reported in order, and one is never left waiting for more
// messages.
func (m *Monitor) consume(ctx context.Context, msgs <-chan kafka.Message, commits *committer) {
	l := &lander{m: m, commits: commits}
	for {
		batch, ok := l.next(msgs)
		if !ok {
			return
		}
		// Marks are looked up (a start, a rebalance, a redelivery): those
		// of the batch in flight must be written first.
		if !m.marks.readsOn(batch) && l.landFailed(len(batch)) {
			return
		}
		next, err := m.launch(ctx, batch)
		if err != nil {
			if !l.landFailed(len(batch)) {
				m.log.Info("Stopped before the batch was stored; it will be delivered again", logfactory.Extra{"messages": len(batch)})
			}
			return
		}
		if l.landFailed(len(batch)) {
			// The batch before was not stored: next must not be committed
			// past it. What next stored is marked, and skipped when it is
			// delivered again.
			_ = next.wait()
			return
		}
		l.inFlight = next
		if ctx.Err() != nil {
			l.close()
			return
		}
	}
}

// lander lands consume's batch in flight.
type lander struct {
	m        *Monitor
	commits  *committer
	inFlight *flight
}

// landFailed commits and reports the batch in flight, if any, and reports
// whether it was not stored: then consume stops, logging that its messages
// and the others held (more) will be delivered again.
func (l *lander) landFailed(more int) bool {
	f := l.inFlight
	l.inFlight = nil
	if f == nil || l.m.land(f, func() { l.commits.add(f.batch) }) == nil {
		return false
	}
	l.m.log.Info("Stopped before the batch was stored; it will be delivered again", logfactory.Extra{"messages": len(f.batch) + more})
	return true
}

// close lands the batch in flight as the monitor closes.
func (l *lander) close() {
	if !l.landFailed(0) {
		l.m.log.Info("Closing Kafka Monitor")
	}
}

// next returns the next batch of msgs: the first message, waiting for it
// only once the batch in flight is landed, and up to the batch size of
// those already waiting behind it. It is false when consume must stop:
// msgs was closed (the batch in flight is then landed) or the batch in
// flight was not stored.
func (l *lander) next(msgs <-chan kafka.Message) ([]kafka.Message, bool) {
	var first kafka.Message
	var ok bool
	select {
	case first, ok = <-msgs:
	default:
		// Nothing waits: the batch in flight is landed before waiting.
		if l.landFailed(0) {
			return nil, false
		}
		first, ok = <-msgs
	}
	if !ok {
		l.close()
		return nil, false
	}
	batch := []kafka.Message{first}
	for len(batch) < l.m.batchSize {
		select {
		case msg, ok := <-msgs:
			if !ok {
				return batch, true
			}
			batch = append(batch, msg)
		default:
			return batch, true
		}
	}
	return batch, true
}

// fetchLoop reads messages into msgs until ctx is done, then closes it,
// each once budget has room for it. Messages left in msgs at shutdown were
// never committed and are delivered again to the next monitor.
func (m *Monitor) fetchLoop(ctx context.Context, r *kafka.Reader, budget *readAhead, msgs chan<- kafka.Message) {
	defer close(msgs)
	for {
		msg, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			m.log.Error("Failed to read from Kafka", logfactory.Extra{"error": err.Error()})
			if !lifecycle.Sleep(ctx, time.Second) {
				return
			}
			continue
		}
		if budget.take(ctx, heldCost(&msg)) != nil {
			return
		}
		select {
		case msgs <- msg:
		case <-ctx.Done():
			return
		}
	}
}

// ensureTopic creates the incoming topic if needed, retrying while Kafka is
// unreachable; it fails only when ctx is cancelled.
func (m *Monitor) ensureTopic(ctx context.Context, topic string) error {
	backoff := time.Second
	for {
		tctx, cancel := context.WithTimeout(ctx, m.kafka.ConnTimeout)
		err := m.kafka.EnsureTopics(tctx, kafkaclient.TopicSpec{Name: topic, Partitions: m.partitions})
		cancel()
		if err == nil {
			return nil
		}
		m.log.Error("Couldn't reach Kafka to set up the incoming topic; retrying", logfactory.Extra{"error": err.Error(), "topic": topic})
		if !lifecycle.Sleep(ctx, backoff) {
			return ctx.Err()
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

// request is one message on its way through a batch.
type request struct {
	msg     *kafka.Message
	plugin  *plugin.Loaded // nil for a failed or skipped request
	req     plugin.Request
	logMsg  string
	failed  bool
	skipped bool // stored before, by this or another monitor (see storedMarks)
	failLog func()
}

// Process handles a batch of raw messages: validation, pipelined Redis
// writes for the accepted requests (retried with back-off while Redis
// fails), stats and logs. Messages marked as stored before are skipped (see
// storedMarks). It returns an error only when ctx was cancelled before every
// write succeeded; the caller must then not commit the batch (what was
// stored is marked, and skipped on redelivery). Batches must come from one
// goroutine, in the order of their partitions' offsets.
func (m *Monitor) Process(ctx context.Context, batch []kafka.Message) error {
	return m.process(ctx, batch, func() {})
}

// process is Process calling stored as soon as every write of the batch
// succeeded, before the logs and stats: Run commits the batch's offsets
// there, so that as little as possible is both stored and uncommitted.
func (m *Monitor) process(ctx context.Context, batch []kafka.Message, stored func()) error {
	f, err := m.launch(ctx, batch)
	if err != nil {
		return err
	}
	return m.land(f, stored)
}

// flight is a batch being validated and stored in the background.
type flight struct {
	batch   []kafka.Message
	reqs    []request
	already []bool // messages marked as stored before (nil when none is)
	done    chan struct{}
	err     error // set before done is closed
}

// wait waits until every worker of f is done and returns their error.
func (f *flight) wait() error {
	<-f.done
	return f.err
}

// launch reads which messages of batch were stored before (at once: batches
// must be launched in the order of their partitions' offsets) and starts
// validating and storing the others, the batch split among GOMAXPROCS
// workers, each with its own pipeline.
func (m *Monitor) launch(ctx context.Context, batch []kafka.Message) (*flight, error) {
	already, err := m.storedBefore(ctx, batch)
	if err != nil {
		return nil, err
	}
	f := &flight{batch: batch, reqs: make([]request, len(batch)), already: already, done: make(chan struct{})}
	workers := min(runtime.GOMAXPROCS(0), (len(batch)+minChunk-1)/minChunk)
	chunk := (len(batch) + workers - 1) / workers
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*chunk, min((w+1)*chunk, len(batch))
		wg.Go(func() {
			part, msgs := f.reqs[lo:hi], batch[lo:hi]
			for i := range msgs {
				if already != nil && already[lo+i] {
					part[i] = request{msg: &msgs[i], skipped: true}
					continue
				}
				part[i] = m.classify(&msgs[i])
			}
			errs[w] = m.store(ctx, part)
		})
	}
	go func() {
		wg.Wait()
		f.err = errors.Join(errs...)
		close(f.done)
	}()
	m.launched.messages.Add(int64(len(batch)))
	m.launched.batches.Add(1)
	return f, nil
}

// land waits until f is stored, calls stored, and has it reported (by the
// report loop when Run has one).
func (m *Monitor) land(f *flight, stored func()) error {
	if err := f.wait(); err != nil {
		return err
	}
	stored()
	o := outcome{reqs: f.reqs, skipped: countTrue(f.already), batch: f.batch}
	if m.reports != nil {
		m.reports <- o
	} else {
		m.report(o)
	}
	return nil
}

// outcome is a stored batch's requests, to be reported.
type outcome struct {
	reqs    []request
	skipped int             // how many were skipped as stored before
	batch   []kafka.Message // the messages, given back to Run's read-ahead budget once reported
}

// reportLoop reports the outcomes sent on reports, in order, until it is
// closed: Run has a batch's logs written and stats recorded while the next
// batch is validated and stored.
func (m *Monitor) reportLoop(reports <-chan outcome, budget *readAhead, done chan<- struct{}) {
	defer close(done)
	for o := range reports {
		m.report(o)
		budget.giveBack(o.batch)
	}
}

// report tells observing plugins their requests were stored, logs each
// request's result (the batch split among GOMAXPROCS goroutines), hands
// the counts to the stats writer and the metrics, and then counts the
// requests as processed.
func (m *Monitor) report(o outcome) {
	reqs := o.reqs
	workers := min(runtime.GOMAXPROCS(0), (len(reqs)+minChunk-1)/minChunk)
	if workers <= 1 {
		m.logOutcomes(reqs)
	} else {
		chunk := (len(reqs) + workers - 1) / workers
		var wg sync.WaitGroup
		for w := range workers {
			part := reqs[w*chunk : min((w+1)*chunk, len(reqs))]
			wg.Go(func() { m.logOutcomes(part) })
		}
		wg.Wait()
	}
	if o.skipped > 0 {
		m.log.Info("Skipped requests stored before; they were delivered again after a monitor stopped or a rebalance",
			logfactory.Extra{"messages": o.skipped})
	}
	m.recordStats(reqs)
	m.metrics.count(reqs)
	m.processed.Add(int64(len(reqs)))
}

// storedBefore reports which messages of batch are marked as stored,
// retrying with back-off while Redis fails; nil when none is.
func (m *Monitor) storedBefore(ctx context.Context, batch []kafka.Message) ([]bool, error) {
	backoff := 100 * time.Millisecond
	for {
		found, err := m.marks.stored(context.WithoutCancel(ctx), batch)
		if err == nil {
			return found, nil
		}
		m.log.Error("Failed to read the marks of stored requests from Redis; retrying", logfactory.Extra{"error": err.Error(), "retry_in": backoff.String()})
		if !lifecycle.Sleep(ctx, backoff) {
			return nil, ctx.Err()
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// readerQueue is how many fetched messages the Kafka reader keeps ahead of
// fetchLoop (outside READ_AHEAD_BYTES: at most this many requests of up to
// KAFKA_CONSUMER_FETCH_MESSAGE_MAX_BYTES each).
const readerQueue = 64

// minChunk is the smallest share of a batch worth a worker of its own.
const minChunk = 32

// logOutcomes tells observing plugins their requests were stored and logs
// each request's result, as the original does.
func (m *Monitor) logOutcomes(reqs []request) {
	info := m.log.Enabled(logfactory.LevelInfo)
	for i := range reqs {
		r := &reqs[i]
		if r.skipped {
			continue
		}
		if r.failed {
			r.failLog()
			continue
		}
		if obs, ok := r.plugin.Plugin.(plugin.StoreObserver); ok {
			obs.Stored(r.req)
		}
		if info {
			r.req["parsed"], r.req["valid"] = true, true // already stored
			m.log.Info(r.logMsg, r.req)
		}
	}
}

// classify decodes and validates one message (plugin.Validate's verdict,
// after the MAX_REQUEST_BYTES limit).
func (m *Monitor) classify(msg *kafka.Message) request {
	raw := msg.Value
	r := request{msg: msg}
	err := plugin.CheckSize(raw, m.maxBytes)
	var p *plugin.Loaded
	var req plugin.Request
	if err == nil {
		p, req, err = plugin.Validate(m.plugins, raw)
	}
	if err != nil {
		return m.rejected(r, logfactory.LevelWarning, err)
	}
	// As the original, the request carries the time it was received (its
	// queue entry too, so a crawl fed twice is queued twice).
	req["ts"] = json.Number(pyrepr.Float(float64(time.Now().UnixMicro()) / 1e6))
	r.plugin, r.req = p, req
	return r
}

// rejected marks r failed, to be logged as "Request rejected: <reason>"
// with the request's start (data) and, in the fields, what the original
// logs: parsed and valid, the error, and the plugin that refused it.
func (m *Monitor) rejected(r request, lvl logfactory.Level, err error) request {
	extra := logfactory.Extra{"parsed": false, "valid": false, "error": err.Error(), "data": preview(r.msg.Value), "size": len(r.msg.Value)}
	var invalid *plugin.InvalidError
	if errors.As(err, &invalid) {
		extra["parsed"] = invalid.Parsed()
		if invalid.Plugin != "" {
			extra["plugin"] = invalid.Plugin
		}
	} else if r.plugin != nil {
		extra["parsed"], extra["plugin"] = true, r.plugin.Plugin.Name() // refused by Handle
	}
	for k, v := range whoAsked(r) {
		extra[k] = v
	}
	r.failed, r.plugin = true, nil
	r.failLog = func() { m.log.Log(lvl, "Request rejected: "+err.Error(), extra) }
	return r
}

// whoAsked returns the string fields url, appid, crawlid, spiderid and uuid
// of a refused request, so its log line names who asked without data: from
// the decoded request, or (refused before it was decoded) from the raw
// message as far as it is a JSON object.
func whoAsked(r request) map[string]string {
	out := map[string]string{}
	if r.req != nil {
		for _, k := range []string{"url", "appid", "crawlid", "spiderid", "uuid"} {
			if v, ok := r.req[k].(string); ok {
				out[k] = v
			}
		}
		return out
	}
	var raw struct {
		URL      any `json:"url"`
		AppID    any `json:"appid"`
		CrawlID  any `json:"crawlid"`
		SpiderID any `json:"spiderid"`
		UUID     any `json:"uuid"`
	}
	if json.Unmarshal(r.msg.Value, &raw) != nil {
		return out
	}
	for k, v := range map[string]any{"url": raw.URL, "appid": raw.AppID, "crawlid": raw.CrawlID, "spiderid": raw.SpiderID, "uuid": raw.UUID} {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// preview keeps log lines of huge or binary requests readable.
func preview(raw []byte) string {
	const n = 1000
	if len(raw) > n {
		return string(raw[:n]) + "...(" + strconv.Itoa(len(raw)) + " bytes)"
	}
	return string(raw)
}

// store runs the accepted requests' plugins on one pipeline and executes it,
// retrying with back-off while Redis fails.
func (m *Monitor) store(ctx context.Context, reqs []request) error {
	// A started write finishes on shutdown; with REDIS_WAIT_REPLICAS it
	// waits for replicas, on each master, before its offsets may be
	// committed.
	work := m.wait.Context(context.WithoutCancel(ctx))
	backoff := 100 * time.Millisecond
	for {
		err := m.metrics.write(func() error { return m.storeOnce(work, reqs) })
		if err == nil {
			return nil
		}
		if errors.Is(err, errFlushRejected) {
			continue // the rest is stored at once, on a new pipeline
		}
		m.log.Error("Failed to store requests in Redis; retrying", logfactory.Extra{"error": err.Error(), "retry_in": backoff.String()})
		if !lifecycle.Sleep(ctx, backoff) {
			return ctx.Err()
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// errFlushRejected says a Batch's Flush rejected the requests it held: the
// attempt is given up and the other requests stored again at once.
var errFlushRejected = errors.New("a plugin's batch refused its requests")

// storeOnce is one attempt at storing reqs: each accepted request's plugin
// (or, for a plugin.Batcher, its Batch for this pipeline) queues its
// writes, every Batch is flushed, the stored requests are marked, and the
// pipeline runs.
func (m *Monitor) storeOnce(ctx context.Context, reqs []request) (err error) {
	pipe := m.rdb.Pipeline()
	handled := 0 // reqs[:handled] had Handle run in this attempt
	defer func() {
		if err != nil {
			notStored(reqs[:handled])
		}
	}()
	var batches pipelineBatches
	var stored []*kafka.Message
	for i := range reqs {
		handled = i + 1
		r := &reqs[i]
		if r.plugin == nil {
			continue
		}
		logMsg, err := safeHandle(ctx, r.plugin.Plugin.Name(), batches.handler(r.plugin), r.req, pipe)
		if plugin.IsReject(err) {
			*r = m.rejected(*r, logfactory.LevelError, err)
			continue
		}
		if err != nil {
			return fmt.Errorf("plugin %s: %w", r.plugin.Plugin.Name(), err)
		}
		r.logMsg = logMsg
		stored = append(stored, r.msg)
	}
	for _, b := range batches {
		err := safeFlush(ctx, b, pipe)
		if plugin.IsReject(err) {
			for i := range reqs {
				if reqs[i].plugin == b.plugin {
					notStored(reqs[i : i+1]) // while it has its plugin; the others hear it on return
					reqs[i] = m.rejected(reqs[i], logfactory.LevelError, err)
				}
			}
			return errFlushRejected
		}
		if err != nil {
			return fmt.Errorf("plugin %s: %w", b.plugin.Plugin.Name(), err)
		}
	}
	if pipe.Len() == 0 {
		return nil
	}
	m.marks.mark(ctx, pipe, stored) // after the writes: a mark means they are in Redis
	_, err = pipe.Exec(ctx)
	return err
}

// handler handles a request on a pipeline: a plugin, or its Batch for the
// pipeline.
type handler interface {
	Handle(ctx context.Context, req plugin.Request, tx redis.Pipeliner) (string, error)
}

// pipelineBatch is a plugin.Batcher's Batch for one pipeline.
type pipelineBatch struct {
	plugin *plugin.Loaded
	batch  plugin.Batch
}

// pipelineBatches are the Batches of one pipeline, in the order of their
// first request.
type pipelineBatches []pipelineBatch

// handler returns what handles p's requests on the pipeline: p's Batch
// for it (made at the first request) when p is a plugin.Batcher, else p.
func (bs *pipelineBatches) handler(p *plugin.Loaded) handler {
	b, ok := p.Plugin.(plugin.Batcher)
	if !ok {
		return p.Plugin
	}
	for _, pb := range *bs {
		if pb.plugin == p {
			return pb.batch
		}
	}
	pb := pipelineBatch{plugin: p, batch: b.NewBatch()}
	*bs = append(*bs, pb)
	return pb.batch
}

// safeHandle runs h.Handle, turning a panic into a rejection of the
// request: no request can stop the monitor.
func safeHandle(ctx context.Context, name string, h handler, req plugin.Request, pipe redis.Pipeliner) (msg string, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = plugin.Reject("plugin %s panicked: %v\n%s", name, v, debug.Stack())
		}
	}()
	return h.Handle(ctx, req, pipe)
}

// safeFlush runs a Batch's Flush, turning a panic into a rejection of the
// Batch's requests.
func safeFlush(ctx context.Context, b pipelineBatch, pipe redis.Pipeliner) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = plugin.Reject("plugin %s panicked: %v\n%s", b.plugin.Plugin.Name(), v, debug.Stack())
		}
	}()
	return b.batch.Flush(ctx, pipe)
}

// notStored tells observing plugins the writes of reqs failed.
func notStored(reqs []request) {
	for _, r := range reqs {
		if r.plugin == nil {
			continue
		}
		if obs, ok := r.plugin.Plugin.(plugin.StoreObserver); ok {
			obs.NotStored(r.req)
		}
	}
}

// statsDelta is what one or more batches add to the stats counters.
type statsDelta struct {
	total, failed int
	perPlugin     map[string]int
}

func (d *statsDelta) add(o statsDelta) {
	d.total += o.total
	d.failed += o.failed
	for name, n := range o.perPlugin {
		d.perPlugin[name] += n
	}
}

// recordStats hands the batch's counts to the stats writer. Stats are
// best-effort and written off the request path; when Redis is slow the
// counts of several batches go in one round trip.
func (m *Monitor) recordStats(reqs []request) {
	if !m.stats.Enabled() {
		return
	}
	d := statsDelta{perPlugin: map[string]int{}}
	for _, r := range reqs {
		if r.skipped {
			continue // counted when it was stored
		}
		d.total++
		if r.failed {
			d.failed++
		} else {
			d.perPlugin[r.plugin.Plugin.Name()]++
		}
	}
	m.statsCh <- d
}

// statsLoop writes stats until statsCh is closed.
func (m *Monitor) statsLoop(ctx context.Context) {
	defer close(m.statsDone)
	drainMerged(m.statsCh, func(d, more statsDelta) statsDelta { d.add(more); return d },
		func(d statsDelta) { m.writeStats(ctx, d) })
}

func (m *Monitor) writeStats(ctx context.Context, d statsDelta) {
	if err := m.stats.Record(ctx, m.rdb, d.total, d.failed, d.perPlugin); err != nil {
		m.log.Warning("Failed to record stats", logfactory.Extra{"error": err.Error()})
	}
}

// dumpLoop logs the stats every STATS_DUMP seconds.
func (m *Monitor) dumpLoop(ctx context.Context, every time.Duration) {
	for lifecycle.Sleep(ctx, every) {
		m.log.Dump("Kafka Monitor Stats Dump", m.StatsSnapshot(ctx))
	}
}

// StatsSnapshot returns the current counts as the original's dump names
// them: total_<window>, fail_<window>, plugin_<Name>_<window>, with
// "lifetime" as a window.
func (m *Monitor) StatsSnapshot(ctx context.Context) logfactory.Extra {
	return m.stats.Snapshot(ctx)
}
