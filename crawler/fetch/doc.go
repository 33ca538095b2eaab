// Package fetch is the crawler's downloader: one HTTP GET per crawl request,
// with connection reuse, doing what Scrapy's downloader and its default
// middlewares do for the original. Requests go over an HTTP/1.1 client of
// its own (h1.go: the request written and the response read on the
// caller's goroutine, https over TLS by ALPN http/1.1), or over net/http's
// transport through a proxy.
//
// A Fetcher is safe for concurrent use; the engine shares one. Fetch:
//
//   - sends DEFAULT_REQUEST_HEADERS, Accept-Encoding "gzip,deflate", the
//     request's User-Agent (else USER_AGENT) and the request's Cookie header
//     as given. There is no cookie jar: cookies a response sets are never
//     sent with another request, so crawls cannot leak cookies into each
//     other (the original's custom_cookies middleware). The Cookie is sent
//     only to the request's own host, also across redirects;
//   - follows redirects (301, 302, 303, 307, 308 with a Location, relative
//     or absolute) up to REDIRECT_MAX_TIMES; a redirect back to a URL already
//     visited (ErrRedirectLoop), one too many (ErrTooManyRedirects) or to a
//     scheme other than http and https fails the Fetch, and is not retryable;
//   - uses a proxy from the standard environment variables (HTTP_PROXY,
//     HTTPS_PROXY, NO_PROXY, as http.ProxyFromEnvironment; loopback
//     addresses are never proxied) unless Config.Proxy says otherwise;
//   - with ROBOTSTXT_OBEY, checks every URL it requests (redirect targets
//     too) against its host's robots.txt and fails with ErrRobotsDisallowed
//     (see Robots below);
//   - returns every response as a Result, whatever its status: 4xx and 5xx
//     pages are crawl results too (the original's HTTPERROR_ALLOW_ALL). The
//     engine retries statuses RetryableStatus names (RETRY_HTTP_CODES);
//   - refuses to connect to internal addresses (see Address guard below),
//     with ErrForbiddenAddress;
//   - reads at most DOWNLOAD_MAXSIZE body bytes, after decompressing gzip or
//     deflate (the applied Content-Encoding header is then removed, as
//     Scrapy does). A longer body is cut and the Result marked Truncated; it
//     is never read unbounded and never fails the page. A body whose
//     encoding is corrupt is kept as received, Content-Encoding included.
//     Bodies are read as streams and never held beyond that: a body with a
//     Content-Length goes into one buffer of its size, one without into
//     pooled chunks copied once into a buffer of its length, and a
//     compressed one is decoded twice (to count, then into a buffer of
//     exactly the length kept), so a compression bomb costs DOWNLOAD_MAXSIZE
//     and the few compressed bytes behind it. Error pages and redirects
//     alike; robots.txt at most 500 KiB;
//   - gives up after DOWNLOAD_TIMEOUT for the whole Fetch: waiting for
//     robots.txt, connecting, every redirect hop and reading the body.
//
// Failures without a response are errors; IsRetryable tells those worth
// another attempt (timeouts, refused or reset connections, temporary DNS
// failures, responses cut short) from those that fail the same way every time
// (invalid URLs, unsupported schemes, redirect loops, robots.txt, refused
// addresses; DropReason names which). The engine
// retries the former RETRY_TIMES times and then drops the request with a log
// line and a stat, as the original's retry middleware does.
//
// # Address guard
//
// By default (FETCH_BLOCK_PRIVATE; Config.AllowPrivate false) the fetcher
// does not connect to loopback, private (RFC 1918, fc00::/7), link-local
// (169.254/16, fe80::/10), shared (100.64/10), unspecified (0/8, ::),
// multicast, broadcast or reserved addresses, nor to their IPv4-mapped,
// IPv4-compatible or NAT64 IPv6 forms, except to FETCH_ALLOWED_NETWORKS
// (Config.AllowedNetworks). It checks the address of every connection it
// makes (the dialer's Control hook), whatever name led there: names that
// resolve inside, DNS rebinding, redirects and robots.txt loads are all
// covered. Before anything is sent, per hop, it also refuses hosts written
// as such an address in any form inet_aton or the URL standard read
// (127.1, 2130706433, 0x7f.1, 0177.0.0.1, [::ffff:127.0.0.1]) and
// localhost names (localhost, *.localhost). Through a proxy that second
// check is all it can do: the proxy resolves names and must refuse internal
// addresses itself; the proxy's own address is never refused. A refusal
// is ErrForbiddenAddress: not retryable, DropReason "private_address".
//
// # Robots
//
// With ROBOTSTXT_OBEY, each scheme+host's /robots.txt is fetched once (with
// the default User-Agent, following redirects, at most 500 KiB) and cached
// for ROBOTSTXT_CACHE_TTL; concurrent Fetches for a host wait for the one
// load. It is parsed by github.com/temoto/robotstxt, which picks the group
// whose user-agent is the longest prefix of ROBOTSTXT_USER_AGENT (by default
// the request's User-Agent product token, "scrapy-cluster-go") and falls
// back to "*". A robots.txt that is missing or forbidden (4xx) allows
// everything, as Google and Scrapy do. One that cannot be had at all (5xx,
// timeouts, refused connections, unparsable) also allows everything rather
// than stalling the crawl, and is tried again after a minute (or the TTL, if
// shorter).
//
// # Settings
//
// The download settings are declared in config.go (Settings), with Scrapy's
// or Scrapy Cluster 1.3's names and defaults; DOWNLOAD_MAXSIZE is 10 MiB,
// not Scrapy's 1 GiB, which is far more than a Kafka message holds.
// ConfigFromSettings reads them into a Config. The crawler's page in docs/
// lists them with their docs.
package fetch
