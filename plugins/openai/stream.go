package openai

import (
	"github.com/mindrouter/mindrouter/sdk/abi"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// EncodeStream writes one SSE event per canonical chunk, as OpenAI streams
// them:
//
//   - every chunk carries the gateway's id, model and created;
//   - a choice's first delta carries "role":"assistant" (and "content":""
//     when it has no text, null when it opens tool calls), later ones never
//     repeat it: the SDKs' accumulators concatenate string fields;
//   - a tool call's id, "type":"function" and name go out once, on its first
//     delta (an id is made up when the backend gave none); later deltas
//     carry only argument fragments;
//   - a usage report becomes a chunk with "choices":[] and is written only
//     when the client asked for it (meta include_usage = "1");
//   - the last call writes "data: [DONE]" exactly once; nothing follows it.
func (t *Translator) EncodeStream(c *sdk.Call, st *sdk.State, chunks []canon.ChatChunk, out *sdk.Output) error {
	if completionRoute(c) {
		return t.encodeCompletionStream(c, chunks, out)
	}
	var s streamState
	if err := s.decode(st.In); err != nil {
		return err
	}
	prev := s
	if !s.done {
		var h header
		h.read(c, "", "", 0)
		if len(h.id) > 0 && len(h.model) > 0 && h.created != nil {
			// The gateway's values: every chunk's opening is the same,
			// so escape it once.
			t.hdr = h.append(t.hdr[:0], chunkObject)
			h.pre = t.hdr
		}
		inc, _ := c.MetaBytes(abi.MetaIncludeUsage)
		usage := string(inc) == "1"
		for i := range chunks {
			t.encodeChunk(&h, &s, &chunks[i], usage, out)
		}
		if c.End() {
			out.Body = sdk.AppendSSE(out.Body, "", doneEvent)
			s.done = true
		}
	}
	if s != prev {
		st.Set(s.encode(&t.st))
	}
	return nil
}

var doneEvent = []byte("[DONE]")

const chunkObject = "chat.completion.chunk"

func (t *Translator) encodeChunk(h *header, s *streamState, ch *canon.ChatChunk, usage bool, out *sdk.Output) {
	h.fallback(ch.ID, ch.Model, ch.Created)
	if len(ch.Choices) > 0 {
		b := append(h.append(t.buf[:0], chunkObject), `,"choices":[`...)
		start := len(b)
		for i := range ch.Choices {
			b = appendChunkChoice(b, h, s, &ch.Choices[i], len(b) > start)
		}
		if len(b) > start {
			b = append(b, "]}"...)
			out.Body = sdk.AppendSSE(out.Body, "", b)
		}
		t.buf = b // keep what append grew, or the next chunk allocates again
	}
	if ch.Usage != nil && usage {
		b := append(h.append(t.buf[:0], chunkObject), `,"choices":[],"usage":`...)
		b = append(appendUsage(b, ch.Usage), '}')
		out.Body = sdk.AppendSSE(out.Body, "", b)
		t.buf = b
	}
}

// appendChunkChoice writes one choice of a chunk, or nothing (b unchanged)
// when the choice adds nothing the client has not seen.
func appendChunkChoice(b []byte, h *header, s *streamState, cc *canon.ChunkChoice, comma bool) []byte {
	d := &cc.Delta
	first := d.Role != ""
	if bit, ok := bitOf(cc.Index); ok {
		first = s.roles&bit == 0
	}
	mark := len(b)
	if comma {
		b = append(b, ',')
	}
	b = append(b, `{"index":`...)
	b = jsonw.Int(b, int64(cc.Index))
	b = append(b, `,"delta":{`...)
	open := len(b)
	if first {
		b = append(b, `"role":"assistant"`...)
	}
	if d.Content != "" {
		b = jsonw.String(append(sep(b, open), `"content":`...), d.Content)
	} else if first {
		if len(d.ToolCalls) > 0 {
			b = append(b, `,"content":null`...)
		} else {
			b = append(b, `,"content":""`...)
		}
	}
	if d.Reasoning != "" {
		b = jsonw.String(append(sep(b, open), `"reasoning_content":`...), d.Reasoning)
	}
	if len(d.ToolCalls) > 0 {
		b = appendToolDeltas(b, open, h, s, d.ToolCalls)
	}
	if len(b) == open && cc.FinishReason == canon.FinishNone && len(cc.Logprobs) == 0 {
		return b[:mark] // nothing new: an empty delta, a repeated role
	}
	b = appendLogprobs(append(b, `},"logprobs":`...), cc.Logprobs)
	b = append(b, `,"finish_reason":`...)
	if cc.FinishReason == canon.FinishNone {
		b = append(b, "null"...)
	} else {
		b = jsonw.String(b, string(cc.FinishReason))
	}
	if first {
		if bit, ok := bitOf(cc.Index); ok {
			s.roles |= bit
		}
	}
	return append(b, '}')
}

// appendToolDeltas writes "tool_calls":[...] after the delta's other fields
// (open is where the delta object's fields start), skipping entries that
// carry nothing new.
func appendToolDeltas(b []byte, open int, h *header, s *streamState, tcs []canon.ToolCallDelta) []byte {
	mark := len(b)
	b = append(sep(b, open), `"tool_calls":[`...)
	start := len(b)
	for i := range tcs {
		tc := &tcs[i]
		// Tool calls with an index outside 0..63 are passed through as the
		// backend sent them.
		isNew, needName := tc.ID != "", tc.Name != ""
		bit, tracked := bitOf(tc.Index)
		if tracked {
			isNew = s.tools&bit == 0
			needName = s.named&bit == 0 && tc.Name != ""
		}
		if !isNew && !needName && tc.Arguments == "" {
			continue
		}
		if len(b) > start {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = jsonw.Int(b, int64(tc.Index))
		if isNew {
			b = append(b, `,"id":`...)
			if tc.ID != "" {
				b = jsonw.String(b, tc.ID)
			} else {
				b = h.appendCallID(b, tc.Index)
			}
			b = append(b, `,"type":"function"`...)
		}
		b = append(b, `,"function":{`...)
		if isNew || needName {
			b = jsonw.String(append(b, `"name":`...), tc.Name)
			b = append(b, ',')
		}
		b = jsonw.String(append(b, `"arguments":`...), tc.Arguments)
		b = append(b, "}}"...)
		if tracked {
			s.tools |= bit
			if tc.Name != "" {
				s.named |= bit
			}
		}
	}
	if len(b) == start {
		return b[:mark]
	}
	return append(b, ']')
}

// sep appends a comma unless b is at the start (open) of an object's fields.
func sep(b []byte, open int) []byte {
	if len(b) > open {
		return append(b, ',')
	}
	return b
}

// bitOf maps an index in 0..63 to its bit in a state mask.
func bitOf(i int) (uint64, bool) {
	if i < 0 || i >= 64 {
		return 0, false
	}
	return 1 << uint(i), true
}
