package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/zkwatch"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the push or wipe failed
	exitUsage = 2 // bad command line, as argparse does
)

// maxNodeBytes keeps pushes under ZooKeeper's default request limit
// (jute.maxbuffer, 1 MiB less one byte), leaving room for the path and header.
const maxNodeBytes = 1<<20 - 4096

// options are the command-line flags; the defaults are the original's.
type options struct {
	file       string
	id         string
	path       string
	wipe       bool
	hosts      string
	noValidate bool
	timeout    time.Duration
}

// usageError marks a bad command line.
type usageError struct{ error }

const longHelp = `file-pusher pushes a crawler configuration file into ZooKeeper, at the node
<path><id> (by default /scrapy-cluster/crawler/all), creating the node and its
parents when they are missing, or replaces the contents of that node when it
exists. Crawlers watch the node given by their ZOOKEEPER_ASSIGN_PATH and
ZOOKEEPER_ID settings and apply a new configuration at once, without a restart.

The file is YAML with a blacklist of domains and per-domain throttles:

  blacklist:
    - bad-domain.com
  domains:
    example.com:
      window: 60    # seconds
      hits: 10      # requests per window
      scale: 0.5    # optional, 0 to 1

The file must be valid YAML holding one document unless --no-validate is given
(other text, such as a pointer path, is valid YAML too).

--wipe empties the node instead (the file is then not needed): crawlers drop
the domain configuration and go back to their QUEUE_WINDOW / QUEUE_HITS
defaults. The node itself stays, as with the original script.

The Kafka Monitor's Zookeeper API is the preferred way to change this
configuration; this command is the Go counterpart of Scrapy Cluster's
deprecated crawler/config/file_pusher.py and takes the same flags.

Exit status: 0 on success, 1 when reading the file, validating it or talking
to ZooKeeper failed, 2 on a bad command line.`

const examples = `  file-pusher -f example.yml -z localhost:2181
  file-pusher -f settings.txt -i myconfig -p /tmp/ -z zk1:2181,zk2:2181
  file-pusher --wipe -z localhost:2181`

// newCommand builds the command, writing its messages to stdout and stderr.
func newCommand(stdout, stderr io.Writer) *cobra.Command {
	var o options
	cmd := &cobra.Command{
		Use:     "file-pusher -z HOST:PORT (-f FILE | --wipe) [flags]",
		Short:   "Push a crawler configuration file into ZooKeeper",
		Long:    longHelp,
		Example: examples,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.NoArgs(cmd, args); err != nil {
				return usageError{err}
			}
			return nil
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(); err != nil {
				return usageError{err}
			}
			return o.run(cmd.Context(), stdout, stderr)
		},
	}
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })

	f := cmd.Flags()
	f.SortFlags = false
	f.StringVarP(&o.file, "file", "f", "", "the YAML file to push (required unless --wipe)")
	f.StringVarP(&o.id, "id", "i", "all", "the crawler id: the name of the node under --path")
	f.StringVarP(&o.path, "path", "p", "/scrapy-cluster/crawler/",
		"the ZooKeeper path the id is appended to; joined as written, so end it with /")
	f.BoolVarP(&o.wipe, "wipe", "w", false, "empty the node instead of pushing a file")
	f.StringVarP(&o.hosts, "zoo-keeper", "z", "",
		"the ZooKeeper connection <host>:<port>, several separated by commas (required)")
	f.BoolVar(&o.noValidate, "no-validate", false,
		"push the file as it is, without checking that it is YAML and small enough for ZooKeeper")
	f.DurationVar(&o.timeout, "timeout", 15*time.Second, "how long to wait for ZooKeeper")
	return cmd
}

// run executes the command line args and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := newCommand(stdout, stderr)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "file-pusher: %v\n", err)
	var usage usageError
	if errors.As(err, &usage) {
		fmt.Fprintln(stderr, "Run 'file-pusher --help' for usage.")
		return exitUsage
	}
	return exitError
}

