package vllm

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/mindrouter/mindrouter/plugins/internal/thinktag"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/valyala/fastjson"
)

// stateVersion is the first byte of the stream state blob (and the
// manifest's StateVersion). Version 1 held the tool calls only; 2 adds the
// choices' <think> splitters. Version 1 blobs are still read.
const stateVersion = 2

// maxChoices bounds the choices whose splitter a stream's state holds
// (OpenAI's n is at most 128); past it, content is passed through.
const maxChoices = 256

// thinkSeen is one choice's <think> splitter (plugins/internal/thinktag).
type thinkSeen struct {
	choice uint32
	st     thinktag.State
}

// maxTracked bounds the tool calls a stream's state remembers, so a hostile
// backend cannot grow the blob without limit. Past it, repeated ids and
// names are passed through rather than deduplicated.
const maxTracked = 512

// toolSeen records one streamed tool call: which choice and tool index, and
// whether its header (id, name) has been emitted.
type toolSeen struct {
	choice, tool uint32
	header       bool
}

// DecodeStream turns vLLM SSE data payloads into canonical chunks.
//
// Stream state: the tool calls seen so far, per choice. It lets the adapter
// emit each call's id and name once (some vLLM tool parsers repeat them on
// every delta, which clients would read as new calls) and report
// finish_reason tool_calls when vLLM says "stop" after streaming tool calls.
// And per choice, where its content is with respect to a <think> block
// (a reasoning model served without --reasoning-parser streams its
// thinking as content): content that opens with <think> is reasoning up to
// </think>, tags split between events at any byte; see thinktag for the
// rule, which splitThink applies to whole responses. A choice's state
// changes when its content starts and at the tags, not on every event.
func (a *Adapter) DecodeStream(c *sdk.Call, st *sdk.State, events [][]byte, chunks *[]canon.ChatChunk) error {
	in := st.In
	if c.First() {
		in = nil // a stream starts with no tool calls, whatever the host passed
	}
	if err := a.loadState(in); err != nil {
		return err
	}
	a.choices, a.deltas, a.text = a.choices[:0], a.deltas[:0], a.text[:0]
	changed := false
	for _, ev := range events {
		ev = bytes.TrimSpace(ev)
		if len(ev) == 0 {
			continue
		}
		if string(ev) == "[DONE]" {
			c.Done()
			break
		}
		v, err := a.p.ParseBytes(ev)
		if err != nil {
			return sdk.BadInput("backend stream: invalid JSON event: " + err.Error())
		}
		if v.Type() != fastjson.TypeObject {
			return sdk.BadInput("backend stream: event is not a JSON object")
		}
		if msg, ok := errorPayload(v); ok {
			return sdk.BadInput("backend stream error: " + msg)
		}
		var ch canon.ChatChunk
		if arr := v.GetArray("choices"); len(arr) > 0 {
			start := len(a.choices)
			for i, cv := range arr {
				cc, keep, ch2 := a.chunkChoice(cv, i)
				changed = changed || ch2
				if keep {
					a.choices = append(a.choices, cc)
				}
			}
			if n := len(a.choices); n > start {
				ch.Choices = a.choices[start:n:n]
			}
		}
		ch.Usage = usageOf(v.Get("usage"))
		if len(ch.Choices) == 0 && ch.Usage == nil {
			continue // an empty delta: nothing to tell the client
		}
		ch.ID = a.cachedID(v.GetStringBytes("id"))
		ch.Model = a.cachedModel(v.GetStringBytes("model"))
		ch.Created = int64Of(v.Get("created"))
		*chunks = append(*chunks, ch)
	}
	if changed {
		a.saveState(st)
	}
	return nil
}

