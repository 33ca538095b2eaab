// Package textcut shortens strings to a byte budget without splitting a
// UTF-8 character: for fields that are bounded where they are stored or
// shown (a crawl result's URL, the console's result list).
package textcut

import "unicode/utf8"

// UTF8 is s cut to at most n bytes, at the start of a character: the bytes
// of a character that would cross n are dropped. s shorter than n is s.
func UTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
