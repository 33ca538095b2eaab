package fetch

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Reading bodies within DOWNLOAD_MAXSIZE. A body is read as a stream and
// never more than maxSize decoded bytes are held: a plain body with a
// Content-Length goes into one buffer of its size (at most maxSize); one
// without is read into pooled chunks and copied once into a buffer of its
// length. A compressed body is decoded twice: once
// to count its decoded length, up to maxSize+1, keeping only the compressed
// bytes that make it; then into one buffer of exactly that length. So a
// compression bomb costs its decoded maxSize and the few compressed bytes
// behind them, and the buffer is never grown by copying.

// readBody reads at most maxSize bytes of the body, after decoding gzip or
// deflate, and closes it. truncated reports that there was more. An error
// means the connection failed before the body ended.
func readBody(resp *http.Response, maxSize int64) (body []byte, truncated bool, err error) {
	defer resp.Body.Close()
	src := &connReader{r: resp.Body}
	encoding := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
	if encoding != "gzip" && encoding != "x-gzip" && encoding != "deflate" {
		return readPlain(src, resp.ContentLength, maxSize)
	}
	body, truncated, decoded, err := readDecoded(src, encoding, maxSize)
	if err != nil {
		return nil, false, err
	}
	if decoded {
		resp.Header.Del("Content-Encoding")
	}
	return body, truncated, nil
}

// connReader remembers the error reading the connection failed with, to
// tell it from a decoder's complaint about what it read.
type connReader struct {
	r   io.Reader
	err error
}

func (c *connReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err != nil && err != io.EOF {
		c.err = err
	}
	return n, err
}

// readPlain reads at most maxSize bytes of r; size is the Content-Length
// (-1: unknown).
func readPlain(r io.Reader, size, maxSize int64) ([]byte, bool, error) {
	if size >= 0 {
		body := make([]byte, min(size, maxSize))
		if _, err := io.ReadFull(r, body); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // a body shorter than it said is cut short
			}
			return nil, false, err
		}
		return body, size > maxSize, nil
	}
	// Unknown length: into pooled chunks, then one buffer of the exact
	// length, so the body is never copied into ever larger buffers.
	var chunks []*[chunkSize]byte
	defer func() {
		for _, c := range chunks {
			chunkPool.Put(c)
		}
	}()
	var total int64
	for total < maxSize {
		if total%chunkSize == 0 {
			chunks = append(chunks, chunkPool.Get().(*[chunkSize]byte))
		}
		c := chunks[len(chunks)-1]
		n, err := r.Read(c[total%chunkSize : min(chunkSize, total%chunkSize+maxSize-total)])
		total += int64(n)
		if err == io.EOF {
			return join(chunks, total), false, nil
		}
		if err != nil {
			return nil, false, err
		}
	}
	var probe [1]byte
	more, err := io.ReadFull(r, probe[:])
	if more == 0 && err != io.EOF {
		return nil, false, err
	}
	return join(chunks, total), more > 0, nil
}

// chunkSize is the size of the pooled pieces bodies of unknown length are
// read into.
const chunkSize = 32 << 10

var chunkPool = sync.Pool{New: func() any { return new([chunkSize]byte) }}

// join copies the first total bytes of chunks into one slice.
func join(chunks []*[chunkSize]byte, total int64) []byte {
	out := make([]byte, total)
	for i, c := range chunks {
		copy(out[int64(i)*chunkSize:], c[:])
	}
	return out
}

// readDecoded reads a gzip or deflate body from src: at most maxSize
// decoded bytes, with decoded true. A body that does not decode (not
// compressed after all, or corrupt) is kept as it came, at most maxSize
// bytes of it, with decoded false. A compressed body longer than maxSize
// is cut there and what it holds is kept. err is src's failure.
func readDecoded(src *connReader, encoding string, maxSize int64) (body []byte, truncated, decoded bool, err error) {
	// Pass 1: count the decoded bytes (up to maxSize+1), keeping the
	// compressed ones read, at most maxSize+1 of them.
	var compressed bytes.Buffer
	limited := io.LimitReader(src, maxSize+1)
	var n int64
	zr, headerErr := newDecoder(encoding, io.TeeReader(limited, &compressed))
	derr := headerErr
	if headerErr == nil {
		n, derr = io.CopyN(io.Discard, zr, maxSize+1)
	}
	cut := int64(compressed.Len()) > maxSize // the compressed body is longer than maxSize
	switch {
	case src.err != nil:
		return nil, false, false, src.err
	case headerErr != nil: // not compressed after all
	case derr == nil: // more than maxSize decoded
		truncated, n = true, maxSize
	case derr == io.EOF: // the whole body
	case cut && errors.Is(derr, io.ErrUnexpectedEOF): // cut at maxSize compressed: keep what it holds
		truncated = true
	}
	if headerErr != nil || (derr != nil && derr != io.EOF && !truncated) {
		// Not what it says it is: keep it as received.
		raw := compressed.Bytes()
		if int64(len(raw)) > maxSize {
			return raw[:maxSize], true, false, nil
		}
		rest, more, err := readPlain(src, -1, maxSize-int64(len(raw)))
		if err != nil {
			return nil, false, false, err
		}
		return append(raw, rest...), more, false, nil
	}
	// Pass 2: decode into a buffer of exactly the length counted.
	body = make([]byte, n)
	zr, err = newDecoder(encoding, bytes.NewReader(compressed.Bytes()))
	if err == nil {
		_, err = io.ReadFull(zr, body)
	}
	if err != nil {
		return nil, false, false, fmt.Errorf("decode %s body again: %w", encoding, err) // cannot happen: the same bytes decoded before
	}
	return body, truncated || cut, true, nil
}

// newDecoder returns a reader of r decoded. RFC 9110 deflate is
// zlib-wrapped; some servers send raw deflate, which is read when r does
// not start with a zlib header.
func newDecoder(encoding string, r io.Reader) (io.Reader, error) {
	if encoding != "deflate" {
		return gzip.NewReader(r)
	}
	br := bufio.NewReader(r)
	if h, err := br.Peek(2); err == nil && h[0]&0x0f == 8 && (uint16(h[0])<<8|uint16(h[1]))%31 == 0 {
		return zlib.NewReader(br)
	}
	return flate.NewReader(br), nil
}
