package redisscripts_test

import (
	"context"
	"io/fs"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
	"github.com/scrapycluster/scrapy-cluster-go/scutils/redisscripts"
)

var ctx = context.Background()

// every is one value of each script's Go type.
var every = []redisscripts.Args{
	redisscripts.Seed{}, redisscripts.Seeds{}, redisscripts.Purge{}, redisscripts.End{}, redisscripts.Release{},
	redisscripts.Claim{}, redisscripts.Complete{}, redisscripts.Mark{}, redisscripts.Deactivate{}, redisscripts.Hold{}, redisscripts.Pop{}, redisscripts.LeaseOwner{},
	redisscripts.LeaseRequeue{}, redisscripts.LeaseReap{}, redisscripts.LeaseRestore{}, &redisscripts.Finish{}, &redisscripts.FinishNode{},
	redisscripts.LockRenew{}, redisscripts.LockRelease{}, redisscripts.RequestDelete{},
	redisscripts.RecrawlFeed{}, redisscripts.RecrawlStart{}, redisscripts.RecrawlCancel{},
	redisscripts.RecrawlClusterFeed{}, redisscripts.RecrawlClusterSeed{}, redisscripts.RecrawlClusterClaim{},
	redisscripts.RecrawlClusterDomain{}, redisscripts.RecrawlClusterStarted{},
}

func TestEveryScriptInTheFolderHasOneGoTypeThatNamesItInItsHeader(t *testing.T) {
	files, err := fs.Glob(os.DirFS("."), "*.lua")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range every {
		names = append(names, a.Script().Name())
		src, err := os.ReadFile(a.Script().Name() + ".lua")
		if err != nil {
			t.Fatal(err)
		}
		goType := reflect.Indirect(reflect.ValueOf(a)).Type().Name()
		if !strings.Contains(string(src), "Go: "+goType+".") {
			t.Errorf("%s.lua does not name its Go type: want %q in its header", a.Script().Name(), "Go: "+goType+".")
		}
	}
	for i := range files {
		files[i] = strings.TrimSuffix(files[i], ".lua")
	}
	slices.Sort(names)
	if len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Errorf("two Go types run one script: %v", names)
	}
	if !slices.Equal(files, names) {
		t.Errorf("scripts %v, Go types for %v", files, names)
	}
}

// A header says what a script takes and returns, before its first line of
// code.
func TestEveryScriptSaysItsKeysArgumentsAndAnswerAtItsTop(t *testing.T) {
	for _, a := range every {
		src, _ := os.ReadFile(a.Script().Name() + ".lua")
		var header strings.Builder
		for line := range strings.Lines(string(src)) {
			if !strings.HasPrefix(line, "--") {
				break
			}
			header.WriteString(line)
		}
		for _, want := range []string{"KEYS", "ARGV", "Returns"} {
			if !strings.Contains(header.String(), want) {
				t.Errorf("%s.lua: its header does not say its %s", a.Script().Name(), want)
			}
		}
	}
}

func TestEveryLibraryFunctionIsIncludedByNameAndDefinedOnce(t *testing.T) {
	libs, _ := fs.Glob(os.DirFS("lib"), "*.lua")
	for _, lib := range libs {
		name := strings.TrimSuffix(lib, ".lua")
		src, _ := os.ReadFile("lib/" + lib)
		if !regexp.MustCompile(`(?m)^local function ` + name + `\(`).Match(src) {
			t.Errorf("lib/%s does not define the function %s", lib, name)
		}
		var users []string
		for _, a := range every {
			if n := strings.Count(a.Script().Source(), "local function "+name+"("); n > 1 {
				t.Errorf("%s defines %s %d times", a.Script().Name(), name, n)
			} else if n == 1 {
				users = append(users, a.Script().Name())
			}
		}
		if len(users) == 0 {
			t.Errorf("no script includes %s", name)
		}
	}
}

func TestComposePutsTheIncludedFunctionsBeforeTheScript(t *testing.T) {
	s, err := redisscripts.Compose("test", "-- A test.\n-- include: lease_record\nreturn {lease_record('3:abc-1\\n{}')}\n")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Source(), "local function lease_record(v)") || !strings.HasSuffix(s.Source(), "return {lease_record('3:abc-1\\n{}')}\n") ||
		strings.Contains(s.Source(), "-- ") {
		t.Errorf("composed source:\n%s", s.Source())
	}
	for _, c := range servers(t) {
		got, err := s.Run(ctx, c.rdb, nil).StringSlice()
		if err != nil || !slices.Equal(got, []string{"abc", "-1", "{}"}) {
			t.Errorf("%s: lease_record answered %q, %v", c.name, got, err)
		}
	}
	// Only the header includes: a line further down is code (or a
	// comment) like any other.
	s, err = redisscripts.Compose("test", "return 1\n-- include: lease_record\n")
	if err != nil || strings.Contains(s.Source(), "local function") {
		t.Errorf("an include below the header: %v\n%s", err, s.Source())
	}
}

