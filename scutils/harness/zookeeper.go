package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// DefaultZooKeeperJar is where Debian's zookeeper package puts the server.
// ZOOKEEPER_JAR overrides it (a colon-separated class path is fine).
const DefaultZooKeeperJar = "/usr/share/java/zookeeper.jar"

// ZooKeeper is a real standalone ZooKeeper server child process on 127.0.0.1.
// Its tick time is 500 ms, so sessions may be as short as 1 s.
type ZooKeeper struct {
	Port int
	// Addr is "127.0.0.1:<port>", usable as ZOOKEEPER_HOSTS.
	Addr string

	server
}

// StartZooKeeper starts a ZooKeeper server for tb and stops it when tb ends.
func StartZooKeeper(tb testing.TB) *ZooKeeper {
	tb.Helper()
	z, err := LaunchZooKeeper()
	return started(tb, "zookeeper", z, err)
}

func zooKeeperClassPath() (java, classPath string, err error) {
	java, err = exec.LookPath("java")
	if err != nil {
		return "", "", fmt.Errorf("java: %w (apt-get install zookeeper)", ErrMissing)
	}
	classPath = os.Getenv("ZOOKEEPER_JAR")
	if classPath == "" {
		classPath = DefaultZooKeeperJar
	}
	first := strings.Split(classPath, ":")[0]
	if _, err := os.Stat(first); err != nil {
		return "", "", fmt.Errorf("zookeeper jar %s: %w (apt-get install zookeeper)", first, ErrMissing)
	}
	return java, classPath, nil
}

// LaunchZooKeeper starts a ZooKeeper server on a free loopback port. Close stops it.
func LaunchZooKeeper() (*ZooKeeper, error) {
	if _, _, err := zooKeeperClassPath(); err != nil {
		return nil, err
	}
	port, dir, err := reserve("zookeeper")
	if err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf("tickTime=500\ninitLimit=10\nsyncLimit=5\ndataDir=%s\nclientPort=%d\n"+
		"clientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=*\n"+
		"maxClientCnxns=0\n", filepath.Join(dir, "data"), port)
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	z := &ZooKeeper{Port: port, Addr: fmt.Sprintf("127.0.0.1:%d", port), server: server{dir: dir}}
	if err := z.start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return z, nil
}

func (z *ZooKeeper) start() error {
	java, cp, err := zooKeeperClassPath()
	if err != nil {
		return err
	}
	return z.run(ProcessSpec{Name: "zookeeper", Path: java, Args: []string{
		"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Dzookeeper.admin.enableServer=false", "-cp", cp,
		"org.apache.zookeeper.server.ZooKeeperServerMain", filepath.Join(z.dir, "zoo.cfg")}}, 60*time.Second, func() error {
		// "ruok" says imok before the server takes sessions; "srvr" says
		// "not currently serving requests" until it does.
		line, err := lineCommand(z.Addr, "srvr", time.Second)
		if err != nil {
			return err
		}
		if !strings.HasPrefix(line, "Zookeeper version") {
			return fmt.Errorf("srvr answered %q", line)
		}
		return nil
	})
}

// Restart stops the server if it runs and starts it again on the same port
// with the same data.
func (z *ZooKeeper) Restart() error {
	z.Stop()
	return z.start()
}
