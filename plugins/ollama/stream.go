package ollama

import (
	"bytes"
	"strings"
	"unsafe"

	"github.com/mindrouter/mindrouter/plugins/internal/thinktag"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/valyala/fastjson"
)

// streamState is what a stream remembers between DecodeStream calls. It
// travels in the host-owned state blob as uvarints: stateVersion, flags
// (flagRole, flagDone), tool calls emitted, and since version 2 the
// content's <think> splitter: mode, started, pending text.
type streamState struct {
	roleSent bool // the assistant role went out on a chunk
	done     bool // the done:true line was decoded
	tools    int  // tool calls emitted so far: the next call's index
	think    thinktag.State
}

const (
	flagRole = 1 << iota
	flagDone
	flagsAll = flagRole | flagDone

	maxTools = 1 << 20 // a sanity bound for corrupt blobs
)

// errState is returned for a state blob this version did not write.
var errState = sdk.BadInput("ollama: corrupt stream state")

func (s *streamState) load(b []byte) error {
	*s = streamState{}
	if len(b) == 0 {
		return nil
	}
	r := sdk.StateReader{B: b}
	ver, flags, tools := r.Uint(), r.Uint(), r.Uint()
	if ver == stateVersion {
		mode := r.Uint()
		s.think.Started = r.Bool()
		s.think.Pending = r.String()
		if mode > uint64(thinktag.Plain) || len(s.think.Pending) > thinktag.MaxLead+len("</think>") {
			*s = streamState{}
			return errState
		}
		s.think.Mode = thinktag.Mode(mode)
	}
	if r.Err() != nil || len(r.B) != 0 || (ver != 1 && ver != stateVersion) || flags&^flagsAll != 0 || tools > maxTools {
		*s = streamState{}
		return errState
	}
	s.roleSent, s.done, s.tools = flags&flagRole != 0, flags&flagDone != 0, int(tools)
	return nil
}

func (s *streamState) append(b []byte) []byte {
	var flags uint64
	if s.roleSent {
		flags |= flagRole
	}
	if s.done {
		flags |= flagDone
	}
	w := sdk.StateWriter{B: b}
	w.Uint(stateVersion)
	w.Uint(flags)
	w.Uint(uint64(s.tools))
	w.Uint(uint64(s.think.Mode))
	w.Bool(s.think.Started)
	w.String(s.think.Pending)
	return w.B
}

// DecodeStream turns /api/chat NDJSON lines into canonical chunks: one chunk
// per line that carries thinking, content or tool calls (the first with the
// assistant role), and for the done:true line a finish chunk and a
// usage-only chunk. Lines after done:true are ignored. An {"error":...}
// line fails the call.
func (a *Adapter) DecodeStream(c *sdk.Call, st *sdk.State, events [][]byte, chunks *[]canon.ChatChunk) error {
	var s streamState
	if err := s.load(st.In); err != nil {
		return err
	}
	before := s
	for _, ev := range events {
		if s.done {
			break
		}
		line := bytes.TrimSpace(ev)
		if len(line) == 0 {
			continue
		}
		if err := a.decodeLine(&s, line, chunks); err != nil {
			return err
		}
	}
	if s.done {
		c.Done()
	}
	if s != before {
		a.state = s.append(a.state[:0])
		st.Set(a.state)
	}
	return nil
}

func (a *Adapter) decodeLine(s *streamState, line []byte, chunks *[]canon.ChatChunk) error {
	v, err := a.parseObject(line, "stream line")
	if err != nil {
		return err
	}
	if e := v.Get("error"); e != nil && e.Type() != fastjson.TypeNull {
		return sdk.BadInput("backend stream error: " + errorText(e))
	}
	model := string(v.GetStringBytes("model"))
	created := parseCreated(v.GetStringBytes("created_at"))
	var d canon.Delta
	if text, ok := generateText(v); ok { // a raw /api/generate line: no <think> split
		d.Content = text
	}
	if msg := v.Get("message"); msg != nil && msg.Type() != fastjson.TypeNull {
		if msg.Type() != fastjson.TypeObject {
			return sdk.BadInput("ollama stream line: message is not an object")
		}
		// Content goes through the <think> splitter (think unset: some
		// models write their thinking in content), flushed at done.
		a.rbuf = append(a.rbuf[:0], msg.GetStringBytes("thinking")...)
		// The content is read in place; held-back bytes are copied below,
		// as the parser's memory is reused by the next line.
		content := msg.GetStringBytes("content")
		a.rbuf, a.cbuf = s.think.Feed(unsafe.String(unsafe.SliceData(content), len(content)), a.rbuf, a.cbuf[:0])
		if v.GetBool("done") {
			a.rbuf, a.cbuf = s.think.Flush(a.rbuf, a.cbuf)
		}
		if s.think.Pending != "" {
			s.think.Pending = strings.Clone(s.think.Pending)
		}
		d.Reasoning, d.Content = string(a.rbuf), string(a.cbuf)
		calls, err := toolCalls(msg)
		if err != nil {
			return err
		}
		if len(calls) > 0 {
			d.ToolCalls = make([]canon.ToolCallDelta, len(calls))
			for i, tc := range calls {
				t := &d.ToolCalls[i]
				t.Index = s.tools + i
				t.ID, t.Name, t.Arguments, err = a.toolCall(tc, t.Index)
				if err != nil {
					return err
				}
			}
			s.tools += len(calls)
		}
	} else if v.GetBool("done") && s.think.Pending != "" {
		// A done line without a message still ends the content.
		a.rbuf, a.cbuf = s.think.Flush(a.rbuf[:0], a.cbuf[:0])
		d.Reasoning, d.Content = string(a.rbuf), string(a.cbuf)
	}
	lp := logprobs(v.Get("logprobs"))
	if d.Reasoning != "" || d.Content != "" || len(d.ToolCalls) > 0 || lp != nil {
		d.Role = s.role()
		*chunks = append(*chunks, canon.ChatChunk{Model: model, Created: created,
			Choices: []canon.ChunkChoice{{Delta: d, Logprobs: lp}}})
	}
	if !v.GetBool("done") {
		return nil
	}
	fin := canon.ChunkChoice{FinishReason: finishReason(s.tools > 0, v.GetStringBytes("done_reason"))}
	fin.Delta.Role = s.role()
	*chunks = append(*chunks,
		canon.ChatChunk{Model: model, Created: created, Choices: []canon.ChunkChoice{fin}},
		canon.ChatChunk{Model: model, Created: created, Usage: usage(v)})
	s.done = true
	return nil
}

// role returns the assistant role for the stream's first chunk, "" after.
func (s *streamState) role() canon.Role {
	if s.roleSent {
		return ""
	}
	s.roleSent = true
	return canon.RoleAssistant
}

// PatchState is the stream state blob of a stream that has sent the
// assistant role and seen no tool call, with its content started plain (not
// with <think>, plain) or not started, and the done line decoded or not:
// the states the bundle's openai×ollama patch writes and passes through.
func PatchState(plain, done bool) []byte {
	s := streamState{roleSent: true, done: done}
	if plain {
		s.think.Mode = thinktag.Plain
	}
	return s.append(nil)
}
