package dump

import (
	"github.com/scrapycluster/scrapy-cluster-go/scutils/cli"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// Settings are kafkadump's settings: the shared REDIS_*, KAFKA_* and LOG_*
// ones, logging as "kafkadump" to kafkadump.log when it logs to a file.
func Settings() settings.Group { return cli.ComponentSettings("kafkadump", "kafkadump.log") }
