package openai

import "github.com/mindrouter/mindrouter/sdk"

// stateVersion is the first byte of the stream state blob and the
// manifest's StateVersion.
const stateVersion = 1

// streamState is what EncodeStream remembers between calls of one stream.
// Indexes outside 0..63 are not tracked: a choice past 63 (n > 64) writes
// its role when the backend's delta carries one, and no model makes 64 tool
// calls in one turn.
type streamState struct {
	roles uint64 // bit i: choice i has sent "role"
	tools uint64 // bit i: tool call i has sent its id and type
	named uint64 // bit i: tool call i has sent a non-empty name
	done  bool   // "data: [DONE]" was written
}

const flagDone = 1

var errState = sdk.BadInput("openai: corrupt stream state")

// decode reads a blob written by encode; an empty blob is the initial state.
func (s *streamState) decode(b []byte) error {
	*s = streamState{}
	if len(b) == 0 {
		return nil
	}
	if b[0] != stateVersion {
		return errState
	}
	r := sdk.StateReader{B: b[1:]}
	s.roles, s.tools, s.named = r.Uint(), r.Uint(), r.Uint()
	flags := r.Uint()
	if r.Err() != nil || len(r.B) != 0 || flags&^flagDone != 0 {
		*s = streamState{}
		return errState
	}
	s.done = flags&flagDone != 0
	return nil
}

// encode writes s into w's reused buffer and returns it.
func (s *streamState) encode(w *sdk.StateWriter) []byte {
	w.B = append(w.B[:0], stateVersion)
	w.Uint(s.roles)
	w.Uint(s.tools)
	w.Uint(s.named)
	var flags uint64
	if s.done {
		flags |= flagDone
	}
	w.Uint(flags)
	return w.B
}
