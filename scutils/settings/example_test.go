package settings_test

import (
	"fmt"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// A component declares its defaults once and loads them with overrides from
// a settings file, the environment and flags.
func ExampleLoad() {
	defaults := settings.Defaults{
		"REDIS_HOST": "localhost",
		"REDIS_PORT": 6379,
		"PLUGINS":    map[string]int{"scraper": 100, "action": 200},
	}
	s, err := settings.Load(defaults, settings.Options{
		Environ: []string{"REDIS_HOST=redis", `PLUGINS={"stats": 300}`},
		Flags:   map[string]string{"REDIS_PORT": "6380"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.String("REDIS_HOST"), s.Int("REDIS_PORT"), s.IntMap("PLUGINS"))

	_, err = settings.Load(defaults, settings.Options{Environ: []string{"REDIS_PORT=six"}})
	fmt.Println(err)
	// Output:
	// redis 6380 map[action:200 scraper:100 stats:300]
	// setting REDIS_PORT from env: want an integer, got string "six"
}