// chunkChoice converts one streamed choice. keep is false for a choice that
// carries nothing; changed reports a state update.
func (a *Adapter) chunkChoice(cv *fastjson.Value, pos int) (cc canon.ChunkChoice, keep, changed bool) {
	if cv == nil || cv.Type() != fastjson.TypeObject {
		return cc, false, false
	}
	cc.Index = pos
	if iv := cv.Get("index"); iv != nil && iv.Type() == fastjson.TypeNumber {
		cc.Index = count(iv)
	}
	fr := cv.GetStringBytes("finish_reason")
	d := cv.Get("delta")
	if d == nil { // a text_completion chunk: its text as it is, no <think> split
		cc.Delta.Content = a.str(cv.GetStringBytes("text"))
	}
	if d != nil && d.Type() == fastjson.TypeObject {
		if len(d.GetStringBytes("role")) > 0 {
			cc.Delta.Role = canon.RoleAssistant
		}
		var thinkChanged bool
		cc.Delta.Reasoning, cc.Delta.Content, thinkChanged = a.splitContent(uint32(cc.Index), reasoningBytes(d), d.GetStringBytes("content"), len(fr) > 0)
		changed = changed || thinkChanged
		if tcs := d.GetArray("tool_calls"); len(tcs) > 0 {
			start := len(a.deltas)
			for j, tv := range tcs {
				if tv == nil || tv.Type() != fastjson.TypeObject {
					continue
				}
				td := canon.ToolCallDelta{Index: j}
				if iv := tv.Get("index"); iv != nil && iv.Type() == fastjson.TypeNumber {
					td.Index = count(iv)
				}
				f := tv.Get("function")
				td.ID = a.str(strBytes(tv.Get("id")))
				td.Name = a.str(strBytes(f.Get("name")))
				td.Arguments = a.arguments(f.Get("arguments"))
				k := a.track(uint32(cc.Index), uint32(td.Index))
				if k < 0 {
					if len(a.calls) < maxTracked {
						a.calls = append(a.calls, toolSeen{choice: uint32(cc.Index), tool: uint32(td.Index)})
						k = len(a.calls) - 1
						changed = true
					}
				}
				if k >= 0 {
					if a.calls[k].header {
						td.ID, td.Name = "", ""
					} else if td.ID != "" || td.Name != "" {
						a.calls[k].header = true
						changed = true
					}
				}
				if td.ID == "" && td.Name == "" && td.Arguments == "" {
					continue
				}
				a.deltas = append(a.deltas, td)
			}
			if n := len(a.deltas); n > start {
				cc.Delta.ToolCalls = a.deltas[start:n:n]
			}
		}
	}
	if len(fr) > 0 {
		cc.FinishReason = finishReason(fr, a.track(uint32(cc.Index), ^uint32(0)) >= 0)
	}
	if lp := cv.Get("logprobs"); lp != nil && lp.Type() == fastjson.TypeObject {
		cc.Logprobs = logprobs(nil, lp) // rare (clients ask for them): allocated
	}
	keep = cc.Delta.Role != "" || cc.Delta.Content != "" || cc.Delta.Reasoning != "" ||
		len(cc.Delta.ToolCalls) > 0 || cc.FinishReason != canon.FinishNone || len(cc.Logprobs) > 0
	return cc, keep, changed
}

// splitContent returns a delta's reasoning and content: the backend's
// reasoning field, then what the choice's <think> splitter makes of its
// content (flushed when the choice finishes). changed reports a state
// update.
func (a *Adapter) splitContent(choice uint32, reasoning, content []byte, finish bool) (r, c string, changed bool) {
	k := a.think(choice)
	if k < 0 {
		if len(content) == 0 || len(a.thinks) >= maxChoices {
			return a.str(reasoning), a.str(content), false
		}
		a.thinks = append(a.thinks, thinkSeen{choice: choice})
		k = len(a.thinks) - 1
	}
	st := &a.thinks[k].st
	if st.Mode == thinktag.Plain { // the common case: content as it came
		return a.str(reasoning), a.str(content), false
	}
	before := *st
	a.rbuf = append(a.rbuf[:0], reasoning...)
	a.rbuf, a.cbuf = st.Feed(a.str(content), a.rbuf, a.cbuf[:0])
	if finish {
		a.rbuf, a.cbuf = st.Flush(a.rbuf, a.cbuf)
	}
	if *st != before && st.Pending != "" {
		st.Pending = strings.Clone(st.Pending) // it may alias a.text
	}
	return a.str(a.rbuf), a.str(a.cbuf), *st != before
}

// think returns the position of choice's splitter in the state, or -1.
func (a *Adapter) think(choice uint32) int {
	for i := range a.thinks {
		if a.thinks[i].choice == choice {
			return i
		}
	}
	return -1
}

