package throttle_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/throttle"
)

// AttemptAll makes each queue's pop as AttemptN would, in one pipeline:
// each its own outcome (popped and leased, empty, denied, an error), an
// error its pop's alone, and a pop whose lease owner was reaped made again
// under a new owner.
func TestAttemptAllPopsEachQueueAsAttemptNWould(t *testing.T) {
	ctx := context.Background()
	l, c := newLeases(t, 30*time.Second)
	minute := throttle.Config{Window: time.Minute, Limit: 5}
	a := newThrottle(t, "link:a.com:queue", minute)
	fill(t, "link:a.com:queue", 10)
	empty := newThrottle(t, "link:b.com:queue", minute)
	denied := newThrottle(t, "link:c.com:queue", throttle.Config{Window: time.Minute, Limit: 1})
	fill(t, "link:c.com:queue", 3)
	if res, err := denied.Attempt(ctx, nil); err != nil || res.Status != throttle.Popped {
		t.Fatalf("first pop of c.com: %+v, %v", res, err)
	}
	broken := newThrottle(t, "link:d.com:queue", minute)
	if err := c.Set(ctx, "link:d.com:queue", "not a sorted set", 0).Err(); err != nil {
		t.Fatal(err)
	}
	e := newThrottle(t, "link:e.com:queue", minute)
	fill(t, "link:e.com:queue", 2)
	pops := []throttle.Pop[string]{
		{Queue: a, Lease: l.New(), N: 8}, {Queue: empty, Lease: l.New(), N: 8}, {Queue: denied, Lease: l.New(), N: 8},
		{Queue: broken, Lease: l.New(), N: 8}, {Queue: e, N: 1},
	}
	out, errs := throttle.AttemptAll(ctx, c, pops)
	if errs[0] != nil || out[0].Status != throttle.Popped || out[0].Raw != `"item-9"` || len(out[0].More) != 4 ||
		out[0].More[3].LeaseID != pops[0].Lease.ID+":5" {
		t.Fatalf("a.com: %+v, %v; want 5 items (its window's limit), leased", out[0], errs[0])
	}
	if errs[1] != nil || out[1].Status != throttle.Empty {
		t.Fatalf("b.com: %+v, %v; want empty", out[1], errs[1])
	}
	if errs[2] != nil || out[2].Status != throttle.DeniedByWindow || out[2].Wait < 50*time.Second {
		t.Fatalf("c.com: %+v, %v; want denied for about a minute", out[2], errs[2])
	}
	if errs[3] == nil || !strings.Contains(errs[3].Error(), "link:d.com:queue") {
		t.Fatalf("d.com (not a queue): %+v, %v; want an error naming the queue", out[3], errs[3])
	}
	if errs[4] != nil || out[4].Status != throttle.Popped || out[4].Raw != `"item-1"` || len(out[4].More) != 0 {
		t.Fatalf("e.com (no lease, one item): %+v, %v", out[4], errs[4])
	}
	if n, _ := l.Count(ctx); n != 5 {
		t.Fatalf("%d leases, want a.com's 5", n)
	}
	if n := c.ZCard(ctx, "link:e.com:queue").Val(); n != 1 {
		t.Fatalf("e.com holds %d, want 1", n)
	}

	// The owner reaped (Redis or this process away longer than the TTL):
	// the pop goes on under a new owner, the others' pops as usual.
	old := l.Owner()
	if err := c.ZRem(ctx, "leases:link:owners", old).Err(); err != nil {
		t.Fatal(err)
	}
	pops = []throttle.Pop[string]{{Queue: e, Lease: l.New(), N: 1}, {Queue: empty, N: 1}}
	out, errs = throttle.AttemptAll(ctx, c, pops)
	if errs[0] != nil || out[0].Status != throttle.Popped || out[0].Raw != `"item-0"` {
		t.Fatalf("pop of a reaped owner: %+v, %v", out[0], errs[0])
	}
	if owner := throttle.OwnerOf(pops[0].Lease.ID); owner == old || owner != l.Owner() {
		t.Fatalf("lease %s after the reap, old owner %s, owner now %s", pops[0].Lease.ID, old, l.Owner())
	}
	if errs[1] != nil || out[1].Status != throttle.Empty {
		t.Fatalf("b.com beside it: %+v, %v", out[1], errs[1])
	}
	if !c.HExists(ctx, "leases:link:items", pops[0].Lease.ID).Val() {
		t.Fatal("the pop under the new owner left no lease record")
	}
}
