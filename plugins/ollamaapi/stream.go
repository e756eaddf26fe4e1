package ollamaapi

import (
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// EncodeStream writes Ollama's NDJSON stream for /api/chat or
// /api/generate (meta route says which):
//
//   - each chunk's text and thinking of choice 0 become one done:false line
//     (Ollama has one choice);
//   - tool calls go out whole, one line per call, with their arguments as an
//     object, once complete (see streamState);
//   - the last call (FlagEnd) writes the done:true line with done_reason and
//     the token counts of the stream's usage report, exactly once.
//
// Every line carries the gateway's model name and creation time, so a
// stream's bytes do not depend on how its chunks are split into calls.
func (t *Translator) EncodeStream(c *sdk.Call, st *sdk.State, chunks []canon.ChatChunk, out *sdk.Output) error {
	var s streamState
	if err := s.decode(st.In); err != nil {
		return err
	}
	if s.done {
		return nil
	}
	prev := s
	e := lineEncoder{t: t, c: c, s: &s, out: out, gen: isGenerate(c)}
	e.h.read(c)
	for i := range chunks {
		ch := &chunks[i]
		e.model, e.created = ch.Model, ch.Created
		if u := ch.Usage; u != nil {
			s.hasUsage = true
			s.prompt, s.eval = uint64(max(u.PromptTokens, 0)), uint64(max(u.CompletionTokens, 0))
		}
		for j := range ch.Choices {
			if cc := &ch.Choices[j]; cc.Index == 0 {
				e.choice(cc)
			}
		}
	}
	if c.End() {
		e.flush()
		b := e.open()
		if e.gen {
			b = append(b, `"response":""`...)
		} else {
			b = append(b, `"message":{"role":"assistant","content":""}`...)
		}
		var u *canon.Usage
		if s.hasUsage {
			u = &canon.Usage{PromptTokens: int(s.prompt), CompletionTokens: int(s.eval)}
		}
		e.line(appendDone(b, canon.FinishReason(s.finish), u))
		s = streamState{done: true}
	}
	if s != prev {
		st.Set(s.encode(&t.st))
	}
	return nil
}

// lineEncoder writes one call's lines.
type lineEncoder struct {
	t   *Translator
	c   *sdk.Call
	s   *streamState
	out *sdk.Output
	h   header
	gen bool
	// the current chunk's own model and created, for a call without the
	// gateway's meta
	model   string
	created int64
}

// open starts a line in the translator's scratch buffer.
func (e *lineEncoder) open() []byte { return e.h.appendOpen(e.t.buf[:0], e.model, e.created) }

// line appends a finished line to the output.
func (e *lineEncoder) line(b []byte) {
	e.out.Body = append(append(e.out.Body, b...), '\n')
	e.t.buf = b // keep what append grew
}

func (e *lineEncoder) choice(cc *canon.ChunkChoice) {
	d := &cc.Delta
	if d.Content != "" || d.Reasoning != "" {
		e.flush() // a call followed by text is complete
		b := e.open()
		if e.gen {
			b = jsonw.String(append(b, `"response":`...), d.Content)
		} else {
			b = jsonw.String(append(b, `"message":{"role":"assistant","content":`...), d.Content)
		}
		if d.Reasoning != "" {
			b = jsonw.String(append(b, `,"thinking":`...), d.Reasoning)
		}
		if !e.gen {
			b = append(b, '}')
		}
		e.line(append(b, `,"done":false}`...))
	}
	s := e.s
	for i := range d.ToolCalls {
		td := &d.ToolCalls[i]
		if s.pending && int64(td.Index) != s.pIndex {
			e.flush()
		}
		if !s.pending {
			s.pending, s.pIndex = true, int64(td.Index)
		}
		if s.pID == "" {
			s.pID = td.ID
		}
		if s.pName == "" {
			s.pName = td.Name
		}
		s.pArgs += td.Arguments
	}
	if cc.FinishReason != canon.FinishNone {
		e.flush()
		s.finish = string(cc.FinishReason)
	}
}

// flush writes the call being assembled, if any, as one line.
func (e *lineEncoder) flush() {
	s := e.s
	if !s.pending {
		return
	}
	b := e.open()
	if e.gen {
		b = append(b, `"response":""`...)
	} else {
		b = append(b, `"message":{"role":"assistant","content":""`...)
	}
	b = append(b, `,"tool_calls":[`...)
	b = e.t.appendCall(e.c, b, int(s.calls), s.pID, s.pName, s.pArgs)
	b = append(b, ']')
	if !e.gen {
		b = append(b, '}')
	}
	e.line(append(b, `,"done":false}`...))
	s.calls++
	s.pending, s.pIndex, s.pID, s.pName, s.pArgs = false, 0, "", "", ""
}
