package localcluster

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
)

// portUse is a port the launcher or one of its processes will listen on.
type portUse struct {
	port int
	what string // what listens there, for messages: "REST"
	flag string // the flag that changes it: "--rest-port"
	host string // the address it is bound on
}

// ports lists every port the cluster described by cfg and svc will listen
// on: the embedded broker and Redis (unless real services are given), the
// REST service and the test site.
func (cfg *Config) ports(svc services) []portUse {
	var uses []portUse
	if svc.kafkaEmbedded {
		uses = append(uses, portUse{cfg.KafkaPort, "Kafka", "--kafka-port", "127.0.0.1"})
	}
	switch {
	case svc.redisEmbedded && cfg.Redis == RedisCluster:
		for i, port := range cfg.clusterPorts() {
			uses = append(uses, portUse{port, fmt.Sprintf("Redis Cluster node %d", i+1), "--redis-port", "127.0.0.1"},
				portUse{port + clusterBusShift, fmt.Sprintf("Redis Cluster node %d's bus", i+1), "--redis-port", "127.0.0.1"})
		}
	case svc.redisEmbedded:
		uses = append(uses, portUse{cfg.RedisPort, "Redis", "--redis-port", "127.0.0.1"})
	}
	uses = append(uses, portUse{cfg.RESTPort, "REST", "--rest-port", restHost(cfg.Env)})
	if cfg.TestSite {
		uses = append(uses, portUse{cfg.TestSitePort, "test site", "--test-site-port", "127.0.0.1"})
	}
	return uses
}

// restHost is the address the REST service binds: FLASK_HOST from the
// environment, else the launcher's default, loopback.
func restHost(env []string) string {
	if h, set := lookupEnvOK(env, "FLASK_HOST"); set {
		return h
	}
	return "127.0.0.1"
}

// checkPorts makes sure every port in uses is free before anything starts,
// so a port another program holds fails the launch at once, naming the port
// and the flag that changes it, instead of a process dying after the
// cluster was announced. Two uses of one port are refused too.
func checkPorts(uses []portUse) error {
	var errs []error
	seen := map[int]portUse{}
	for _, u := range uses {
		if first, dup := seen[u.port]; dup {
			errs = append(errs, fmt.Errorf("port %d is given to both %s (%s) and %s (%s): give each its own port",
				u.port, first.what, first.flag, u.what, u.flag))
			continue
		}
		seen[u.port] = u
		ln, err := net.Listen("tcp", net.JoinHostPort(u.host, strconv.Itoa(u.port)))
		if err == nil {
			ln.Close()
			continue
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			errs = append(errs, fmt.Errorf("port %d (%s, %s) is already in use", u.port, u.what, u.flag))
		} else {
			errs = append(errs, fmt.Errorf("port %d (%s, %s) cannot be used: %w", u.port, u.what, u.flag, err))
		}
	}
	return errors.Join(errs...)
}
