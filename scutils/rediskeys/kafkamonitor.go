package rediskeys

import (
	"net/url"
	"strconv"
)

// StoredMarksKey is the sorted set of the requests a Kafka Monitor stored
// from one partition of its incoming topic and whose offsets may not be
// committed yet (Go; the original has none): members "<offset>:<hash of the
// message>", scored by offset. A monitor that takes the partition over after
// a crash skips the messages marked there instead of storing them twice.
// "kafka-monitor:stored:<topic>/<partition>/<group>", the group
// query-escaped: its last part always holds a "/" and no ":" of the group's,
// so no pattern the original's components scan (*:*:queue, *:blacklist,
// *:dupefilter:*, stats:*, ...) matches it.
func StoredMarksKey(group, topic string, partition int) string {
	return "kafka-monitor:stored:" + topic + "/" + strconv.Itoa(partition) + "/" + url.QueryEscape(group)
}
