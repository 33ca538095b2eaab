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
	// ErrForbiddenAddress: the URL (or a redirect, or robots.txt) leads to
	// a loopback, private, link-local or other internal address, which the
	// fetcher refuses unless Config.AllowPrivate or Config.AllowedNetworks
	// say otherwise (FETCH_BLOCK_PRIVATE, FETCH_ALLOWED_NETWORKS). Nothing
	// was sent to it.
	ErrForbiddenAddress = errors.New("refused: private address")
)

// IsRetryable reports whether another attempt at a failed Fetch might
// succeed: timeouts (including the caller's context ending: a request cut
// short by shutdown is worth trying again), refused, reset or aborted
// connections, unreachable hosts or networks, temporary DNS failures and
// connections closed before the whole response arrived (EOF, unexpected
// EOF). Refused internal addresses, invalid URLs, unsupported schemes,
// redirect loops, too many redirects, robots.txt refusals, unknown hosts,
// TLS certificate problems and other protocol errors are not: they fail the
// same way every time.
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

// permanentErrors are the errors that fail the same way every time, with
// the reason DropReason gives for each.
var permanentErrors = []struct {
	err    error
	reason string
}{
	{ErrForbiddenAddress, "private_address"},
	{ErrInvalidURL, "invalid_url"},
	{ErrUnsupportedScheme, "unsupported_scheme"},
	{ErrTooManyRedirects, "too_many_redirects"},
	{ErrRedirectLoop, "redirect_loop"},
	{ErrRobotsDisallowed, "robots_txt"},
}

// permanent reports the errors that fail the same way every time, whatever
// else they wrap.
func permanent(err error) bool { return DropReason(err) != "" }

// DropReason names why a Fetch that failed for good is dropped, for log
// lines and counts: "private_address" (ErrForbiddenAddress),
// "invalid_url", "unsupported_scheme", "too_many_redirects",
// "redirect_loop" or "robots_txt". It is "" for errors that are retryable
// or of no kind listed in errors.go.
func DropReason(err error) string {
	if err == nil {
		return ""
	}
	for _, p := range permanentErrors {
		if errors.Is(err, p.err) {
			return p.reason
		}
	}
	return ""
}
