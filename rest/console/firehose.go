package console

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/kafkaclient"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
)

// firehose is the one reader of the crawled firehose per REST instance,
// feeding the results buffer. It reads every partition without a consumer
// group. When it first finds the topic it reads back the latest results
// already there (as many as the buffer keeps, shared out among the
// partitions), so the console shows what the firehose holds from its
// first use on; partitions found later (the topic created after the
// console started, or grown) are read from their start, so no result
// written after the console was first used is missed. It keeps looking for partitions
// every check interval until Close.
type firehose struct {
	cfg    kafkaclient.Config
	client *kafka.Client
	topic  string
	every  time.Duration
	buf    *results
	log    *logfactory.Logger

	once    sync.Once
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	readers map[int]*kafka.Reader
	looked  bool   // a check has run
	state   string // what the Live page says about the reading
}

func newFirehose(cfg kafkaclient.Config, client *kafka.Client, every time.Duration, buf *results, log *logfactory.Logger) *firehose {
	ctx, cancel := context.WithCancel(context.Background())
	return &firehose{cfg: cfg, client: client, topic: cfg.Topic("crawled_firehose"), every: every, buf: buf, log: log,
		ctx: ctx, cancel: cancel, readers: map[int]*kafka.Reader{}, state: "not started"}
}

// start begins reading, once; later calls do nothing. It does not wait.
func (f *firehose) start() {
	f.once.Do(func() {
		f.setState("looking for the topic")
		f.wg.Add(1)
		go f.run()
	})
}

// status says whether results are being read, for the Live page.
func (f *firehose) status() (topic, state string, partitions int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.topic, f.state, len(f.readers)
}

func (f *firehose) setState(s string) {
	f.mu.Lock()
	f.state = s
	f.mu.Unlock()
}

// run checks for partitions until Close.
func (f *firehose) run() {
	defer f.wg.Done()
	for {
		if err := f.check(f.ctx); err != nil && f.ctx.Err() == nil {
			f.setState(err.Error())
			f.log.Debug("Console: cannot read the crawled firehose yet", logfactory.Extra{"topic": f.topic, "error": err.Error()})
		}
		select {
		case <-f.ctx.Done():
			return
		case <-time.After(f.every):
		}
	}
}

// check starts readers for the partitions not read yet.
func (f *firehose) check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.ConnTimeout)
	defer cancel()
	md, err := f.client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{f.topic}})
	if err != nil {
		return fmt.Errorf("read the metadata of %s: %w", f.topic, err)
	}
	partitions := 0
	for _, t := range md.Topics {
		if t.Name == f.topic && t.Error == nil {
			partitions = len(t.Partitions)
		}
	}
	f.mu.Lock()
	fromFirst := f.looked // anything found after the first look is new
	f.looked = true
	var missing []kafka.OffsetRequest
	for p := range partitions {
		if f.readers[p] != nil {
			continue
		}
		if fromFirst {
			missing = append(missing, kafka.FirstOffsetOf(p))
		} else {
			missing = append(missing, kafka.LastOffsetOf(p))
		}
	}
	f.mu.Unlock()
	if partitions == 0 {
		return fmt.Errorf("topic %s does not exist yet (crawlers create it with their first result)", f.topic)
	}
	if len(missing) == 0 {
		return nil
	}
	res, err := f.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{f.topic: missing}})
	if err != nil {
		return fmt.Errorf("find the offsets of %s: %w", f.topic, err)
	}
	var firsts map[int]int64 // on the first look: where each partition starts
	if !fromFirst {
		if firsts, err = f.firstOffsets(ctx, missing); err != nil {
			return err
		}
	}
	back := int64(len(f.buf.ring)/max(partitions, 1) + 1)
	for _, po := range res.Topics[f.topic] {
		if po.Error != nil {
			return fmt.Errorf("find the offsets of %s/%d: %w", f.topic, po.Partition, po.Error)
		}
		offset := po.FirstOffset
		if !fromFirst { // the latest results already there
			offset = max(po.LastOffset-back, firsts[po.Partition], 0)
		}
		r, err := f.cfg.NewPartitionReader(f.topic, po.Partition, offset)
		if err != nil {
			return err
		}
		f.mu.Lock()
		f.readers[po.Partition] = r
		f.state = "reading"
		f.mu.Unlock()
		f.wg.Add(1)
		go f.read(po.Partition, r)
	}
	return nil
}

// firstOffsets returns the first offset of each partition of reqs.
func (f *firehose) firstOffsets(ctx context.Context, reqs []kafka.OffsetRequest) (map[int]int64, error) {
	first := make([]kafka.OffsetRequest, len(reqs))
	for i, r := range reqs {
		first[i] = kafka.FirstOffsetOf(r.Partition)
	}
	res, err := f.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{f.topic: first}})
	if err != nil {
		return nil, fmt.Errorf("find the offsets of %s: %w", f.topic, err)
	}
	out := map[int]int64{}
	for _, po := range res.Topics[f.topic] {
		if po.Error != nil {
			return nil, fmt.Errorf("find the offsets of %s/%d: %w", f.topic, po.Partition, po.Error)
		}
		out[po.Partition] = po.FirstOffset
	}
	return out, nil
}

// read hands every message of one partition to the buffer.
func (f *firehose) read(partition int, r *kafka.Reader) {
	defer f.wg.Done()
	for {
		m, err := r.ReadMessage(f.ctx)
		if err != nil {
			if f.ctx.Err() != nil || errors.Is(err, context.Canceled) {
				return
			}
			f.log.Warning("Console: failed to read the crawled firehose", logfactory.Extra{"topic": f.topic, "partition": partition, "error": err.Error()})
			select {
			case <-f.ctx.Done():
				return
			case <-time.After(f.every):
			}
			continue
		}
		if res, ok := parseResult(m.Value); ok {
			f.buf.add(res)
		}
	}
}

// close stops the readers and waits for them.
func (f *firehose) close() {
	f.cancel()
	f.wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	for p, r := range f.readers {
		r.Close()
		delete(f.readers, p)
	}
}