// track returns the position of (choice, tool) in the state, or -1. tool
// ^0 matches any tool of the choice.
func (a *Adapter) track(choice, tool uint32) int {
	for i := range a.calls {
		if a.calls[i].choice == choice && (tool == ^uint32(0) || a.calls[i].tool == tool) {
			return i
		}
	}
	return -1
}

func (a *Adapter) loadState(in []byte) error {
	a.calls, a.thinks = a.calls[:0], a.thinks[:0]
	if len(in) == 0 {
		return nil
	}
	r := sdk.StateReader{B: in}
	v := r.Uint()
	if v != 1 && v != stateVersion {
		return errState("unsupported version " + strconv.FormatUint(v, 10))
	}
	n := r.Uint()
	if n > maxTracked {
		return errState("too many tool calls")
	}
	for i := uint64(0); i < n && r.Err() == nil; i++ {
		choice, tool := r.Uint(), r.Uint()
		header := r.Bool()
		a.calls = append(a.calls, toolSeen{choice: uint32(choice), tool: uint32(tool), header: header})
	}
	if v >= 2 && r.Err() == nil {
		if err := a.loadThinks(&r); err != nil {
			a.calls = a.calls[:0]
			return err
		}
	}
	if r.Err() != nil || len(r.B) != 0 {
		a.calls, a.thinks = a.calls[:0], a.thinks[:0]
		return errState("truncated or trailing bytes")
	}
	return nil
}

// loadThinks reads the splitters: a count, then per choice its index, mode,
// started flag and pending text.
func (a *Adapter) loadThinks(r *sdk.StateReader) error {
	n := r.Uint()
	if n > maxChoices {
		return errState("too many choices")
	}
	for i := uint64(0); i < n && r.Err() == nil; i++ {
		choice, mode := r.Uint(), r.Uint()
		started := r.Bool()
		pending := r.String()
		if mode > uint64(thinktag.Plain) || len(pending) > thinktag.MaxLead+len("</think>") {
			a.thinks = a.thinks[:0]
			return errState("bad <think> state")
		}
		a.thinks = append(a.thinks, thinkSeen{choice: uint32(choice),
			st: thinktag.State{Mode: thinktag.Mode(mode), Started: started, Pending: pending}})
	}
	return nil
}

func (a *Adapter) saveState(st *sdk.State) { st.Set(a.writeState()) }

// writeState writes the state blob into a.sw and returns it.
func (a *Adapter) writeState() []byte {
	a.sw.B = a.sw.B[:0]
	a.sw.Uint(stateVersion)
	a.sw.Uint(uint64(len(a.calls)))
	for _, t := range a.calls {
		a.sw.Uint(uint64(t.choice))
		a.sw.Uint(uint64(t.tool))
		a.sw.Bool(t.header)
	}
	a.sw.Uint(uint64(len(a.thinks)))
	for i := range a.thinks {
		t := &a.thinks[i]
		a.sw.Uint(uint64(t.choice))
		a.sw.Uint(uint64(t.st.Mode))
		a.sw.Bool(t.st.Started)
		a.sw.String(t.st.Pending)
	}
	return a.sw.B
}

// PlainState is the stream state blob of a stream whose only choice (0)
// is in plain content and which has seen no tool call: what the bundle's
// same-dialect patch passes through.
func PlainState() []byte {
	a := Adapter{thinks: []thinkSeen{{st: thinktag.State{Mode: thinktag.Plain}}}}
	return a.writeState()
}

type stateError string

func (e stateError) Error() string { return "vllm: corrupt stream state: " + string(e) }

func errState(s string) error { return stateError(s) }

// cachedID returns b as a string, reusing the previous chunk's string when
// equal (every chunk of a vLLM stream repeats the same id and model). The
// cache only saves allocations: it never changes what is decoded.
func (a *Adapter) cachedID(b []byte) string {
	if string(b) != a.lastID {
		a.lastID = string(b)
	}
	return a.lastID
}

func (a *Adapter) cachedModel(b []byte) string {
	if string(b) != a.lastModel {
		a.lastModel = string(b)
	}
	return a.lastModel
}
