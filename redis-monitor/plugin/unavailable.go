package plugin

import "errors"

// ErrUnavailable is what Handle's error wraps when a service the plugin
// needs other than Redis and Kafka (ZooKeeper, for the zookeeper plugin)
// could not be reached: an outage, not a failure of the request. The
// monitor then leaves the key as it is for a later cycle, without counting
// a failure or using up its RETRY_FAILURES_MAX, as it rides out Redis and
// Kafka outages. Return it only when the outage began during Handle, and
// let CheckPrecondition say the key is not ready while the service stays
// away, so the key is not taken every cycle meanwhile.
var ErrUnavailable = errors.New("a service the plugin needs is unreachable")
