// Package frame splits a backend's streamed response body into complete
// events before they are handed to the adapter plugins. The gateway reads the
// body in arbitrary read-sized pieces; a [Splitter] takes those pieces one at
// a time and calls back once per complete event.
//
// Two framings are implemented:
//
//   - [SSE], text/event-stream as sent by vLLM, OpenAI-compatible servers and
//     Anthropic. The rules are those of the WHATWG HTML Living Standard,
//     §9.2.5 "Parsing an event stream" and §9.2.6 "Interpreting an event
//     stream" (https://html.spec.whatwg.org/multipage/server-sent-events.html):
//     one leading U+FEFF byte order mark is ignored; lines end in CRLF, LF or
//     a bare CR (a CR ending one piece followed by an LF starting the next is
//     one CRLF); an empty line dispatches the event; a line starting with ':'
//     is a comment; otherwise the field name runs up to the first ':' and the
//     value follows it, less one space if one comes first (a line without ':'
//     is a field with an empty value); "data" appends the value and a LF to
//     the data buffer, "event" sets the event type, "id", "retry" and unknown
//     fields are ignored; on dispatch the buffer's final LF is dropped (so
//     several data lines are joined with "\n"), an event with no data line is
//     not dispatched, and the event type is cleared. The payload emitted is
//     the data buffer; the event type is available from [SSE.EventName]
//     during the callback.
//
//   - [NDJSON], newline-delimited JSON as sent by Ollama: every line ending
//     in LF (or CRLF) is one event, emitted without its terminator; lines
//     holding only JSON whitespace (space, tab, CR) are skipped.
//
// Deliberate departures from the WHATWG rules, which are written for a
// browser: bytes are passed through as they are rather than decoded as UTF-8
// (the plugins see the payload bytes the backend sent); at end of stream
// [Splitter.End] processes an unterminated final line and dispatches an
// event that has data although its blank line never came (a browser drops
// it), so that a backend closing the connection right after its last data
// line loses nothing; the last event ID and reconnection time are not kept,
// since the gateway does not reconnect.
//
// # Cost
//
// The splitters are on the hot path of every streamed response. Line ends
// are found with [bytes.IndexByte] (vectorised), so each byte is examined a
// bounded number of times whatever the piece sizes. An event whose lines all
// lie within one piece and which has exactly one data line (the common case:
// one chunk per event) is emitted as a sub-slice of that piece, without a
// copy. Only a line that crosses a piece boundary, the data of an event that
// crosses one, and several data lines to join are copied, into buffers the
// splitter keeps and reuses, so that steady-state feeding allocates nothing.
//
// # Limits
//
// A splitter never holds more than its limit: when a line, or an event's
// joined data, would exceed it, Feed (or End) returns an error wrapping
// [ErrTooLarge] and the caller is expected to abort the stream. The error is
// returned again by every call until End or Reset. Where the error falls, and what was emitted
// before it, do not depend on how the stream was cut into pieces.
//
// A splitter is not safe for concurrent use; each stream has its own, which
// may be reused for another stream after End or Reset.
package frame
