package frame

import (
	"errors"
	"fmt"
)

// Splitter splits a byte stream into events.
type Splitter interface {
	// Feed consumes p (which the caller may reuse after Feed returns) and
	// calls emit for each complete event, in order. emit's argument aliases
	// internal or input buffers and is valid only during the call; emit must
	// not modify it, nor call Feed, End or Reset.
	Feed(p []byte, emit func(ev []byte)) error
	// End flushes an unterminated final event at EOF (SSE: a final event
	// without a blank line is dispatched if it has data; NDJSON: a final line
	// without newline) and resets.
	End(emit func(ev []byte)) error
	// Reset discards any partial event and any error, readying the splitter
	// for a new stream.
	Reset()
}

// ErrTooLarge is returned, wrapped with the size, when a line or an event
// exceeds the splitter's size limit. The caller should abort the stream.
var ErrTooLarge = errors.New("frame: event exceeds the size limit")

// DefaultMax is the size limit used when NewSSE or NewNDJSON is given a
// limit of zero or less.
const DefaultMax = 1 << 20

// keepCap is the largest buffer capacity Reset keeps for the next stream;
// a larger buffer, grown by an unusually large event, is dropped.
const keepCap = 64 << 10

var (
	_ Splitter = (*SSE)(nil)
	_ Splitter = (*NDJSON)(nil)
)

func limit(max int) int {
	if max <= 0 {
		return DefaultMax
	}
	return max
}

func tooLarge(n, max int) error {
	return fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, n, max)
}

// reuse empties b for reuse, dropping it if it grew large.
func reuse(b []byte) []byte {
	if cap(b) > keepCap {
		return nil
	}
	return b[:0]
}

// capped returns b with its capacity cut to its length, so that an append by
// the callee cannot overwrite the bytes after it.
func capped(b []byte) []byte { return b[:len(b):len(b)] }
