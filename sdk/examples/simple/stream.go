package simple

import (
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// stateVersion starts every state blob, so a newer plugin can tell an
// older blob from its own (the manifest reports it too).
const stateVersion = 1

// streamState is what the final line needs from earlier calls: the finish
// reason and the usage, which arrive in different chunks.
type streamState struct {
	finish canon.FinishReason
	usage  *canon.Usage
}

// EncodeStream writes one {"delta"} line per chunk with text and, on the
// last call, the {"done":true} line. Any call of the stream may run on
// any instance, so what the last line needs travels in st.
func (t *Translator) EncodeStream(c *sdk.Call, st *sdk.State, chunks []canon.ChatChunk, out *sdk.Output) error {
	s, err := loadState(st.In)
	if err != nil {
		return err
	}
	changed := false
	for i := range chunks {
		ch := &chunks[i]
		if ch.Usage != nil {
			s.usage, changed = ch.Usage, true
		}
		for j := range ch.Choices {
			cc := &ch.Choices[j]
			if cc.Index != 0 { // the dialect has one choice
				continue
			}
			if cc.Delta.Content != "" {
				out.Body = append(out.Body, `{"delta":`...)
				out.Body = append(jsonw.String(out.Body, cc.Delta.Content), "}\n"...)
			}
			if cc.FinishReason != "" {
				s.finish, changed = cc.FinishReason, true
			}
		}
	}
	if c.End() {
		out.Body = append(appendEnd(append(out.Body, `{"done":true`...), s.finish, s.usage), "}\n"...)
	} else if changed {
		st.Set(s.save())
	}
	return nil
}

func loadState(b []byte) (streamState, error) {
	var s streamState
	if len(b) == 0 {
		return s, nil // the stream's first call
	}
	r := sdk.StateReader{B: b}
	if r.Uint() != stateVersion {
		return s, sdk.BadInput("stream state of another version")
	}
	s.finish = canon.FinishReason(r.String())
	if r.Bool() {
		s.usage = &canon.Usage{PromptTokens: int(r.Uint()), CompletionTokens: int(r.Uint())}
	}
	if r.Err() != nil {
		return s, sdk.BadInput(r.Err().Error())
	}
	return s, nil
}

func (s *streamState) save() []byte {
	var w sdk.StateWriter
	w.Uint(stateVersion)
	w.String(string(s.finish))
	w.Bool(s.usage != nil)
	if s.usage != nil {
		w.Uint(uint64(s.usage.PromptTokens))
		w.Uint(uint64(s.usage.CompletionTokens))
	}
	return w.B
}
