package server

import (
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/rest/access"
	"github.com/scrapycluster/scrapy-cluster-go/rest/console"
)

// msgUnauthorized answers an API request without the API_TOKEN.
const msgUnauthorized = "A valid API token is required (Authorization: Bearer <API_TOKEN>)."

// setUpConsole reads the access policy and builds the console, unless
// UI_ENABLED is false. The console calls the API (route) in process.
func (svc *Service) setUpConsole(rdb redis.UniversalClient, kafkaRetry time.Duration) error {
	policy, err := access.FromSettings(svc.settings)
	if err != nil {
		return err
	}
	svc.access = policy
	if !console.Enabled.From(svc.settings) {
		return nil
	}
	svc.console, err = console.New(console.Deps{
		Settings: svc.settings, Log: svc.log, KafkaRetry: kafkaRetry, Redis: rdb,
		Kafka: svc.kafka.cfg, KafkaClient: svc.kafka.client,
		API: http.HandlerFunc(svc.route),
		State: func() console.State {
			return console.State{ID: svc.id, KafkaConnected: svc.KafkaConnected(), RedisConnected: svc.RedisConnected()}
		},
	})
	return err
}

// withConsole serves the console under /ui/ behind its access control, and
// the API elsewhere behind the API token (both off by default).
func (svc *Service) withConsole(api http.Handler) http.Handler {
	guarded := svc.access.API(api, func(w http.ResponseWriter) {
		writeFailure(w, http.StatusUnauthorized, msgUnauthorized, "")
	})
	if svc.console == nil {
		return guarded
	}
	ui := svc.access.Console(svc.console)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if console.IsConsolePath(r.URL.Path) {
			ui.ServeHTTP(w, r)
			return
		}
		guarded.ServeHTTP(w, r)
	})
}

// shutDownConsole ends the console's streams when the HTTP server shuts down.
func (svc *Service) shutDownConsole() {
	if svc.console != nil {
		svc.console.Shutdown()
	}
}

// closeConsole stops the console's background work.
func (svc *Service) closeConsole() {
	if svc.console != nil {
		svc.console.Close()
	}
}
