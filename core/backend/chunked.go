package backend

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// chunkedBody decodes a chunked (Transfer-Encoding: chunked) stream body
// from the connection's reader, so that one Read returns every complete
// event already buffered: the data of the first chunk it can read
// (waiting for it when nothing is buffered), then that of each further
// chunk whose bytes are in the buffer already, never waiting for more.
// The read that waits fills the buffer with all the socket holds, so a
// relay behind its backend gets every event queued since its last read.
//
// vLLM (uvicorn) and Ollama (net/http) send each event as its own HTTP
// chunk. fasthttp's stream reader returns at most one chunk a Read, so a
// relay behind on a fast stream made one read, one plugin call and one
// client write per event even when the next twenty were in the buffer;
// with this reader it makes one of each per batch (core/server relay).
//
// The framing is RFC 9112 §7.1 as fasthttp reads it: a hex size line
// with optional whitespace and extension (ignored), CRLF line ends,
// trailer lines (discarded) after the last chunk.
type chunkedBody struct {
	br    *bufio.Reader
	left  int        // unread bytes of the current chunk's data
	state chunkState // what the next bytes are
}

type chunkState uint8

const (
	chunkSize    chunkState = iota // a chunk-size line
	chunkData                      // left bytes of chunk data
	chunkCRLF                      // the CRLF after a chunk's data
	chunkTrailer                   // trailer lines, up to an empty one
	chunkDone                      // the body ended
)

// maxChunkHex bounds a chunk size's hex digits (fasthttp's limit too).
const maxChunkHex = 15

var errChunkLine = errors.New("backend: malformed chunk framing")

// Read fills p with the body's data. It waits on the connection only
// while it has nothing to return; io.EOF comes with the data of the last
// chunk when the terminating chunk was buffered behind it.
func (c *chunkedBody) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		wait := n == 0 // may block on the connection only while empty-handed
		switch c.state {
		case chunkDone:
			return n, io.EOF
		case chunkSize:
			line, ok, err := c.line(wait)
			if !ok {
				return n, err
			}
			size, err := parseChunkLine(line)
			if err != nil {
				return n, err
			}
			if size == 0 {
				c.state = chunkTrailer
			} else {
				c.left, c.state = size, chunkData
			}
		case chunkData:
			m := min(c.left, len(p)-n)
			if !wait {
				if m = min(m, c.br.Buffered()); m == 0 {
					return n, nil
				}
			}
			r, err := c.br.Read(p[n : n+m])
			n += r
			c.left -= r
			if c.left == 0 {
				c.state = chunkCRLF
			}
			if err != nil {
				return n, unexpected(err)
			}
		case chunkCRLF:
			if !wait && c.br.Buffered() < 2 {
				return n, nil
			}
			if err := c.crlf(); err != nil {
				return n, err
			}
			c.state = chunkSize
		case chunkTrailer:
			line, ok, err := c.line(wait)
			if !ok {
				return n, err
			}
			if len(line) == 2 { // the empty line that ends the trailer
				c.state = chunkDone
			}
		}
	}
	return n, nil
}

// line reads one CRLF-terminated line (its CRLF included). Without wait
// it reads one only when it is whole in the buffer: ok false and no
// error otherwise.
func (c *chunkedBody) line(wait bool) (line []byte, ok bool, err error) {
	if !wait {
		b, _ := c.br.Peek(c.br.Buffered())
		if bytes.IndexByte(b, '\n') < 0 {
			return nil, false, nil
		}
	}
	line, err = c.br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, false, fmt.Errorf("%w: a line longer than %d bytes", errChunkLine, c.br.Size())
		}
		return nil, false, unexpected(err)
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, false, fmt.Errorf("%w: a line not ended by CRLF", errChunkLine)
	}
	return line, true, nil
}

func (c *chunkedBody) crlf() error {
	b, err := c.br.Peek(2)
	if err != nil {
		return unexpected(err)
	}
	if b[0] != '\r' || b[1] != '\n' {
		return fmt.Errorf("%w: chunk data not followed by CRLF", errChunkLine)
	}
	_, _ = c.br.Discard(2)
	return nil
}

// parseChunkLine reads a chunk-size line (CRLF included): hex digits,
// optional whitespace, an optional extension after ';'.
func parseChunkLine(line []byte) (int, error) {
	line = line[:len(line)-2]
	size, i := 0, 0
	for ; i < len(line); i++ {
		d := hexDigit(line[i])
		if d < 0 {
			break
		}
		if i == maxChunkHex {
			return 0, fmt.Errorf("%w: a chunk size of more than %d hex digits", errChunkLine, maxChunkHex)
		}
		size = size<<4 | d
	}
	if i == 0 {
		return 0, fmt.Errorf("%w: no chunk size in %q", errChunkLine, line)
	}
	ows := false
	for ; i < len(line); i++ {
		switch line[i] {
		case ' ', '\t':
			ows = true
			continue
		case ';':
			if !ows {
				return size, nil // an extension: ignored
			}
		}
		return 0, fmt.Errorf("%w: invalid character %q after the chunk size", errChunkLine, line[i])
	}
	return size, nil
}

func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// unexpected: the connection ending inside the body truncates it.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
