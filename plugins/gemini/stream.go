package gemini

import (
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// stateVersion is the first byte of a stream's state blob.
const stateVersion = 1

// streamState is what one stream call leaves the next: whether the JSON
// array has an element yet, and the function calls being streamed, whose
// arguments arrive in pieces while Gemini sends each call whole.
type streamState struct {
	wrote bool
	calls []pendingCall
}

type pendingCall struct {
	choice, index int
	id, name      string
	args          []byte
}

func (s *streamState) read(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if b[0] != stateVersion {
		return sdk.BadInput("stream state: unknown version")
	}
	r := sdk.StateReader{B: b[1:]}
	s.wrote = r.Bool()
	n := int(r.Uint())
	for i := 0; i < n && r.Err() == nil; i++ {
		s.calls = append(s.calls, pendingCall{choice: int(r.Uint()), index: int(r.Uint()), id: r.String(), name: r.String(), args: []byte(r.String())})
	}
	if r.Err() != nil {
		return sdk.BadInput("stream state: " + r.Err().Error())
	}
	return nil
}

func (s *streamState) write(dst []byte) []byte {
	w := sdk.StateWriter{B: append(dst[:0], stateVersion)}
	w.Bool(s.wrote)
	w.Uint(uint64(len(s.calls)))
	for _, c := range s.calls {
		w.Uint(uint64(c.choice))
		w.Uint(uint64(c.index))
		w.String(c.id)
		w.String(c.name)
		w.String(string(c.args))
	}
	return w.B
}

// EncodeStream writes one GenerateContentResponse per chunk that carries
// something: as SSE events on the alt=sse route, else as the elements of
// one JSON array ("[" on the first call, "]" on the last).
func (t *Translator) EncodeStream(c *sdk.Call, st *sdk.State, chunks []canon.ChatChunk, out *sdk.Output) error {
	var s streamState
	if err := s.read(st.In); err != nil {
		return err
	}
	sse := c.Meta(abi.MetaRoute) == routeStreamSSE
	b := out.Body[:0]
	if c.First() && !sse {
		b = append(b, '[')
	}
	changed := false
	for i := range chunks {
		var ev []byte
		ev, changed = t.chunkEvent(c, &s, &chunks[i], changed)
		if ev != nil {
			b = frame(b, ev, sse, &s)
			changed = true
		}
	}
	if c.End() {
		if ev := flushCalls(c, &s, -1); ev != nil {
			b = frame(b, ev, sse, &s)
		}
		if !sse {
			b = append(b, ']')
		}
	}
	if changed {
		t.buf = s.write(t.buf)
		st.Set(t.buf)
	}
	out.Body = b
	return nil
}

func frame(b, ev []byte, sse bool, s *streamState) []byte {
	switch {
	case sse:
		b = append(b, "data: "...)
		b = append(b, ev...)
		return append(b, "\r\n\r\n"...)
	case s.wrote:
		b = append(b, ",\r\n"...)
	}
	s.wrote = true
	return append(b, ev...)
}

// chunkEvent is one chunk's response, nil when it carries nothing for the
// client (a role-only delta, a piece of a function call's arguments).
func (t *Translator) chunkEvent(c *sdk.Call, s *streamState, ch *canon.ChatChunk, changed bool) ([]byte, bool) {
	var w jsonw.W
	w.Obj()
	w.Key("candidates")
	w.Arr()
	n := 0
	for i := range ch.Choices {
		cc := &ch.Choices[i]
		for _, d := range cc.Delta.ToolCalls {
			s.addCall(cc.Index, d)
			changed = true
		}
		if cc.Delta.Content == "" && cc.Delta.Reasoning == "" && cc.FinishReason == "" {
			continue
		}
		n++
		w.Obj()
		w.Key("content")
		w.Obj()
		w.Key("role")
		w.Str("model")
		w.Key("parts")
		w.Arr()
		if cc.Delta.Reasoning != "" {
			textPart(&w, cc.Delta.Reasoning, true)
		}
		if cc.Delta.Content != "" {
			textPart(&w, cc.Delta.Content, false)
		}
		calls := false
		if cc.FinishReason != "" {
			calls = s.writeCalls(&w, cc.Index)
		}
		w.EndArr()
		w.EndObj()
		if cc.FinishReason != "" {
			w.Key("finishReason")
			w.Str(finishReason(cc.FinishReason, calls))
		}
		w.Key("index")
		w.Int(int64(cc.Index))
		w.EndObj()
	}
	w.EndArr()
	if ch.Usage != nil {
		usage(&w, ch.Usage)
		n++
	}
	if n == 0 {
		return nil, changed
	}
	w.Key("modelVersion")
	w.Str(c.Meta(abi.MetaModel))
	w.Key("responseId")
	w.Str(c.Meta(abi.MetaID))
	w.EndObj()
	return w.B, changed
}

func (s *streamState) addCall(choice int, d canon.ToolCallDelta) {
	for i := range s.calls {
		if p := &s.calls[i]; p.choice == choice && p.index == d.Index {
			if d.ID != "" {
				p.id = d.ID
			}
			if d.Name != "" {
				p.name = d.Name
			}
			p.args = append(p.args, d.Arguments...)
			return
		}
	}
	s.calls = append(s.calls, pendingCall{choice: choice, index: d.Index, id: d.ID, name: d.Name, args: []byte(d.Arguments)})
}

// writeCalls writes and forgets choice's pending function calls.
func (s *streamState) writeCalls(w *jsonw.W, choice int) bool {
	kept, any := s.calls[:0], false
	for _, p := range s.calls {
		if p.choice != choice {
			kept = append(kept, p)
			continue
		}
		args := string(p.args)
		if args == "" {
			args = "{}"
		}
		callPart(w, p.id, p.name, args)
		any = true
	}
	s.calls = kept
	return any
}

// flushCalls writes the function calls of choices the backend never
// finished (a stream cut short), one candidate each.
func flushCalls(c *sdk.Call, s *streamState, _ int) []byte {
	if len(s.calls) == 0 {
		return nil
	}
	var w jsonw.W
	w.Obj()
	w.Key("candidates")
	w.Arr()
	for len(s.calls) > 0 {
		choice := s.calls[0].choice
		w.Obj()
		w.Key("content")
		w.Obj()
		w.Key("role")
		w.Str("model")
		w.Key("parts")
		w.Arr()
		s.writeCalls(&w, choice)
		w.EndArr()
		w.EndObj()
		w.Key("index")
		w.Int(int64(choice))
		w.EndObj()
	}
	w.EndArr()
	w.Key("modelVersion")
	w.Str(c.Meta(abi.MetaModel))
	w.EndObj()
	return w.B
}
