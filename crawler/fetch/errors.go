package fetch

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
)

// Errors a Fetch fails with (wrapped; test with errors.Is). Whatever the
// kind, IsRetryable says whether to try again.
var (
	// ErrTimeout: the download did not finish within Config.Timeout. Retryable.
	ErrTimeout = errors.New("download timed out")
	// ErrInvalidURL: the URL (or a redirect's Location) cannot be parsed or has no host.
	ErrInvalidURL = errors.New("invalid URL")
	// ErrUnsupportedScheme: the URL (or a redirect's Location) is not http or https.
	ErrUnsupportedScheme = errors.New("unsupported URL scheme")
	// ErrTooManyRedirects: more than Config.MaxRedirects redirects.
	ErrTooManyRedirects = errors.New("too many redirects")
	// ErrRedirectLoop: a redirect led back to a URL already visited in this Fetch.
	ErrRedirectLoop = errors.New("redirect loop")
	// ErrRobotsDisallowed: robots.txt forbids the URL (with Config.ObeyRobots).
	ErrRobotsDisallowed = errors.New("forbidden by robots.txt")
)

// IsRetryable reports whether another attempt at a failed Fetch might
// succeed: timeouts (including the caller's context ending: a request cut
// short by shutdown is worth trying again), refused, reset or aborted
// connections, unreachable hosts or networks, temporary DNS failures and
// connections closed before the whole response arrived (EOF, unexpected
// EOF). Invalid URLs, unsupported schemes, redirect loops, too many
// redirects, robots.txt refusals, unknown hosts, TLS certificate problems and
// other protocol errors are not: they fail the same way every time.
//
// Responses are never errors; RetryableStatus decides on statuses.
func IsRetryable(err error) bool {
	if err == nil || permanent(err) {
		return false
	}
	for _, transient := range []error{
		ErrTimeout, context.DeadlineExceeded, context.Canceled, io.ErrUnexpectedEOF, io.EOF,
		syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE,
		syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.ETIMEDOUT,
	} {
		if errors.Is(err, transient) {
			return true
		}
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return dnsErr.IsTemporary || dnsErr.IsTimeout
	}
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}

// permanent reports the errors that fail the same way every time, whatever
// else they wrap.
func permanent(err error) bool {
	for _, p := range []error{ErrInvalidURL, ErrUnsupportedScheme, ErrTooManyRedirects, ErrRedirectLoop, ErrRobotsDisallowed} {
		if errors.Is(err, p) {
			return true
		}
	}
	return false
}
