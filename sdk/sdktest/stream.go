package sdktest

import (
	"bytes"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// StreamResult is a whole stream driven through one op.
type StreamResult struct {
	Out   []byte   // the payloads of every call, concatenated
	Calls []Result // one per call made
	Done  bool     // a call reported abi.ResultStreamDone
	// Status and Error are the first status other than ok (the stream
	// stopped there), else ok.
	Status abi.Status
	Error  string
}

// OK reports whether every call succeeded.
func (s StreamResult) OK() bool { return s.Status == abi.StatusOK }

// Stream drives a stream op as the gateway's relay does, the state blob
// each call returns (or keeps) handed to the next, and stops at the first
// status other than ok (reported in the result, not failed on).
//
// stream_encode (a translator alone): one call per batch of chunk items,
// abi.FlagFirst on the first and abi.FlagEnd on the last; give an empty
// last batch to send the end call alone.
//
// stream_decode and fused_stream (the backend's events): one call per
// non-empty batch of events, abi.FlagFirst on the first, until a call
// reports abi.ResultStreamDone (the gateway stops reading the backend
// there); then one end call, abi.FlagEnd and no events. The gateway makes
// that call only after the end marker (a stream cut short is a truncation
// error for the client); Stream makes it either way and reports Done.
func (h *Harness) Stream(op abi.Op, batches [][][]byte, opts ...Option) StreamResult {
	h.tb.Helper()
	var s StreamResult
	var state []byte
	call := func(flags uint32, items [][]byte) bool {
		r := h.Call(op, append(opts[:len(opts):len(opts)], Items(items...), Flags(flags), State(state))...)
		s.Calls = append(s.Calls, r)
		if !r.OK() {
			s.Status, s.Error = r.Status, r.Error
			return false
		}
		if r.State != nil {
			state = r.State
		}
		s.Out = append(s.Out, r.Payload...)
		s.Done = s.Done || r.Flags&abi.ResultStreamDone != 0
		return true
	}
	if op == abi.OpStreamEncode {
		for i, batch := range batches {
			var flags uint32
			if i == 0 {
				flags |= abi.FlagFirst
			}
			if i == len(batches)-1 {
				flags |= abi.FlagEnd
			}
			if !call(flags, batch) {
				return s
			}
		}
		return s
	}
	flags := uint32(abi.FlagFirst)
	for _, batch := range batches {
		if len(batch) == 0 {
			continue // the gateway calls only when a read gave events
		}
		if !call(flags, batch) {
			return s
		}
		flags = 0
		if s.Done {
			break
		}
	}
	call(flags|abi.FlagEnd, nil)
	return s
}

// Chunks encodes canonical chunks as list items (stream_encode's input).
func Chunks(chunks ...canon.ChatChunk) [][]byte {
	items := make([][]byte, len(chunks))
	for i := range chunks {
		items[i] = chunks[i].AppendJSON(nil)
	}
	return items
}

// ChunkBatches is Chunks for each batch.
func ChunkBatches(batches ...[]canon.ChatChunk) [][][]byte {
	out := make([][][]byte, len(batches))
	for i, b := range batches {
		out[i] = Chunks(b...)
	}
	return out
}

// SSEEvents frames a recorded text/event-stream as the gateway does for
// an adapter: one item per event, its data lines joined by "\n"; comment
// lines, other fields and events without data are dropped.
func SSEEvents(b []byte) [][]byte {
	var events [][]byte
	var cur []byte
	have := false
	for _, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		switch {
		case len(line) == 0:
			if have {
				events = append(events, cur)
			}
			cur, have = nil, false
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimPrefix(line[5:], []byte(" "))
			if have {
				cur = append(cur, '\n')
			}
			cur = append(cur, d...)
			have = true
		}
	}
	if have {
		events = append(events, cur)
	}
	return events
}

// NDJSONLines frames a recorded NDJSON stream: one item per non-blank
// line, without its line ending.
func NDJSONLines(b []byte) [][]byte {
	var lines [][]byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(bytes.TrimSpace(line)) > 0 {
			lines = append(lines, line)
		}
	}
	return lines
}
