package harness_test

import (
	"errors"
	"testing"
	"time"

	"github.com/scrapycluster/scrapy-cluster-go/scutils/harness"
)

func TestWaitDoneFailsOnAnErrorOrATimeoutAndPassesOnNil(t *testing.T) {
	for _, tc := range []struct {
		name string
		send func(chan<- error)
		want []string
	}{
		{"a nil result passes", func(c chan<- error) { c <- nil }, nil},
		{"an error fails", func(c chan<- error) { c <- errors.New("boom") }, []string{"the job: boom"}},
		{"no result within the timeout fails", func(chan<- error) {}, []string{"the job did not end within 50ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			tc.send(done)
			r := &recorder{TB: t}
			func() {
				defer func() {
					if p := recover(); p != nil && p != r {
						panic(p)
					}
				}()
				harness.WaitDone(r, "the job", 50*time.Millisecond, done)
			}()
			if len(r.errors) != len(tc.want) || (len(tc.want) > 0 && r.errors[0] != tc.want[0]) {
				t.Errorf("failures %q, want %q", r.errors, tc.want)
			}
		})
	}
}
