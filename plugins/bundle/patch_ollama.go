package bundle

import (
	"bytes"

	"github.com/mindrouter/mindrouter/plugins/ollama"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// openaiOllama is the patch (sdk.Patch) of the openai translator with the
// ollama adapter: an OpenAI chat request in, Ollama's /api/chat body out
// (patch_ollama_request.go), and Ollama's /api/chat response and NDJSON
// stream lines in, what openai's encoders write for what ollama's
// decoders read, out, each in one strict scan instead of a fastjson parse,
// canonical values and an encode.
//
// The rules are those of openaiVLLM: byte for byte what the two components
// give, and a decline (the full path runs) on anything the patch cannot be
// sure of: keys spelled with escapes or given twice, numbers in an unusual
// form, lone surrogates, missing gateway meta, and on Ollama's side tool
// calls, thinking text, logprobs, error lines, /api/generate's "response",
// a message that is not an object, and content that might open a <think>
// block (ollama's splitter would split it). What is not read is validated
// and dropped (model, created_at, role, images, durations), as the full
// path drops it: the client sees the gateway's id, model and created.
type openaiOllama struct {
	s    scanner
	tmp  []byte // unescape scratch
	hdr  []byte // a stream chunk's opening, the same for every chunk of a call
	pre  []byte // a content chunk's event up to its content string
	msgs []byte // the request's messages, written during the scan
	text []byte // one message's content parts, joined
	tmpl lineTemplate
	sh   shapeScratch
	st   sdk.StateWriter

	// Calls handled and declined, by kind (request, response, stream).
	handled, declined [3]int
}

func newOpenAIOllama() *openaiOllama { return &openaiOllama{} }

var _ sdk.Patch = (*openaiOllama)(nil)

func (p *openaiOllama) count(kind int, ok bool) bool {
	if ok {
		p.handled[kind]++
	} else {
		p.declined[kind]++
	}
	return ok
}

// PatchRequest implements sdk.Patch.
func (p *openaiOllama) PatchRequest(c *sdk.Call, body []byte, req *canon.ChatRequest, out *sdk.Output) bool {
	return p.count(patchReq, p.request(c, body, req, out))
}

// PatchResponse implements sdk.Patch.
func (p *openaiOllama) PatchResponse(c *sdk.Call, body []byte, r *sdk.PatchReport, out *sdk.Output) bool {
	return p.count(patchResp, p.response(c, body, r, out))
}

// PatchStream implements sdk.Patch.
func (p *openaiOllama) PatchStream(c *sdk.Call, st *sdk.PatchStream, events [][]byte, r *sdk.PatchReport, out *sdk.Output) bool {
	return p.count(patchStream, p.stream(c, st, events, r, out))
}

// ollamaLine is an /api/chat response or stream line as the patch reads
// it: nothing it cannot pass through.
type ollamaLine struct {
	content span // message.content: a string, or kNone
	created span // created_at: the template's first hole when a string
	done    bool
	// Of a done line (or a response): finishReason(false, done_reason)
	// and usage(v).
	finish canon.FinishReason
	usage  canon.Usage
}

// line reads the object at p.s as ollama's decodeLine (stream) or
// DecodeResponse reads it.
func (p *openaiOllama) line(stream bool, l *ollamaLine) bool {
	s := &p.s
	var errv, resp, msg, done, reason, pec, ec, lp span
	if !s.object(func(k []byte) bool {
		var dst *span
		switch string(k) {
		case "message":
			if msg.kind != kNone {
				return false
			}
			if s.peek() != '{' {
				v, ok := s.value()
				msg = v
				return ok
			}
			msg.kind = kObj
			return p.message(l)
		case "error":
			dst = &errv
		case "response":
			dst = &resp
		case "done":
			dst = &done
		case "done_reason":
			dst = &reason
		case "prompt_eval_count":
			dst = &pec
		case "eval_count":
			dst = &ec
		case "logprobs":
			dst = &lp
		case "created_at":
			dst = &l.created
		}
		v, ok := s.value()
		return ok && (dst == nil || field(dst, v))
	}) || !s.end() {
		return false
	}
	// An error fails the call; a "response" string is /api/generate's
	// text; a logprobs array is a chunk of its own; a message that is not
	// an object fails the call.
	if !errv.null() || !resp.null() || !lp.null() || msg.kind != kObj && !msg.null() {
		return false
	}
	switch done.kind {
	case kTrue:
		l.done = true
	case kNone, kNull, kFalse:
	default:
		return false
	}
	if stream && !l.done {
		return true // the rest is read at done only
	}
	// finishReason(false, done_reason): "length", or stop.
	l.finish = canon.FinishStop
	switch reason.kind {
	case kStr:
		if reason.flags&sfEsc != 0 {
			return false
		}
		if is(s.b, reason, "length") {
			l.finish = canon.FinishLength
		}
	case kNone, kNull:
	default:
		return false
	}
	// usage(v): count reads a non-negative integer up to 1<<40, else 0.
	var ok bool
	if l.usage.PromptTokens, ok = tokenCount(s.b, pec); !ok {
		return false
	}
	if l.usage.CompletionTokens, ok = tokenCount(s.b, ec); !ok {
		return false
	}
	l.usage.TotalTokens = l.usage.PromptTokens + l.usage.CompletionTokens
	return true
}

// tokenCount is ollama's count on a value the patch reads without doubt:
// absent, null or a plain integer.
func tokenCount(b []byte, v span) (int, bool) {
	switch v.kind {
	case kNone, kNull:
		return 0, true
	case kNum:
		n, ok := plainInt(b, v)
		if !ok {
			return 0, false
		}
		if n < 0 || n > 1<<40 {
			n = 0
		}
		return int(n), true
	}
	return 0, false
}

// message reads the message object: its content, and nothing the patch
// cannot pass (thinking text, tool calls).
func (p *openaiOllama) message(l *ollamaLine) bool {
	s := &p.s
	var content, thinking, tc span
	if !s.object(func(k []byte) bool {
		var dst *span
		switch string(k) {
		case "content":
			dst = &content
		case "thinking":
			dst = &thinking
		case "tool_calls":
			dst = &tc
		}
		v, ok := s.value()
		return ok && (dst == nil || field(dst, v))
	}) {
		return false
	}
	switch {
	case thinking.kind == kStr && thinking.a != thinking.b, !thinking.null() && thinking.kind != kStr:
		return false // reasoning, or junk
	case !tc.null() && !(tc.kind == kArr && emptyArray(s.b[tc.a:tc.b])):
		return false // tool calls, or the full path's error
	}
	switch content.kind {
	case kStr:
		l.content = content
	case kNone, kNull:
	default:
		return false // junk the full path reads as ""
	}
	return true
}

// plainStart reports whether content span v, the first text of the
// message, is plain to ollama's <think> splitter (thinktag): its first
// byte after leading spaces is neither '<' nor an escape (which might be
// '<' or whitespace), so the splitter passes the content on as it is,
// spaces included. Content of spaces only is held back, and '<' may open a
// <think> block. Tabs and newlines are escaped in JSON: only spaces come
// raw.
func plainStart(b []byte, v span) bool {
	i := v.a
	for i < v.b && b[i] == ' ' {
		i++
	}
	return i < v.b && b[i] != '<' && b[i] != '\\'
}

// response is PatchResponse: ollama's DecodeResponse, then openai's
// EncodeResponse.
func (p *openaiOllama) response(c *sdk.Call, body []byte, r *sdk.PatchReport, out *sdk.Output) bool {
	id, model, created, ok := metaOK(c)
	if !ok {
		return false
	}
	p.s = scanner{b: body}
	var l ollamaLine
	if !p.line(false, &l) {
		return false
	}
	// thinktag.Split: content that does not start with <think> is passed
	// through untouched.
	if l.content.kind == kStr && l.content.a != l.content.b && !plainStart(body, l.content) {
		return false
	}
	b := appendHeader(out.Body, id, model, created, "chat.completion")
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	if l.content.kind == kStr {
		b = appendStr(b, body, l.content, &p.tmp)
	} else {
		b = append(b, `""`...)
	}
	b = append(b, `,"refusal":null},"logprobs":null,"finish_reason":"`...)
	b = append(append(b, l.finish...), `"}],"usage":`...)
	b = appendUsage(b, &l.usage)
	out.Body = append(b, `,"system_fingerprint":null}`...)
	r.Usage, r.HasUsage = l.usage, true
	r.FinishReason = l.finish
	r.OutputTokens = sdk.OutputTokens(strLen(body, l.content))
	return true
}

// ollama's stream states the patch reads and writes: none yet (the empty
// blob), the role sent with the content plain, and the done line decoded
// with the content plain or never started.
var (
	ollamaPlain     = ollama.PatchState(true, false)
	ollamaPlainDone = ollama.PatchState(true, true)
	ollamaStartDone = ollama.PatchState(false, true)
)

// stream is PatchStream: ollama's DecodeStream, then openai's
// EncodeStream, as the fused op drives them.
func (p *openaiOllama) stream(c *sdk.Call, st *sdk.PatchStream, events [][]byte, r *sdk.PatchReport, out *sdk.Output) bool {
	id, model, created, ok := metaOK(c)
	if !ok {
		return false
	}
	// ollama's state: the role sent, the done line, the tool calls seen
	// and the <think> splitter. The patch wants none yet, or the role sent
	// and the content plain (ollama.PatchState).
	plain, done := false, false
	switch {
	case len(st.Adapter.In) == 0:
	case equal(st.Adapter.In, ollamaPlain):
		plain = true
	case equal(st.Adapter.In, ollamaPlainDone), equal(st.Adapter.In, ollamaStartDone):
		// Lines after the done line are not read; the state stays.
		plain, done = true, true
		events = nil
	default:
		return false
	}
	wasPlain, wasDone := plain, done
	roles, ok := openaiState(st.Translator.In)
	if !ok {
		return false
	}
	inc, _ := c.MetaBytes(abi.MetaIncludeUsage)
	includeUsage := string(inc) == "1"
	p.hdr = appendHeader(p.hdr[:0], id, model, created, "chat.completion.chunk")
	p.hdr = append(p.hdr, `,"choices":[`...)
	p.pre = append(append(append(p.pre[:0], "data: "...), p.hdr...), `{"index":0,"delta":{"content":`...)

	b := out.Body
	chunks := 0 // the canonical chunks ollama would have given
	newRoles := roles
	var last []byte // the last line read
	for _, ev := range events {
		ev = bytes.TrimSpace(ev)
		if len(ev) == 0 {
			continue
		}
		last = ev
		var l ollamaLine
		if !p.tmpl.match(ev, &l) {
			p.s = scanner{b: ev}
			if !p.line(true, &l) {
				return false
			}
			if !l.done && l.content.kind == kStr {
				p.tmpl.set(ev, l.created, l.content)
			}
		}
		if l.content.kind == kStr && l.content.a != l.content.b {
			if !plain && !plainStart(ev, l.content) {
				return false
			}
			plain = true
			chunks++
			if newRoles == 0 {
				// A choice's first delta always writes its role.
				b = appendChunkEvent(b, p.hdr, ev, l.content, canon.FinishNone, true, &p.tmp)
				newRoles = 1
			} else {
				// appendChunkEvent's later content delta, from p.pre.
				b = appendStr(append(b, p.pre...), ev, l.content, &p.tmp)
				b = append(b, `},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
			}
			r.OutputTokens += sdk.OutputTokens(strLen(ev, l.content))
		}
		if l.done {
			// The finish chunk, then the usage chunk; lines after the
			// done line are not read.
			chunks += 2
			b = appendChunkEvent(b, p.hdr, nil, span{}, l.finish, newRoles == 0, &p.tmp)
			newRoles = 1
			r.FinishReason = l.finish
			r.Usage, r.HasUsage = l.usage, true
			if includeUsage {
				b = append(b, "data: "...)
				b = append(append(b, p.hdr...), `],"usage":`...)
				b = appendUsage(b, &l.usage)
				b = append(b, "}\n\n"...)
			}
			done = true
			break
		}
	}
	if done {
		c.Done()
	}
	// openai's EncodeStream runs when ollama gave chunks or at the end.
	end := c.End()
	if end {
		b = append(b, doneEvent...)
	}
	out.Body = b
	if chunks > 0 || end {
		st.Started = true
	}
	switch {
	case wasDone:
	case done && plain:
		st.Adapter.Set(ollamaPlainDone)
	case done:
		st.Adapter.Set(ollamaStartDone)
	case plain && !wasPlain:
		st.Adapter.Set(ollamaPlain)
	}
	// Steady: the role sent, the content plain, the stream going on, and
	// the template this stream's (patch_shape.go).
	var ll ollamaLine
	if plain && newRoles == 1 && !done && !end && last != nil && p.tmpl.match(last, &ll) {
		p.tmpl.leaveShape(&p.sh, out, p.hdr)
	}
	if newRoles != roles || end {
		w := &p.st
		w.B = append(w.B[:0], openaiStateVersion)
		w.Uint(newRoles)
		w.Uint(0)
		w.Uint(0)
		var flags uint64
		if end {
			flags = openaiFlagDone
		}
		w.Uint(flags)
		st.Translator.Set(w.B)
	}
	return true
}

// lineTemplate is a content line as Ollama streams it: every byte but the
// created_at and content strings' is the same from line to line (model,
// role, done:false). Once the full scan has read such a line, a line made
// of the same bytes around two valid strings reads the same but for them
// (and the patch does not use created_at), so only the strings are
// scanned.
type lineTemplate struct {
	prefix []byte // up to the first hole's opening quote, included
	middle []byte // from its closing quote to the content's opening one (two holes)
	suffix []byte // from the content's closing quote, included
	two    bool   // created_at is a hole before the content
}

func (t *lineTemplate) set(ev []byte, created, content span) {
	if created.kind == kStr && created.b < content.a {
		t.prefix = append(t.prefix[:0], ev[:created.a]...)
		t.middle = append(t.middle[:0], ev[created.b:content.a]...)
		t.two = true
	} else {
		t.prefix = append(t.prefix[:0], ev[:content.a]...)
		t.middle = t.middle[:0]
		t.two = false
	}
	t.suffix = append(t.suffix[:0], ev[content.b:]...)
}

// match reports whether ev is the template around valid strings, putting
// the content in l.
func (t *lineTemplate) match(ev []byte, l *ollamaLine) bool {
	np, nm, ns := len(t.prefix), len(t.middle), len(t.suffix)
	if np == 0 || len(ev) < np+nm+ns || !equal(ev[:np], t.prefix) || !equal(ev[len(ev)-ns:], t.suffix) {
		return false
	}
	s := scanner{b: ev, i: np - 1}
	if t.two {
		v, ok := s.str()
		if !ok || !hasPrefix(ev[v.b:], t.middle) {
			return false
		}
		s.i = v.b + nm - 1
	}
	v, ok := s.str()
	if !ok || v.b != len(ev)-ns {
		return false // the string ends elsewhere: another shape
	}
	l.content = v
	return true
}
