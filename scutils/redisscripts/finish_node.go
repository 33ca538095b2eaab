package redisscripts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// FinishNode is finish_node.lua's keys and arguments: Batches, each a
// Finish whose keys share a slot, run together on the Redis Cluster node
// serving all their slots, as many runs of finish.lua would be but for
// the fixed cost of each run (its command, its script call, its decoding).
// A node that no longer serves one of the slots (a slot moved, a failover
// under way) runs none of them: Run answers ErrNotServedHere.
type FinishNode struct {
	Batches []*Finish
}

// ErrNotServedHere says a run of finish_node.lua found a key its node does
// not serve (now): it wrote nothing.
var ErrNotServedHere = errors.New("finish_node: a key is not served by this node")

// Script is finish_node.lua.
func (*FinishNode) Script() *Script { return finishNode }

// Run runs the script and reads each batch's answer, in Batches' order.
func (n *FinishNode) Run(ctx context.Context, c redis.Scripter) ([]FinishResult, error) {
	keys, args, ackAt := n.build()
	return n.read(finishNode.Run(ctx, c, keys, args...), ackAt)
}

func (n *FinishNode) encode() ([]string, []any) {
	keys, args, _ := n.build()
	return keys, args
}

// build makes the script's keys and arguments: the first batch's first
// key, then the batches' sizes and each batch's keys and arguments (as
// Finish.build makes them); ackAt is each batch's.
func (n *FinishNode) build() (keys []string, args []any, ackAt [][]int) {
	sizes := make([][2]int, len(n.Batches))
	args = []any{nil}
	for i, f := range n.Batches {
		k, a, at := f.build()
		if i == 0 {
			keys = k[:1]
		}
		sizes[i] = [2]int{len(k), len(a)}
		for _, key := range k {
			args = append(args, key)
		}
		args = append(args, a...)
		ackAt = append(ackAt, at)
	}
	head, err := json.Marshal(sizes)
	if err != nil { // numbers only
		panic(err)
	}
	args[0] = head
	return keys, args, ackAt
}

// read is each batch's result from the run's command: {1, per batch its
// answer}, or {0, the error} (ErrNotServedHere).
func (n *FinishNode) read(cmd *redis.Cmd, ackAt [][]int) ([]FinishResult, error) {
	res, err := cmd.Slice()
	if err != nil {
		return nil, err
	}
	if len(res) == 0 {
		return nil, errors.New("finish_node: an empty answer")
	}
	if status, _ := res[0].(int64); status == 0 && len(res) == 2 {
		return nil, fmt.Errorf("%w: %v", ErrNotServedHere, res[1])
	}
	if status, _ := res[0].(int64); status != 1 || len(res) != 1+len(n.Batches) {
		return nil, fmt.Errorf("finish_node: unexpected answer %v", res)
	}
	out := make([]FinishResult, len(n.Batches))
	for i, f := range n.Batches {
		batch, _ := res[1+i].([]any)
		var ok bool
		if out[i], ok = f.result(batch, ackAt[i]); !ok {
			return nil, fmt.Errorf("finish_node: unexpected answer %v", res[1+i])
		}
	}
	return out, nil
}

// NotRun says err, a run's error, is one of a Redis Cluster node that
// did not run it: the node answered ErrNotServedHere, or refused the
// command before running it (MOVED or ASK left after the client's
// redirections, TRYAGAIN while a slot moves, CROSSSLOT, CLUSTERDOWN), or
// cannot run finish_node.lua at all (Unsupported).
func NotRun(err error) bool {
	if errors.Is(err, ErrNotServedHere) || Unsupported(err) {
		return true
	}
	for _, prefix := range []string{"MOVED", "ASK", "TRYAGAIN", "CROSSSLOT", "CLUSTERDOWN"} {
		if redis.HasErrorPrefix(err, prefix) {
			return true
		}
	}
	return false
}

