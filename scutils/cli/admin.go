package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/admin"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/logfactory"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/settings"
)

// adminEndpoint is a process's admin endpoint (package admin) as
// RunService runs it: opened before the service is built, so that a taken
// ADMIN_ADDR fails the start at once, and served until Run returned, so
// that a draining process still answers its probes.
type adminEndpoint struct {
	server *admin.Server
	ln     net.Listener // nil: no ADMIN_ADDR (none, or the service serves it)
	stop   context.CancelFunc
	done   chan struct{}
}

// openAdmin builds the process's admin Server with the dependency checks
// its settings call for, and listens on ADMIN_ADDR when the component has
// that setting and it is not "".
func openAdmin(s *settings.Settings, rdb redis.UniversalClient) (*adminEndpoint, error) {
	pprof, _ := admin.Pprof.Lookup(s)
	checks, err := admin.DependencyChecks(s, rdb)
	if err != nil {
		return nil, err
	}
	a := &adminEndpoint{server: admin.New(admin.WithPprof(pprof))}
	a.server.AddCheck(checks...)
	if addr, _ := admin.Addr.Lookup(s); addr != "" {
		if a.ln, err = admin.Listen(addr); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// start registers the service's metrics and serves the endpoint: on
// ADMIN_ADDR, or through the service itself when it is an admin.Host.
func (a *adminEndpoint) start(svc Service, log *logfactory.Logger) error {
	if m, ok := svc.(admin.Instrumented); ok {
		if err := a.server.Register(m.Collectors()...); err != nil {
			return err
		}
	}
	if h, ok := svc.(admin.Host); ok {
		h.ServeAdmin(a.server)
	}
	if a.ln == nil {
		return nil
	}
	ctx, stop := context.WithCancel(context.Background())
	a.stop, a.done = stop, make(chan struct{})
	go func() {
		defer close(a.done)
		if err := a.server.Serve(ctx, a.ln); err != nil {
			log.Error("The admin endpoint stopped", logfactory.Extra{"error": err.Error()})
		}
	}()
	log.Info("Serving /metrics, /healthz and /readyz", logfactory.Extra{"address": a.ln.Addr().String(), "setting": admin.Addr.Name()})
	return nil
}

// close stops serving (or closes the unused listener).
func (a *adminEndpoint) close() {
	switch {
	case a.stop != nil:
		a.stop()
		<-a.done
	case a.ln != nil:
		a.ln.Close()
	}
}

// AdminAddr is where the Kafka Monitor, Redis Monitor and crawler serve
// their admin endpoint: ADMIN_ADDR.
func AdminAddr(s *settings.Settings) string { return admin.Addr.From(s) }

// HealthcheckCommand returns a `healthcheck` sub-command: it GETs the
// process's own /readyz at the address addr finds in the settings (an
// unspecified host means this host's loopback) and exits 0 when ready, 1
// otherwise, printing the answer. Container images have no curl; their
// health checks run this.
func HealthcheckCommand(declared settings.Group, f *SettingsFlags, addr func(*settings.Settings) string) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 when the running process is ready (its /readyz answers 200), else 1",
		Long: "GET /readyz of the process running with the same settings (on this host) and print the\n" +
			"answer: which of Redis, Kafka and ZooKeeper it reaches. Exit status 0 when it is ready,\n" +
			"1 when it is not or does not answer. For container health checks.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := f.Load(declared)
			if err != nil {
				return err
			}
			a := addr(s)
			if a == "" {
				return fmt.Errorf("setting %s is empty: this process serves no admin endpoint", admin.Addr.Name())
			}
			url, err := ReadyURL(a)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("health check: %w", err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			fmt.Fprint(cmd.OutOrStdout(), string(body))
			if resp.StatusCode != http.StatusOK {
				return ExitError(1, fmt.Errorf("not ready: GET %s answered %s", url, resp.Status))
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for the answer")
	return cmd
}

// ReadyURL is the /readyz URL of an admin endpoint listening on addr
// (host:port); an unspecified host (":9412", "0.0.0.0:9412", "[::]:9412")
// is reached on loopback.
func ReadyURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("admin address %q: %w", addr, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
		return "", fmt.Errorf("admin address %q: port %q is not one a process listens on", addr, port)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/readyz", nil
}
