package settings_test

import (
	"fmt"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// A package declares each setting it reads once: name, default (its type
// is the setting's), a one-line doc, and (Go) for settings the original
// does not have.
var (
	redisHost = settings.String("REDIS_HOST", "localhost", "Redis host")
	redisWait = settings.Seconds("REDIS_SOCKET_TIMEOUT", 10, "seconds a Redis call may take")
	plugin    = settings.Map("PLUGINS", map[string]any{"scraper": 100, "action": 200}, "name: rank; null disables one")
	adminAddr = settings.String("ADMIN_ADDR", "", "host:port of the admin endpoint").Ours()
)

// A component loads its packages' declarations, joined, with overrides from
// a settings file, the environment and flags, and reads each value through
// its declaration.
func ExampleLoad() {
	component := settings.Join(
		settings.Declare(redisHost, redisWait, plugin, adminAddr),
		settings.Declare(adminAddr.WithDefault(":9410")), // this component's default
	)
	s, err := settings.Load(component, settings.Options{
		Environ: []string{"REDIS_HOST=redis", `PLUGINS={"stats": 300, "action": null}`},
		Flags:   map[string]string{"REDIS_SOCKET_TIMEOUT": "2"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(redisHost.From(s), redisWait.From(s) == 2*time.Second, plugin.From(s), adminAddr.From(s))

	_, err = settings.Load(component, settings.Options{Environ: []string{"REDIS_SOCKET_TIMEOUT=soon"}})
	fmt.Println(err)
	// Output:
	// redis true map[action:<nil> scraper:100 stats:300] :9410
	// setting REDIS_SOCKET_TIMEOUT from env: want an integer, got string "soon"
}
