package kafkaclient

import (
	"context"
	"errors"
	"fmt"

	"github.com/segmentio/kafka-go"
)

// ConsumerLag is how many messages of topic consumer group group has not
// committed yet, over all partitions: each partition's end offset minus the
// group's committed offset there (minus the partition's first offset where
// the group committed nothing).
func ConsumerLag(ctx context.Context, client *kafka.Client, topic, group string) (int64, error) {
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return 0, fmt.Errorf("read the metadata of %s: %w", topic, err)
	}
	if len(md.Topics) != 1 || md.Topics[0].Error != nil {
		return 0, fmt.Errorf("read the metadata of %s: %v", topic, md.Topics)
	}
	var parts []int
	var reqs []kafka.OffsetRequest
	for _, p := range md.Topics[0].Partitions {
		parts = append(parts, p.ID)
		reqs = append(reqs, kafka.FirstOffsetOf(p.ID), kafka.LastOffsetOf(p.ID))
	}
	fetched, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	if err == nil {
		err = fetched.Error
	}
	committed := map[int]int64{}
	switch {
	case errors.Is(err, kafka.GroupIdNotFound): // the group never committed
	case err != nil:
		return 0, fmt.Errorf("read the offsets group %s committed on %s: %w", group, topic, err)
	default:
		for _, o := range fetched.Topics[topic] {
			committed[o.Partition] = o.CommittedOffset
		}
	}
	resp, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return 0, fmt.Errorf("list the offsets of %s: %w", topic, err)
	}
	var lag int64
	for _, po := range resp.Topics[topic] {
		if po.Error != nil {
			return 0, fmt.Errorf("list the offsets of %s partition %d: %w", topic, po.Partition, po.Error)
		}
		from, ok := committed[po.Partition]
		if !ok || from < po.FirstOffset { // nothing committed (-1), or before what the broker still keeps
			from = po.FirstOffset
		}
		lag += max(po.LastOffset-from, 0)
	}
	return lag, nil
}
