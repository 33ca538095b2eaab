// Package redisscripts holds every Lua script the cluster runs in Redis,
// the data model's atomic steps: one .lua file per script in this folder,
// the functions several scripts share in lib/, and one Go type per script
// whose fields are the script's keys and arguments.
//
// A script says at its top what its KEYS and ARGV are and what it
// returns. A line "-- include: <name>" in that header puts the function
// of lib/<name>.lua before the script (a local function of the same
// name), so a shared step is written once and included by name. A line
// "-- flags: <flags>" makes the script's first line the Redis 7 shebang
// "#!lua flags=<flags>".
//
// A script's Go type (Seed for ledger_seed.lua, Finish for finish.lua,
// ...) is run with Run, which sends the script by its SHA1 (EVALSHA) and
// whole (EVAL) when Redis does not know it, as go-redis's Script does; in
// a pipeline only EVALSHA goes out, so Load such scripts at start-up (and
// again after a NOSCRIPT: Redis restarted without its script cache).
// Eval always sends the script whole, for pipelines and MULTIs that must
// not fail on a script cache Redis lost.
//
// The scripts, by what they keep:
//
//	the crawl ledger   ledger_seed, ledger_seeds, ledger_purge, ledger_end,
//	                   ledger_release, ledger_claim, ledger_complete,
//	                   ledger_mark (a completion once across a Redis
//	                   Cluster's shards)
//	                   (lib/ledger_new_work: new work counted, the crawl
//	                   active and indexed)
//	the throttle       throttle_pop (a throttled, leased pop)
//	leases             lease_owner, lease_requeue, lease_reap,
//	                   lease_restore (lib/lease_record: a lease's record)
//	the crawler        finish (leases ended, follow-ups queued and counted;
//	                   lib/finish_batch), finish_node (finish's batches of
//	                   several slots of one Redis Cluster node in one run)
//	the Redis Monitor  lock_renew, lock_release, request_delete
//	re-crawls          recrawl_feed (a scheduled crawl's seed), recrawl_start
//	                   (a run starts once), recrawl_cancel (a schedule ends);
//	                   on a Redis Cluster recrawl_cluster_feed and _seed (a
//	                   seed), _claim, _domain and _started (a run's start)
//
// Every script runs on a real redis-server and on miniredis (the local
// cluster's embedded Redis, whose Lua is gopher-lua): the tests run each
// on both and compare what they answer and leave.
package redisscripts

