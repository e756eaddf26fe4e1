package responses

import (
	"slices"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// EncodeStream writes the typed SSE events of the Responses API, each
// "event: <type>\ndata: {"type":"<type>","sequence_number":n,...}\n\n"
// with n counting from 0:
//
//   - response.created and response.in_progress open the stream;
//   - each output item (reasoning, message, function_call) is announced by
//     response.output_item.added, streams its deltas
//     (response.reasoning_text.delta inside a reasoning_text content part,
//     response.output_text.delta inside an output_text part,
//     response.function_call_arguments.delta) and is closed by its .done
//     events and response.output_item.done, each repeating the full text;
//   - an item closes when a delta of another kind begins (a function call
//     stays open beside other calls, whose deltas may interleave) and at
//     the end;
//   - the last call closes what is open and writes exactly one terminal
//     event: response.completed, or response.incomplete when the backend
//     stopped at the token limit or its content filter. (response.failed
//     ends a stream the backend broke: EncodeError.)
//
// Only choice 0 is read: the API has no n. No "data: [DONE]" follows, as
// in OpenAI's own streams.
func (t *Translator) EncodeStream(c *sdk.Call, st *sdk.State, chunks []canon.ChatChunk, out *sdk.Output) error {
	var s streamState
	if err := s.decode(st.In, t.items[:0]); err != nil {
		return err
	}
	if s.done {
		t.items = s.items[:0]
		return nil
	}
	e := emitter{t: t, s: &s, out: out}
	var id, model string
	var created int64
	if len(chunks) > 0 {
		id, model, created = chunks[0].ID, chunks[0].Model, chunks[0].Created
	}
	e.h.read(c, id, model, created)
	t.nbuf = 0
	if !s.started {
		s.model, s.created = e.h.model, e.h.created
		e.lifecycle("response.created", &outcome{status: statusInProgress})
		e.lifecycle("response.in_progress", &outcome{status: statusInProgress})
		s.started = true
	}
	changed := e.wrote
	for i := range chunks {
		ch := &chunks[i]
		if ch.Usage != nil {
			s.u, s.usage, changed = *ch.Usage, &s.u, true
		}
		for j := range ch.Choices {
			cc := &ch.Choices[j]
			if cc.Index != 0 {
				continue
			}
			d := &cc.Delta
			if d.Reasoning != "" {
				e.text(kindReasoning, d.Reasoning)
			}
			if d.Content != "" {
				e.text(kindMessage, d.Content)
			}
			for k := range d.ToolCalls {
				e.tool(&d.ToolCalls[k])
			}
			if cc.FinishReason != canon.FinishNone {
				s.finish, changed = cc.FinishReason, true
			}
		}
	}
	if c.End() {
		o := outcomeOf(s.finish)
		e.closeAll(-1, o.status == statusIncomplete)
		typ := "response.completed"
		if o.status == statusIncomplete {
			typ = "response.incomplete"
		}
		e.lifecycle(typ, &o)
		s.done = true
	}
	if changed || e.wrote {
		st.Set(s.encode(&t.st))
	}
	t.items = s.items[:0] // keep what append grew, or the next call allocates again
	return nil
}

// emitter writes one call's events and keeps the state in step.
type emitter struct {
	t     *Translator
	s     *streamState
	out   *sdk.Output
	h     ids
	wrote bool
}

// open begins an event: `{"type":"<typ>","sequence_number":n`, left open.
func (e *emitter) open(typ string) []byte {
	b := append(e.t.ev[:0], `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","sequence_number":`...)
	b = jsonw.Uint(b, e.s.seq)
	e.s.seq++
	return b
}

// emit closes the event b and appends it to the output, framed.
func (e *emitter) emit(typ string, b []byte) {
	b = append(b, '}')
	e.out.Body = sdk.AppendSSE(e.out.Body, typ, b)
	e.t.ev = b
	e.wrote = true
}

// itemRef writes `,"item_id":"…","output_index":n`.
func (e *emitter) itemRef(b []byte, n int) []byte {
	b = append(b, `,"item_id":`...)
	b = e.h.appendItemID(b, e.s.items[n].kind, n)
	b = append(b, `,"output_index":`...)
	return jsonw.Int(b, int64(n))
}

// lifecycle writes response.created, response.in_progress or a terminal
// event, carrying the whole response.
func (e *emitter) lifecycle(typ string, o *outcome) {
	b := append(e.open(typ), `,"response":`...)
	var items []item
	if o.status != statusInProgress {
		items = e.s.items
		for i := range items {
			e.flatten(&items[i])
		}
	}
	var u *canon.Usage
	if o.status != statusInProgress {
		u = e.s.usage
	}
	e.emit(typ, appendResponse(b, &e.h, o, items, u))
}

// text streams a reasoning or message delta into the last item, opening
// a new one (and closing the others) unless it is an open item of kind.
func (e *emitter) text(kind byte, delta string) {
	n := len(e.s.items) - 1
	if n < 0 || e.s.items[n].kind != kind || !e.s.items[n].open {
		n = e.add(item{kind: kind, open: true, buf: -1})
	}
	e.grow(n, delta)
	typ := "response.output_text.delta"
	if kind == kindReasoning {
		typ = "response.reasoning_text.delta"
	}
	b := e.itemRef(e.open(typ), n)
	b = append(b, `,"content_index":0,"delta":`...)
	b = jsonw.String(b, delta)
	if kind == kindMessage {
		b = append(b, `,"logprobs":[]`...)
	}
	e.emit(typ, b)
}

// tool streams a tool call delta into its function_call item, opening it
// on the call's first delta.
func (e *emitter) tool(tc *canon.ToolCallDelta) {
	n := -1
	for i := len(e.s.items) - 1; i >= 0; i-- {
		if it := &e.s.items[i]; it.kind == kindFunction && it.tool == tc.Index {
			n = i
			break
		}
	}
	if n < 0 {
		n = e.add(item{kind: kindFunction, open: true, tool: tc.Index, callID: tc.ID, name: tc.Name, buf: -1})
	} else if it := &e.s.items[n]; it.name == "" && tc.Name != "" {
		it.name = tc.Name // the name came after the call's first delta
	}
	if tc.Arguments == "" {
		return
	}
	e.grow(n, tc.Arguments)
	if !e.s.items[n].open {
		// A late fragment of a call already closed (a text delta came
		// between): the terminal event's response carries it; its .done
		// events are gone.
		return
	}
	b := e.itemRef(e.open("response.function_call_arguments.delta"), n)
	b = append(b, `,"delta":`...)
	b = jsonw.String(b, tc.Arguments)
	e.emit("response.function_call_arguments.delta", b)
}

// add closes the open items (all of them, or the ones that are not
// function calls when it is one) and announces it; it returns its index.
func (e *emitter) add(it item) int {
	keep := int16(-1)
	if it.kind == kindFunction {
		keep = int16(kindFunction)
	}
	e.closeAll(keep, false)
	n := len(e.s.items)
	e.s.items = append(e.s.items, it)
	b := append(e.open("response.output_item.added"), `,"output_index":`...)
	b = jsonw.Int(b, int64(n))
	b = append(b, `,"item":`...)
	b = appendItem(b, &e.h, &e.s.items[n], n, false, false)
	e.emit("response.output_item.added", b)
	if it.kind != kindFunction {
		e.part("response.content_part.added", n, "")
	}
	return n
}

// part writes a content part event of item n with its text so far.
func (e *emitter) part(typ string, n int, text string) {
	b := e.itemRef(e.open(typ), n)
	b = append(b, `,"content_index":0,"part":`...)
	if e.s.items[n].kind == kindReasoning {
		b = append(b, `{"type":"reasoning_text","text":`...)
		b = append(jsonw.String(b, text), '}')
	} else {
		b = appendTextPart(b, text)
	}
	e.emit(typ, b)
}

// grow appends delta to item n's text, in a scratch buffer of this call
// holding what the call added (more), so the text already in the state
// blob is not copied for it.
func (e *emitter) grow(n int, delta string) {
	t, it := e.t, &e.s.items[n]
	if it.buf < 0 {
		it.buf = t.nbuf
		t.nbuf++
		if it.buf == len(t.bufs) {
			t.bufs = append(t.bufs, nil)
		}
		t.bufs[it.buf] = t.bufs[it.buf][:0]
	}
	t.bufs[it.buf] = append(t.bufs[it.buf], delta...)
	if it.whole {
		it.text = view(t.bufs[it.buf])
	} else {
		it.more = view(t.bufs[it.buf])
	}
}

// flatten joins item n's text and what this call added, for the events
// that repeat the whole text (its .done events, the terminal event).
func (e *emitter) flatten(it *item) {
	if it.more == "" {
		return
	}
	b, nt := e.t.bufs[it.buf], len(it.text)
	b = slices.Grow(b, nt)[:len(b)+nt]
	copy(b[nt:], b[:len(b)-nt])
	copy(b, it.text)
	e.t.bufs[it.buf] = b
	it.text, it.more, it.whole = view(b), "", true
}

// closeAll closes every open item except those of kind keep (-1: none
// kept), writing their .done events and response.output_item.done; with
// cut, the last item is the one an incomplete response was cut off in.
func (e *emitter) closeAll(keep int16, cut bool) {
	for n := range e.s.items {
		it := &e.s.items[n]
		if !it.open || int16(it.kind) == keep {
			continue
		}
		it.open = false
		e.flatten(it)
		switch it.kind {
		case kindReasoning:
			b := e.itemRef(e.open("response.reasoning_text.done"), n)
			b = append(b, `,"content_index":0,"text":`...)
			e.emit("response.reasoning_text.done", jsonw.String(b, it.text))
			e.part("response.content_part.done", n, it.text)
		case kindMessage:
			b := e.itemRef(e.open("response.output_text.done"), n)
			b = append(b, `,"content_index":0,"text":`...)
			b = jsonw.String(b, it.text)
			e.emit("response.output_text.done", append(b, `,"logprobs":[]`...))
			e.part("response.content_part.done", n, it.text)
		default:
			b := e.itemRef(e.open("response.function_call_arguments.done"), n)
			b = appendName(b, &e.h, it.name)
			b = append(b, `,"arguments":`...)
			e.emit("response.function_call_arguments.done", jsonw.String(b, arguments(it.text)))
		}
		b := append(e.open("response.output_item.done"), `,"output_index":`...)
		b = jsonw.Int(b, int64(n))
		b = append(b, `,"item":`...)
		e.emit("response.output_item.done", appendItem(b, &e.h, it, n, true, cut && n == len(e.s.items)-1))
	}
}
