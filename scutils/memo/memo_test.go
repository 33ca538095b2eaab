package memo_test

import (
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/memo"
)

// A key is built once, its error kept with its value; the bytes and
// string forms of a key find the same entry; a key copied from a larger
// text does not keep that text's later changes; past Size keys the cache
// starts again and builds anew.
func TestCacheBuildsEachKeyOnce(t *testing.T) {
	var c memo.Cache[int]
	builds := map[string]int{}
	build := func(k string) func() (int, error) {
		return func() (int, error) {
			builds[k]++
			if k == "bad" {
				return 0, errors.New("bad key")
			}
			return len(k), nil
		}
	}
	for range 3 {
		if v, err := c.Get("abc", build("abc")); v != 3 || err != nil {
			t.Fatalf("Get(abc) = %d, %v", v, err)
		}
		if v, err := c.GetBytes([]byte("abc"), build("abc")); v != 3 || err != nil {
			t.Fatalf("GetBytes(abc) = %d, %v", v, err)
		}
		if _, err := c.Get("bad", build("bad")); err == nil {
			t.Fatal("Get(bad): no error")
		}
	}
	if builds["abc"] != 1 || builds["bad"] != 1 {
		t.Fatalf("builds %v, want one each", builds)
	}

	text := []byte("xyz")
	if _, err := c.GetBytes(text, build("xyz")); err != nil {
		t.Fatal(err)
	}
	text[0] = 'q'
	if _, err := c.Get("xyz", build("xyz")); err != nil || builds["xyz"] != 1 {
		t.Fatalf("xyz built %d times (%v), want once: the kept key changed with its text", builds["xyz"], err)
	}

	for i := range memo.Size {
		if _, err := c.Get(strconv.Itoa(i), build("n")); err != nil {
			t.Fatal(err)
		}
	}
	before := builds["abc"]
	if _, err := c.Get("abc", build("abc")); err != nil || builds["abc"] != before+1 {
		t.Fatalf("abc built %d times after %d more keys, want once more", builds["abc"]-before, memo.Size)
	}
}

// Callers at once share the cache safely (run with -race).
func TestCacheIsSafeForConcurrentUse(t *testing.T) {
	var c memo.Cache[string]
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				k := strconv.Itoa((g + i) % 50)
				if v, err := c.Get(k, func() (string, error) { return "v" + k, nil }); err != nil || v != "v"+k {
					t.Errorf("Get(%s) = %q, %v", k, v, err)
				}
			}
		})
	}
	wg.Wait()
}
