// Package render renders crawl requests that ask for it (their render
// field, crawlrequest.RenderSpec) in a pool of headless Chromium browsers.
package render
