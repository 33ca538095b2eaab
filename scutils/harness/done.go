package harness

import (
	"testing"
	"time"
)

// WaitDone waits for what, a goroutine that sends its result on done when
// it ends, and fails tb if it ends with an error or is still running after
// timeout.
func WaitDone(tb testing.TB, what string, timeout time.Duration, done <-chan error) {
	tb.Helper()
	select {
	case err := <-done:
		if err != nil {
			tb.Fatalf("%s: %v", what, err)
		}
	case <-time.After(timeout):
		tb.Fatalf("%s did not end within %s", what, timeout)
	}
}
