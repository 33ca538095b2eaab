// Package render renders crawl requests that ask for it (their render
// field, crawlrequest.RenderSpec) in a pool of headless Chromium browsers
// (Pool), for crawlers with RENDER_ENABLED.
//
// # Why chromedp
//
// The pool drives Chromium over the DevTools protocol with chromedp rather
// than go-rod: the project's browser tests already use chromedp (one CDP
// library in the module graph, not two); its ExecAllocator starts the
// browser from a goroutine locked to its OS thread for the browser's life,
// so the kernel's parent-death signal (Pdeathsig) is reliable, and on
// close it kills the helpers still using the browser's temporary profile
// and removes the profile; and its contexts map onto what the pool needs
// (a browser per allocator, a browser context per tab, deadlines as
// context deadlines). go-rod's launcher downloads a browser by default and
// leaves process clean-up to its own leakless helper binary, which we
// would have to ship and trust.
//
// # Safety
//
// Every request a browser makes goes through an HTTP proxy the pool runs on
// a loopback port (Chromium's --proxy-server, with loopback not bypassed):
// it sends plain requests with the crawler's fetcher (fetch.Fetcher's
// RoundTrip: the address guard FETCH_BLOCK_PRIVATE and
// FETCH_ALLOWED_NETWORKS, and the proxy settings) and makes CONNECT tunnels
// with its DialTunnel. What the guard refuses gets a 403 and is counted
// (scrapy_crawler_render_refused_total by reason); when it is the page
// itself (or a redirect from it) the render fails with
// fetch.ErrForbiddenAddress, which the crawler's ledger counts as
// refused:private_address. The resource types of RENDER_BLOCK are failed
// by the DevTools Fetch domain before they are sent (never requested from
// the site). robots.txt is checked by the crawler before the render
// (fetch.Fetcher.Allowed).
//
// # Processes and memory
//
// Each browser runs in its own process group, as the crawler's child,
// killed by the kernel when the crawler dies (Pdeathsig SIGKILL) and, with
// its whole group, when the pool closes or replaces it. Each page is
// rendered in a tab of its own browser context, kept for the browser's
// next pages (opening one costs more than most renders): unwiped from a
// page to the next of the same crawl (Request.Session), wiped before a page
// of another (tab.wipe: cookies, storage, history), closed when its page failed;
// a browser is replaced after RENDER_RECYCLE pages, and as soon as it
// crashes or stops answering after a failed page. A render that
// hits its timeout fails alone: the pool checks that the browser still
// answers and replaces it if not.
package render