// node is the ZooKeeper path written: path and id joined literally, as the
// original and the crawlers (ZOOKEEPER_ASSIGN_PATH + ZOOKEEPER_ID) do.
func (o *options) node() string { return o.path + o.id }

func (o *options) check() error {
	if strings.TrimSpace(o.hosts) == "" {
		return errors.New("--zoo-keeper is required")
	}
	if o.file == "" && !o.wipe {
		return errors.New("--file is required (or --wipe)")
	}
	if o.id == "" {
		return errors.New("--id must not be empty")
	}
	if err := zkwatch.ValidatePath(o.node()); err != nil {
		return fmt.Errorf("--path %q and --id %q: %w", o.path, o.id, err)
	}
	if o.timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	return nil
}

func (o *options) run(ctx context.Context, stdout, stderr io.Writer) error {
	node := o.node()
	if !strings.HasSuffix(o.path, "/") {
		fmt.Fprintf(stderr, "file-pusher: note: --path %q does not end with /, so the node is %s\n", o.path, node)
	}
	var data []byte
	if !o.wipe {
		var err error
		if data, err = o.readFile(); err != nil {
			return err
		}
	}

	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	conn, err := zkwatch.Dial(ctx, zkwatch.SplitHosts(o.hosts), 10*time.Second, nil)
	if err != nil {
		return err
	}
	defer conn.Close()

	if o.wipe {
		return wipe(conn, node, stdout)
	}
	return push(conn, node, data, stdout)
}

// readFile reads the file and, unless told not to, checks that it is one
// YAML document small enough for a ZooKeeper node.
func (o *options) readFile() ([]byte, error) {
	data, err := os.ReadFile(o.file)
	if err != nil {
		return nil, fmt.Errorf("read the configuration file: %w", err)
	}
	if o.noValidate {
		return data, nil
	}
	if len(data) > maxNodeBytes {
		return nil, fmt.Errorf("%s is %d bytes; a ZooKeeper node holds at most about 1 MiB (server setting jute.maxbuffer)", o.file, len(data))
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for docs := 0; ; docs++ {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s is not valid YAML (use --no-validate to push it anyway): %w", o.file, err)
		}
		if docs == 1 {
			return nil, fmt.Errorf("%s holds more than one YAML document; crawlers read exactly one", o.file)
		}
	}
	return data, nil
}

// push writes data at node, creating the node and its parents if needed.
func push(conn *zk.Conn, node string, data []byte, stdout io.Writer) error {
	if data == nil {
		data = []byte{} // empty, not null, for Python readers
	}
	if parent := path.Dir(node); parent != "/" {
		if err := zkwatch.EnsurePath(conn, parent); err != nil {
			return fmt.Errorf("push to %s: %w", node, err)
		}
	}
	_, err := conn.Create(node, data, 0, zk.WorldACL(zk.PermAll))
	switch {
	case err == nil:
		fmt.Fprintf(stdout, "creating conf node %s\n", node)
		return nil
	case !errors.Is(err, zk.ErrNodeExists):
		return fmt.Errorf("create ZooKeeper node %s: %w", node, err)
	}
	if _, err := conn.Set(node, data, -1); err != nil {
		return fmt.Errorf("update ZooKeeper node %s: %w", node, err)
	}
	fmt.Fprintf(stdout, "updating conf file %s\n", node)
	return nil
}

// wipe empties the node, as the original does; a missing node is not an
// error.
func wipe(conn *zk.Conn, node string, stdout io.Writer) error {
	_, err := conn.Set(node, []byte{}, -1)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		fmt.Fprintf(stdout, "nothing to wipe: %s does not exist\n", node)
		return nil
	case err != nil:
		return fmt.Errorf("wipe ZooKeeper node %s: %w", node, err)
	}
	fmt.Fprintf(stdout, "wiped conf node %s\n", node)
	return nil
}
