package anthropic

import (
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"

	"github.com/mindrouter/mindrouter/plugins/internal/jsonread"
)

// EncodeStream writes the Messages API's server-sent events
// (https://docs.claude.com/en/docs/build-with-claude/streaming), each
// framed "event: <type>\ndata: <json>\n\n":
//
//   - message_start (the message with empty content and zero usage: the
//     backend reports the prompt's token count only at the end), then ping;
//   - per content block, content_block_start, its deltas (thinking_delta,
//     text_delta, input_json_delta) and content_block_stop; a block closes
//     when the kind of delta changes (thinking, text, another tool call);
//   - on the last call: message_delta with stop_reason, stop_sequence and
//     the real usage (input and output tokens, which the SDKs' accumulators
//     take over message_start's), then message_stop.
//
// Usage is always sent (Anthropic always reports it), whatever the
// include_usage meta says. Only choice 0 is encoded: the Messages API has
// one.
func (t *Translator) EncodeStream(c *sdk.Call, st *sdk.State, chunks []canon.ChatChunk, out *sdk.Output) error {
	var s streamState
	if err := s.decode(st.In); err != nil {
		return err
	}
	prev := s
	if !s.done {
		b := out.Body
		if !s.started {
			var id, model string
			if len(chunks) > 0 {
				id, model = chunks[0].ID, chunks[0].Model
			}
			b = appendMessageStart(b, c, id, model)
			s.started = true
		}
		for i := range chunks {
			b = t.encodeChunk(b, c, &s, &chunks[i])
		}
		if c.End() {
			b = closeBlock(b, &s)
			b = appendMessageDelta(b, &s)
			b = append(b, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"...)
			s.done = true
		}
		out.Body = b
	}
	if s != prev {
		st.Set(s.encode(&t.st))
	}
	return nil
}

// event starts an SSE event of type name, up to the data's JSON.
func event(b []byte, name string) []byte {
	b = append(b, "event: "...)
	b = append(b, name...)
	b = append(b, "\ndata: "...)
	return b
}

func appendMessageStart(b []byte, c *sdk.Call, id, model string) []byte {
	b = append(event(b, "message_start"), `{"type":"message_start","message":{"id":`...)
	b = appendMessageID(b, c, id)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = appendModel(b, c, model)
	b = append(b, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":`...)
	b = appendUsage(b, &canon.Usage{})
	b = append(b, "}}\n\n"...)
	return append(b, "event: ping\ndata: {\"type\":\"ping\"}\n\n"...)
}

func (t *Translator) encodeChunk(b []byte, c *sdk.Call, s *streamState, ch *canon.ChatChunk) []byte {
	for i := range ch.Choices {
		cc := &ch.Choices[i]
		if cc.Index != 0 {
			continue
		}
		d := &cc.Delta
		if d.Reasoning != "" {
			b = openBlock(b, s, blockThinking)
			b = appendDelta(b, s, "thinking_delta", "thinking", d.Reasoning)
		}
		if d.Content != "" {
			b = openBlock(b, s, blockText)
			b = appendDelta(b, s, "text_delta", "text", d.Content)
		}
		for j := range d.ToolCalls {
			b = toolDelta(b, c, s, ch.ID, &d.ToolCalls[j])
		}
		if cc.FinishReason != canon.FinishNone {
			s.finish = finishCode(cc.FinishReason)
		}
	}
	if u := ch.Usage; u != nil {
		s.usage = true
		s.prompt, s.output, s.cached = count(u.PromptTokens), count(u.CompletionTokens), count(u.CachedTokens)
	}
	return b
}

func count(n int) uint64 {
	if n < 0 {
		return 0
	}
	return uint64(min(n, jsonread.MaxInt32))
}

// openBlock makes a thinking or text block the open one, closing another
// kind of block first.
func openBlock(b []byte, s *streamState, kind uint64) []byte {
	if s.kind == kind {
		return b
	}
	b = closeBlock(b, s)
	b = blockStart(b, s)
	if kind == blockThinking {
		// The signature stays empty: open-weights models sign nothing,
		// and this translator ignores signatures sent back.
		b = append(b, `{"type":"thinking","thinking":"","signature":""}}`...)
	} else {
		b = append(b, `{"type":"text","text":""}}`...)
	}
	s.kind = kind
	return append(b, "\n\n"...)
}

// blockStart writes a content_block_start event up to its content_block
// value and counts the new block.
func blockStart(b []byte, s *streamState) []byte {
	b = append(event(b, "content_block_start"), `{"type":"content_block_start","index":`...)
	b = jsonw.Uint(b, s.blocks)
	s.blocks++
	return append(b, `,"content_block":`...)
}

// closeBlock writes content_block_stop for the open block, if any.
func closeBlock(b []byte, s *streamState) []byte {
	if s.kind == blockNone {
		return b
	}
	b = append(event(b, "content_block_stop"), `{"type":"content_block_stop","index":`...)
	b = jsonw.Uint(b, s.blocks-1)
	s.kind = blockNone
	return append(b, "}\n\n"...)
}

// appendDelta writes a content_block_delta of the open block.
func appendDelta(b []byte, s *streamState, typ, field, text string) []byte {
	b = append(event(b, "content_block_delta"), `{"type":"content_block_delta","index":`...)
	b = jsonw.Uint(b, s.blocks-1)
	b = append(b, `,"delta":{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","`...)
	b = append(b, field...)
	b = append(b, `":`...)
	b = jsonw.String(b, text)
	return append(b, "}}\n\n"...)
}

// toolDelta writes a piece of a streamed tool call. A call's first piece
// (a tool call index not seen yet) opens its tool_use block with the id
// and name; later pieces are input_json_delta fragments. Backends stream
// calls one after another; a fragment for a call whose block was already
// closed cannot be placed (Anthropic blocks do not reopen) and is dropped
// with a warning in the plugin log.
func toolDelta(b []byte, c *sdk.Call, s *streamState, chunkID string, tc *canon.ToolCallDelta) []byte {
	bit, tracked := bitOf(tc.Index)
	current := s.kind == blockTool && s.tool == uint64(tc.Index) && tc.Index >= 0
	if !current {
		if tracked && s.seen&bit != 0 || !tracked && tc.ID == "" && tc.Name == "" {
			if tc.Arguments != "" {
				c.Log(4, "anthropic: dropped arguments of a tool call whose block is closed")
			}
			return b
		}
		b = closeBlock(b, s)
		b = blockStart(b, s)
		b = append(b, `{"type":"tool_use","id":`...)
		b = appendToolID(b, c, chunkID, tc.ID, tc.Index)
		b = append(b, `,"name":`...)
		b = jsonw.String(b, tc.Name)
		b = append(b, `,"input":{}}}`+"\n\n"...)
		s.kind, s.tool, s.tools = blockTool, uint64(tc.Index), true
		if tracked {
			s.seen |= bit
		}
	}
	if tc.Arguments == "" {
		return b
	}
	b = append(event(b, "content_block_delta"), `{"type":"content_block_delta","index":`...)
	b = jsonw.Uint(b, s.blocks-1)
	b = append(b, `,"delta":{"type":"input_json_delta","partial_json":`...)
	b = jsonw.String(b, tc.Arguments)
	return append(b, "}}\n\n"...)
}

// appendMessageDelta writes message_delta: the stop reason and the usage
// the backend reported at the end of the stream.
func appendMessageDelta(b []byte, s *streamState) []byte {
	b = append(event(b, "message_delta"), `{"type":"message_delta","delta":{"stop_reason":`...)
	b = jsonw.String(b, stopReason(finishCodes[s.finish], s.tools))
	b = append(b, `,"stop_sequence":null},"usage":`...)
	u := canon.Usage{PromptTokens: int(s.prompt), CompletionTokens: int(s.output), CachedTokens: int(s.cached)}
	b = appendUsage(b, &u)
	return append(b, "}\n\n"...)
}

// bitOf maps an index in 0..63 to its bit in a state mask.
func bitOf(i int) (uint64, bool) {
	if i < 0 || i >= 64 {
		return 0, false
	}
	return 1 << uint(i), true
}