// A header's "-- flags:" line becomes the composed script's first line, the
// Redis 7 shebang, before the included functions.
func TestComposePutsTheFlagsShebangFirst(t *testing.T) {
	s, err := redisscripts.Compose("test", "-- A test.\n-- flags: allow-cross-slot-keys\n-- include: lease_record\nreturn 1\n")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Source(), "#!lua flags=allow-cross-slot-keys\nlocal function lease_record(v)") {
		t.Errorf("composed source:\n%s", s.Source())
	}
	if got, err := s.Run(ctx, servers(t)[0].rdb, nil).Int(); err != nil || got != 1 {
		t.Errorf("redis-server answered %v, %v", got, err)
	}
}

func TestComposeRefusesAnUnknownInclude(t *testing.T) {
	_, err := redisscripts.Compose("test", "-- include: no_such_function\nreturn 1\n")
	if err == nil || !strings.Contains(err.Error(), "no_such_function") {
		t.Errorf("got %v, want an error naming no_such_function", err)
	}
}

// Every script loads into redis-server; into miniredis (the local
// cluster's one Redis) every script but those with a Redis 7 shebang:
// finish_node, which runs only on a Redis Cluster.
func TestEveryScriptLoadsIntoRedisAndMiniredis(t *testing.T) {
	for _, c := range servers(t) {
		scripts := every
		if c.name == "miniredis" {
			scripts = slices.DeleteFunc(slices.Clone(every), func(a redisscripts.Args) bool { return strings.HasPrefix(a.Script().Source(), "#!") })
			if len(scripts) != len(every)-1 {
				t.Errorf("%d scripts have a shebang, want 1 (finish_node)", len(every)-len(scripts))
			}
		}
		if err := redisscripts.Load(ctx, c.rdb, scripts...); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		for _, a := range scripts {
			if ok, err := c.rdb.ScriptExists(ctx, sha1Of(a.Script())).Result(); err != nil || !ok[0] {
				t.Errorf("%s: %s not in the script cache after Load: %v %v", c.name, a.Script().Name(), ok, err)
			}
		}
	}
}

// server is a Redis to run scripts on: the real one of the tests or
// miniredis (the local cluster's).
type server struct {
	name string
	rdb  *redis.Client
}

// servers are a real redis-server and a miniredis, both empty.
func servers(t *testing.T) []server {
	t.Helper()
	m := miniredis.RunT(t)
	mini := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { mini.Close() })
	return []server{{"redis-server", harness.StartRedis(t).TestClient(t)}, {"miniredis", mini}}
}

func sha1Of(s *redisscripts.Script) string {
	return redis.NewScript(s.Source()).Hash()
}

// dump is every key of rdb with its type and contents, numbers near now
// (the Redis server's clock: a throttle's window, a lease's deadline) as
// "<now>".
func dump(t *testing.T, rdb *redis.Client) map[string]string {
	t.Helper()
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		typ := rdb.Type(ctx, k).Val()
		var v []string
		switch typ {
		case "string":
			v = []string{rdb.Get(ctx, k).Val()}
		case "hash":
			for f, x := range rdb.HGetAll(ctx, k).Val() {
				v = append(v, f+"="+x)
			}
		case "set":
			v = rdb.SMembers(ctx, k).Val()
		case "zset":
			for _, z := range rdb.ZRangeWithScores(ctx, k, 0, -1).Val() {
				v = append(v, z.Member.(string)+"@"+strconv.FormatFloat(z.Score, 'f', -1, 64))
			}
		case "list":
			v = rdb.LRange(ctx, k, 0, -1).Val()
		}
		for i := range v {
			v[i] = nearNow.ReplaceAllStringFunc(v[i], func(n string) string {
				f, _ := strconv.ParseFloat(n, 64)
				if d := time.Since(time.Unix(int64(f), 0)); d < time.Hour && d > -time.Hour {
					return "<now>"
				}
				return n
			})
		}
		sort.Strings(v)
		ttl := rdb.TTL(ctx, k).Val()
		out[k] = typ + " " + strings.Join(v, " | ") + " ttl " + strconv.FormatBool(ttl > 0)
	}
	return out
}

var nearNow = regexp.MustCompile(`\d{10}(\.\d+)?`)
