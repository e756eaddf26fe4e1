package responses

import (
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// stateVersion is the first byte of the stream state blob and the
// manifest's StateVersion.
const stateVersion = 1

// streamState is what EncodeStream remembers between calls of one stream.
// The .done events and the terminal event repeat every item's full text,
// so the blob holds all of it: the answer's size in bytes plus a few bytes
// per item (about 3.9 bytes a token of English with cl100k: 125 KiB for a
// 32k-token answer, 200 KiB and more for text of long words; hence the
// bundle's limits.state_max_kb of 320 in plugins.yaml). The host passes the blob into and out of every stream
// call, so each call copies the text so far a few times (host to guest,
// into the new blob, out to the host): O(n²) bytes over a stream.
// Measured inside wazero (BenchmarkWasm, one 6-byte delta per call on a
// loaded 2-core machine): 11-13 µs a call with 1 KiB of state, 125-330 µs
// with 128 KiB; about 2 µs per KiB. A 32k-token answer sent one token per
// call thus costs a few seconds of CPU spread over the minutes it streams;
// the host batches the events of one network read into one call, which
// divides that.
type streamState struct {
	seq     uint64 // the next event's sequence_number
	started bool   // response.created and response.in_progress were written
	done    bool   // the terminal event was written
	finish  canon.FinishReason
	// model and created are the response's, kept for response.failed:
	// error_encode gets neither.
	model, created string
	usage          *canon.Usage
	u              canon.Usage // usage's storage
	items          []item
}

const (
	flagStarted = 1 << iota
	flagDone
	flagUsage
)

var errState = sdk.BadInput("openai-responses: corrupt stream state")

// decode reads a blob written by encode; an empty blob is the initial
// state. The items' strings view b (see view): b must not change during
// the call.
func (s *streamState) decode(b []byte, items []item) error {
	*s = streamState{items: items[:0]}
	if len(b) == 0 {
		return nil
	}
	if b[0] != stateVersion {
		return errState
	}
	r := sdk.StateReader{B: b[1:]}
	s.seq = r.Uint()
	flags := r.Uint()
	s.finish = canon.FinishReason(bytesOf(&r))
	s.model, s.created = bytesOf(&r), bytesOf(&r)
	if flags&flagUsage != 0 {
		s.u = canon.Usage{PromptTokens: int(r.Int()), CompletionTokens: int(r.Int()), TotalTokens: int(r.Int()),
			ReasoningTokens: int(r.Int()), CachedTokens: int(r.Int())}
		s.usage = &s.u
	}
	n := r.Uint()
	if n > uint64(len(r.B)) { // each item takes at least one byte
		return errState
	}
	for range n {
		it := item{buf: -1}
		k := r.Uint()
		it.kind = byte(k >> 1)
		it.open = k&1 != 0
		it.tool = int(r.Int())
		it.callID, it.name, it.text = bytesOf(&r), bytesOf(&r), bytesOf(&r)
		if it.kind < kindReasoning || it.kind > kindFunction {
			return errState
		}
		s.items = append(s.items, it)
	}
	if r.Err() != nil || len(r.B) != 0 || flags&^(flagStarted|flagDone|flagUsage) != 0 || s.seq > 1<<40 {
		return errState
	}
	s.started, s.done = flags&flagStarted != 0, flags&flagDone != 0
	return nil
}

// bytesOf reads a length-prefixed string as a view of the blob.
func bytesOf(r *sdk.StateReader) string {
	n := r.Uint()
	if r.Err() != nil || n > uint64(len(r.B)) {
		r.B = nil
		r.Uint() // records the error
		return ""
	}
	s := view(r.B[:n])
	r.B = r.B[n:]
	return s
}

// encode writes s into w's reused buffer and returns it.
func (s *streamState) encode(w *sdk.StateWriter) []byte {
	w.B = append(w.B[:0], stateVersion)
	w.Uint(s.seq)
	var flags uint64
	if s.started {
		flags |= flagStarted
	}
	if s.done {
		flags |= flagDone
	}
	if s.usage != nil {
		flags |= flagUsage
	}
	w.Uint(flags)
	w.String(string(s.finish))
	w.String(s.model)
	w.String(s.created)
	if u := s.usage; u != nil {
		for _, v := range [...]int{u.PromptTokens, u.CompletionTokens, u.TotalTokens, u.ReasoningTokens, u.CachedTokens} {
			w.Int(int64(v))
		}
	}
	w.Uint(uint64(len(s.items)))
	for i := range s.items {
		it := &s.items[i]
		k := uint64(it.kind) << 1
		if it.open {
			k |= 1
		}
		w.Uint(k)
		w.Int(int64(it.tool))
		w.String(it.callID)
		w.String(it.name)
		w.Uint(uint64(len(it.text) + len(it.more)))
		w.B = append(append(w.B, it.text...), it.more...)
	}
	return w.B
}
