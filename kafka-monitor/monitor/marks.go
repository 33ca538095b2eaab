package monitor

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/rediskeys"
)

// marksTTL bounds how long the marks of a partition nobody reads again
// stay in Redis. Marks only matter until their offsets are committed, which
// normally happens within milliseconds.
const marksTTL = 24 * time.Hour

// storedMarks keeps a monitor killed between storing a batch and
// committing its offsets from having the batch stored twice by the monitor
// that takes its partitions over.
//
// The requests of a partition stored by one pipeline are marked in that
// pipeline, after their writes, by one member of
// rediskeys.StoredMarksKey: "<offset>=<hash>,..." (the hash of each
// message), scored by the last offset. The committer removes the marks of
// committed offsets. Where this monitor does not read a partition on from
// the offset it left it at (its first messages, a rebalance, a redelivery),
// it reads the partition's marks once (one round trip), and skips the
// messages they name: they were stored already. A monitor reading its
// partitions in order asks Redis nothing. The hash makes a mark name one
// message, not just an offset (a re-created topic restarts its offsets).
type storedMarks struct {
	rdb          redis.UniversalClient
	group, topic string
	parts        map[int]*partitionMarks // only Run's goroutine uses it
}

// partitionMarks is what a monitor knows of a partition.
type partitionMarks struct {
	next   int64            // the offset after the last message seen
	marked map[int64]uint64 // offset -> hash of the stored message, from the last look-up
	high   int64            // the highest offset in marked
}

func newStoredMarks(rdb redis.UniversalClient, group, topic string) *storedMarks {
	return &storedMarks{rdb: rdb, group: group, topic: topic, parts: map[int]*partitionMarks{}}
}

func (s *storedMarks) key(partition int) string {
	return rediskeys.StoredMarksKey(s.group, s.topic, partition)
}

func hashOf(msg *kafka.Message) uint64 {
	h := fnv.New64a()
	_, _ = h.Write(msg.Value)
	return h.Sum64()
}

// stored reports which messages of batch are marked as stored (nil when
// none is), reading the marks of the partitions this monitor did not read
// on from where it left them.
func (s *storedMarks) stored(ctx context.Context, batch []kafka.Message) ([]bool, error) {
	if from := s.unread(batch); len(from) > 0 {
		pipe := s.rdb.Pipeline()
		lookups := make(map[int]*redis.StringSliceCmd, len(from))
		for partition, offset := range from {
			lookups[partition] = pipe.ZRangeByScore(ctx, s.key(partition), &redis.ZRangeBy{Min: strconv.FormatInt(offset, 10), Max: "+inf"})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, fmt.Errorf("read the marks of stored requests: %w", err)
		}
		for partition, cmd := range lookups {
			p := &partitionMarks{high: -1}
			for _, member := range cmd.Val() {
				p.add(member)
			}
			s.parts[partition] = p
		}
	}
	var found []bool
	for i := range batch {
		msg := &batch[i]
		p := s.parts[msg.Partition]
		p.next = msg.Offset + 1
		if msg.Offset > p.high {
			p.marked = nil // past every mark
			continue
		}
		if h, ok := p.marked[msg.Offset]; ok && h == hashOf(msg) {
			if found == nil {
				found = make([]bool, len(batch))
			}
			found[i] = true
		}
	}
	return found, nil
}

// unread returns, for each partition of batch this monitor does not read
// on from the offset it left it at, the batch's first offset there: where
// stored must look the marks up.
func (s *storedMarks) unread(batch []kafka.Message) map[int]int64 {
	var from map[int]int64
	next := map[int]int64{} // per partition of the batch, the offset that follows
	for i := range batch {
		msg := &batch[i]
		expected, ok := next[msg.Partition]
		if !ok {
			if p := s.parts[msg.Partition]; p != nil {
				expected, ok = p.next, true
			}
		}
		next[msg.Partition] = msg.Offset + 1
		if ok && msg.Offset == expected {
			continue
		}
		if from == nil {
			from = map[int]int64{}
		}
		if _, seen := from[msg.Partition]; !seen {
			from[msg.Partition] = msg.Offset
		}
	}
	return from
}

// readsOn reports whether batch follows on from where this monitor left
// each of its partitions, so that no mark needs looking up for it.
func (s *storedMarks) readsOn(batch []kafka.Message) bool {
	return len(s.unread(batch)) == 0
}

// add reads one mark; a member it cannot read is ignored.
func (p *partitionMarks) add(member string) {
	for pair := range strings.SplitSeq(member, ",") {
		o, h, _ := strings.Cut(pair, "=")
		offset, err1 := strconv.ParseInt(o, 10, 64)
		hash, err2 := strconv.ParseUint(h, 16, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		if p.marked == nil {
			p.marked = map[int64]uint64{}
		}
		p.marked[offset] = hash
		p.high = max(p.high, offset)
	}
}

// mark queues on pipe, which stores msgs, one mark per partition of msgs.
func (s *storedMarks) mark(ctx context.Context, pipe redis.Pipeliner, msgs []*kafka.Message) {
	type partial struct {
		member []byte
		last   int64
	}
	var byPartition map[int]*partial
	for _, msg := range msgs {
		if byPartition == nil {
			byPartition = map[int]*partial{}
		}
		p := byPartition[msg.Partition]
		if p == nil {
			p = &partial{}
			byPartition[msg.Partition] = p
		} else {
			p.member = append(p.member, ',')
		}
		p.member = strconv.AppendInt(p.member, msg.Offset, 10)
		p.member = append(p.member, '=')
		p.member = strconv.AppendUint(p.member, hashOf(msg), 16)
		p.last = max(p.last, msg.Offset)
	}
	for partition, p := range byPartition {
		key := s.key(partition)
		pipe.ZAdd(ctx, key, redis.Z{Score: float64(p.last), Member: p.member})
		pipe.Expire(ctx, key, marksTTL)
	}
}

// forget removes the marks wholly within the committed offsets (the last
// message of each partition committed): those will not be delivered again.
func (s *storedMarks) forget(ctx context.Context, committed []kafka.Message) error {
	pipe := s.rdb.Pipeline()
	for _, msg := range committed {
		pipe.ZRemRangeByScore(ctx, s.key(msg.Partition), "-inf", strconv.FormatInt(msg.Offset, 10))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("remove the marks of committed requests: %w", err)
	}
	return nil
}