// Unsupported says err is a Redis's refusal of a script with a shebang
// (Redis before 7: a Lua syntax error at "#"; or a flag it does not
// know): it did not run.
func Unsupported(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "Error compiling script") || strings.Contains(msg, "shebang")
}

// Fallback says what of a RunByNode fell back to runs of its own.
type Fallback struct {
	// Batches is how many batches were sent again, one run each.
	Batches int
	// Unsupported says a node cannot run finish_node.lua (Redis before
	// 7): runs of one batch each are all it takes.
	Unsupported bool
}

// RunByNode runs fs (each batch's keys in one slot) on a Redis Cluster
// with one run per node rather than one per batch: the batches whose
// slots one master serves, by c's slot map, in one run of
// finish_node.lua (a master with one batch: finish.lua), every run in one
// pipeline (go-redis routes each to its first key's master and follows a
// MOVED). A node run that did not run (NotRun: a slot moved, a failover
// under way, a stale slot map) falls back to one run per batch (RunAll),
// so a batch runs once whatever happens to the slot map. It returns each
// batch's result and error, in fs's order, and what fell back.
func RunByNode(ctx context.Context, c *redis.ClusterClient, fs []*Finish) ([]FinishResult, []error, Fallback) {
	return runByNode(ctx, c, fs, func(key string) (string, error) {
		m, err := c.MasterForKey(ctx, key)
		if err != nil {
			return "", err
		}
		return m.Options().Addr, nil
	})
}

// runByNode is RunByNode with nodeOf, the address of the master serving
// a key.
func runByNode(ctx context.Context, c redis.Cmdable, fs []*Finish, nodeOf func(key string) (string, error)) ([]FinishResult, []error, Fallback) {
	out, errs := make([]FinishResult, len(fs)), make([]error, len(fs))
	var members [][]int // per run, its batches' places in fs
	runOf := map[string]int{}
	for i, f := range fs {
		addr, err := nodeOf(f.LeaseOwners)
		if err != nil { // a run of its own; Redis redirects it
			members = append(members, []int{i})
			continue
		}
		n, ok := runOf[addr]
		if !ok {
			n, runOf[addr] = len(members), len(members)
			members = append(members, nil)
		}
		members[n] = append(members[n], i)
	}
	runs := make([]*pipelined, len(members))
	nodes := make([]*FinishNode, len(members))
	ackAt := make([][][]int, len(members))
	for n, m := range members {
		runs[n] = &pipelined{script: finishScript}
		if len(m) == 1 {
			var at []int
			runs[n].keys, runs[n].args, at = fs[m[0]].build()
			ackAt[n] = [][]int{at}
			continue
		}
		nodes[n] = &FinishNode{Batches: make([]*Finish, len(m))}
		for k, i := range m {
			nodes[n].Batches[k] = fs[i]
		}
		runs[n].script = finishNode
		runs[n].keys, runs[n].args, ackAt[n] = nodes[n].build()
	}
	runPipelined(ctx, c, runs)
	var again []int
	var fb Fallback
	for n, m := range members {
		if nodes[n] == nil {
			out[m[0]], errs[m[0]] = fs[m[0]].read(runs[n].cmd, ackAt[n][0])
			continue
		}
		res, err := nodes[n].read(runs[n].cmd, ackAt[n])
		if err != nil && NotRun(err) {
			fb.Unsupported = fb.Unsupported || Unsupported(err)
			again = append(again, m...)
			continue
		}
		for k, i := range m {
			if err != nil {
				errs[i] = err
			} else {
				out[i] = res[k]
			}
		}
	}
	if len(again) > 0 {
		retry := make([]*Finish, len(again))
		for k, i := range again {
			retry[k] = fs[i]
		}
		res, rerrs := RunAll(ctx, c, retry)
		for k, i := range again {
			out[i], errs[i] = res[k], rerrs[k]
		}
	}
	fb.Batches = len(again)
	return out, errs, fb
}
