package ollamaapi

import "github.com/mindrouter/mindrouter/sdk"

// stateVersion is the first byte of the stream state blob and the
// manifest's StateVersion.
const stateVersion = 1

// streamState is what EncodeStream remembers between calls of one stream:
// the finish reason and usage seen so far (they go out on the final
// done:true line, written by the last call), and the tool call being
// assembled. Ollama sends each tool call whole, so argument fragments are
// kept here until the call is complete: when another call starts, text
// follows, the choice finishes or the stream ends. Only one call is held
// at a time, so the blob stays small (a call's arguments must fit the
// host's state_max_kb).
type streamState struct {
	done     bool // the done:true line was written
	finish   string
	hasUsage bool
	prompt   uint64
	eval     uint64
	calls    uint64 // complete calls written so far: the next call's index
	pending  bool   // a call is being assembled
	pIndex   int64  // its canonical index
	pID      string
	pName    string
	pArgs    string
}

const (
	flagDone = 1 << iota
	flagUsage
	flagPending
	flagsAll = flagDone | flagUsage | flagPending
)

var errState = sdk.BadInput("ollama-api: corrupt stream state")

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
	flags := r.Uint()
	s.finish = r.String()
	s.prompt, s.eval, s.calls = r.Uint(), r.Uint(), r.Uint()
	if flags&flagPending != 0 {
		s.pIndex = r.Int()
		s.pID, s.pName, s.pArgs = r.String(), r.String(), r.String()
	}
	if r.Err() != nil || len(r.B) != 0 || flags&^flagsAll != 0 {
		*s = streamState{}
		return errState
	}
	s.done, s.hasUsage, s.pending = flags&flagDone != 0, flags&flagUsage != 0, flags&flagPending != 0
	return nil
}

// encode writes s into w's reused buffer and returns it.
func (s *streamState) encode(w *sdk.StateWriter) []byte {
	w.B = append(w.B[:0], stateVersion)
	var flags uint64
	if s.done {
		flags |= flagDone
	}
	if s.hasUsage {
		flags |= flagUsage
	}
	if s.pending {
		flags |= flagPending
	}
	w.Uint(flags)
	w.String(s.finish)
	w.Uint(s.prompt)
	w.Uint(s.eval)
	w.Uint(s.calls)
	if s.pending {
		w.Int(s.pIndex)
		w.String(s.pID)
		w.String(s.pName)
		w.String(s.pArgs)
	}
	return w.B
}