import (
	"context"
	"embed"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed *.lua lib/*.lua
var files embed.FS

// The scripts, each run by its Go type.
var (
	ledgerSeed       = mustScript("ledger_seed")
	ledgerSeeds      = mustScript("ledger_seeds")
	ledgerPurge      = mustScript("ledger_purge")
	ledgerEnd        = mustScript("ledger_end")
	ledgerRelease    = mustScript("ledger_release")
	ledgerClaim      = mustScript("ledger_claim")
	ledgerComplete   = mustScript("ledger_complete")
	ledgerMark       = mustScript("ledger_mark")
	ledgerDeactivate = mustScript("ledger_deactivate")
	throttlePop      = mustScript("throttle_pop")
	leaseOwner       = mustScript("lease_owner")
	leaseRequeue     = mustScript("lease_requeue")
	leaseReap        = mustScript("lease_reap")
	leaseRestore     = mustScript("lease_restore")
	finishScript     = mustScript("finish")
	finishNode       = mustScript("finish_node")
	lockRenew        = mustScript("lock_renew")
	lockRelease      = mustScript("lock_release")
	requestDelete    = mustScript("request_delete")
	recrawlFeed      = mustScript("recrawl_feed")
	recrawlStart     = mustScript("recrawl_start")
	recrawlCancel    = mustScript("recrawl_cancel")
)

// Script is one script with the library functions it includes.
type Script struct {
	name   string
	source string
	script *redis.Script
}

// Name is the script's name: its file's without ".lua".
func (s *Script) Name() string { return s.name }

// Source is the script as sent to Redis: its library functions first,
// without comment lines.
func (s *Script) Source() string { return s.source }

// Run runs the script by its SHA1 (EVALSHA), sending it whole (EVAL) when
// Redis does not know it. In a pipeline only EVALSHA goes out.
func (s *Script) Run(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	return s.script.Run(ctx, c, keys, args...)
}

// Eval sends the script whole (EVAL).
func (s *Script) Eval(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	return s.script.Eval(ctx, c, keys, args...)
}

// Load puts the script in Redis's script cache.
func (s *Script) Load(ctx context.Context, c redis.Scripter) error {
	if err := s.script.Load(ctx, c).Err(); err != nil {
		return fmt.Errorf("load script %s: %w", s.name, err)
	}
	return nil
}

// Args are one script's keys and arguments: each script's Go type.
type Args interface {
	// Script is the script the arguments are for.
	Script() *Script
	encode() (keys []string, args []any)
}

// Run runs a's script with a's keys and arguments (Script.Run).
func Run[A Args](ctx context.Context, c redis.Scripter, a A) *redis.Cmd {
	keys, args := a.encode()
	return a.Script().Run(ctx, c, keys, args...)
}

// RunPipelined runs each of as through one pipeline of c (on a Redis
// Cluster, one round trip per master, the masters at once) by SHA1, then
// those Redis did not know (answered NOSCRIPT: they did not run) whole
// through another; cmds[i] is the answer of as[i], its error its own.
func RunPipelined[A Args](ctx context.Context, c redis.Cmdable, as []A) (cmds []*redis.Cmd) {
	runs := make([]*pipelined, len(as))
	for i, a := range as {
		keys, args := a.encode()
		runs[i] = &pipelined{script: a.Script(), keys: keys, args: args}
	}
	runPipelined(ctx, c, runs)
	cmds = make([]*redis.Cmd, len(runs))
	for i, r := range runs {
		cmds[i] = r.cmd
	}
	return cmds
}

// Eval sends a's script whole with a's keys and arguments (Script.Eval).
func Eval[A Args](ctx context.Context, c redis.Scripter, a A) *redis.Cmd {
	keys, args := a.encode()
	return a.Script().Eval(ctx, c, keys, args...)
}

// Load puts the scripts of the given arguments' types in Redis's script
// cache.
func Load(ctx context.Context, c redis.Scripter, types ...Args) error {
	for _, a := range types {
		if err := a.Script().Load(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// include is a header line naming a library function.
var include = regexp.MustCompile(`(?m)^-- include: (\w+)$`)

// flags is a header line giving the script's Redis 7 flags: the composed
// script's first line is then the shebang "#!lua flags=<flags>" (a script
// only Redis 7 and later run).
var flags = regexp.MustCompile(`(?m)^-- flags: ([\w,-]+)$`)

// Compose makes a script of source, with the library functions its header
// includes. The scripts of this folder are composed at start-up; Compose
// is for scripts kept elsewhere (tests).
//
// The composed script leaves out the comment lines: a script sent whole
// (EVAL) costs no more for its header.
func Compose(name, source string) (*Script, error) {
	var b strings.Builder
	if m := flags.FindStringSubmatch(header(source)); m != nil {
		b.WriteString("#!lua flags=" + m[1] + "\n")
	}
	for _, m := range include.FindAllStringSubmatch(header(source), -1) {
		lib, err := files.ReadFile("lib/" + m[1] + ".lua")
		if err != nil {
			return nil, fmt.Errorf("script %s includes %s: no lib/%s.lua", name, m[1], m[1])
		}
		writeCode(&b, string(lib))
	}
	writeCode(&b, source)
	return &Script{name: name, source: b.String(), script: redis.NewScript(b.String())}, nil
}

// writeCode writes the lines of source that are not comments.
func writeCode(b *strings.Builder, source string) {
	for line := range strings.Lines(source) {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			b.WriteString(line)
		}
	}
}

// header is a script's first comment lines.
func header(source string) string {
	end := 0
	for end < len(source) && strings.HasPrefix(source[end:], "--") {
		nl := strings.IndexByte(source[end:], '\n')
		if nl < 0 {
			return source
		}
		end += nl + 1
	}
	return source[:end]
}

// mustScript composes the script <name>.lua of this folder.
func mustScript(name string) *Script {
	src, err := files.ReadFile(name + ".lua")
	if err != nil {
		panic(err)
	}
	s, err := Compose(name, string(src))
	if err != nil {
		panic(err)
	}
	return s
}

// ttlSeconds is d in whole seconds, at least 1 (an expiry).
func ttlSeconds(d time.Duration) int64 { return max(1, int64(d/time.Second)) }
