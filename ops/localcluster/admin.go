package localcluster

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
)

// adminSetting is the components' admin endpoint address (scutils/admin).
const adminSetting = "ADMIN_ADDR"

// withAdminAddrs gives each component but the REST service (which serves
// its admin endpoint on its own port) an ADMIN_ADDR of its own on loopback:
// the components' default addresses would clash as soon as two crawlers
// run. A free port is picked for each. ADMIN_ADDR="" in the environment
// turns the endpoints off.
func withAdminAddrs(env []string, components []spec) ([]spec, error) {
	if v, set := lookupEnvOK(env, adminSetting); set && v == "" {
		return components, nil
	}
	out := make([]spec, len(components))
	for i, s := range components {
		out[i] = s
		if s.name == "rest" {
			continue
		}
		port, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("pick a port for the admin endpoint of %s: %w", s.name, err)
		}
		out[i].env = withEnv(s.env, map[string]string{adminSetting: "127.0.0.1:" + strconv.Itoa(port)})
	}
	return out, nil
}

// adminSummary lists where each component serves /metrics, for the log.
func adminSummary(plan [][]spec) string {
	var parts []string
	for _, tier := range plan {
		for _, s := range tier {
			if addr := lookupEnv(s.env, adminSetting); addr != "" && s.name != "rest" {
				parts = append(parts, s.name+" http://"+addr+"/metrics")
			}
		}
	}
	if len(parts) == 0 {
		return "none (ADMIN_ADDR is empty)"
	}
	return strings.Join(parts, ", ")
}

// adminLines are the banner's lines on the admin endpoints: for each
// component, where it serves /metrics, /healthz and /readyz (the REST
// service on its API port) and the healthcheck command that reaches it
// (bin names a binary as the banner writes it).
func adminLines(plan [][]spec, restPort int, bin func(string) string) []string {
	var out []string
	for _, tier := range plan {
		for _, s := range tier {
			name := filepath.Base(s.path)
			if s.name == "rest" {
				addr := "127.0.0.1:" + strconv.Itoa(restPort)
				out = append(out, fmt.Sprintf("%-16s http://%s/metrics   FLASK_PORT=%d %s healthcheck", s.name, addr, restPort, bin(name)))
				continue
			}
			if addr := lookupEnv(s.env, adminSetting); addr != "" {
				out = append(out, fmt.Sprintf("%-16s http://%s/metrics   %s=%s %s healthcheck", s.name, addr, adminSetting, addr, bin(name)))
			}
		}
	}
	return out
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
