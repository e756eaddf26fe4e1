package bundle

import (
	"bytes"

	"github.com/mindrouter/mindrouter/plugins/vllm"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// The response and stream patches: vLLM's chat.completion (chunk) JSON
// in, what openai's encoders write for what vllm's decoders read, out. The
// output is rebuilt from an allowlist, as the full path rebuilds it: the
// gateway's id, model and created from meta, the OpenAI fields the
// translator writes, and the content string copied from the backend;
// whatever else vLLM adds (prompt_token_ids, kv_transfer_params,
// prompt_logprobs, stop_reason, service_tier, ...) is dropped.

// backendChoice is one choice of a response or chunk as the patch reads
// it: nothing it cannot pass through (reasoning, tool calls, logprobs).
type backendChoice struct {
	index   int64
	content span // string, or kNone
	role    bool // a stream delta's role was given
	finish  canon.FinishReason
}

// top reads the top-level object of a response or chunk: the choices (at
// most one, into ch; n reports how many) and the usage. It declines on
// error payloads (vllm's errorPayload) and on repeated keys it reads.
func (p *openaiVLLM) top(stream bool, ch *backendChoice, u *sdk.PatchReport) (n int, ok bool) {
	s := &p.s
	var errv, object, choices, usage span
	ok = s.object(func(k []byte) bool {
		switch string(k) {
		case "id", "created":
			v, ok := s.value()
			dst := &p.ans.id
			if k[0] == 'c' {
				dst = &p.ans.created
			}
			if ok && !field(dst, v) {
				p.ans.dup = true // a repeated key: no response shape
			}
			return ok
		case "error":
			v, ok := s.value()
			return ok && field(&errv, v) && v.null()
		case "object":
			v, ok := s.value()
			// "error" (the old error shape) fails the full path; an
			// escaped spelling might be it.
			return ok && field(&object, v) && !(v.kind == kStr && (v.flags&sfEsc != 0 || is(s.b, v, "error")))
		case "choices":
			if choices.kind != kNone {
				return false
			}
			if s.peek() != '[' {
				v, ok := s.value()
				choices = v
				return ok
			}
			choices.kind = kArr
			if !s.open('[') {
				return false
			}
			for more, ok := s.first(']'), true; more; {
				if n++; n > 1 || !p.choice(stream, ch) {
					return false // n > 1 is left to the full path
				}
				if more, ok = s.next(']'); !ok {
					return false
				}
			}
			return true
		case "usage":
			if usage.kind != kNone {
				return false
			}
			if s.peek() != '{' {
				v, ok := s.value()
				usage = v // not an object: no usage
				return ok
			}
			usage.kind = kObj
			u.HasUsage = true
			return p.usage(&u.Usage)
		}
		_, ok := s.value()
		return ok
	})
	if !ok || !s.end() {
		return 0, false
	}
	if !stream && choices.kind != kArr {
		return 0, false // the full path's error
	}
	return n, true
}

// choice reads one choice (vllm's DecodeResponse loop or chunkChoice).
func (p *openaiVLLM) choice(stream bool, ch *backendChoice) bool {
	s := &p.s
	var index, msg, finish, logprobs span
	msgKey := "message"
	if stream {
		msgKey = "delta"
	}
	if !s.object(func(k []byte) bool {
		if string(k) == msgKey {
			if msg.kind != kNone {
				return false
			}
			if s.peek() != '{' {
				v, ok := s.value()
				msg = v
				return ok
			}
			msg.kind = kObj
			return p.message1(stream, ch)
		}
		switch string(k) {
		case "index":
			v, ok := s.value()
			return ok && field(&index, v)
		case "finish_reason":
			v, ok := s.value()
			return ok && field(&finish, v)
		case "logprobs":
			v, ok := s.value()
			return ok && field(&logprobs, v) && v.null()
		case "text": // a text_completion choice: the components read it
			return false
		}
		_, ok := s.value()
		return ok
	}) {
		return false
	}
	if msg.kind != kObj && !(stream && msg.null()) {
		return false
	}
	// count(index) when it is a number, else the position (0).
	switch index.kind {
	case kNum:
		n, ok := plainInt(s.b, index)
		if !ok {
			return false
		}
		ch.index = min(max(n, 0), maxInt32)
	}
	// finishReason(fr, false): no tool calls get this far.
	if finish.kind == kStr {
		switch {
		case finish.flags&sfEsc != 0:
			return false
		case finish.a == finish.b:
		case is(s.b, finish, "length"):
			ch.finish = canon.FinishLength
		case is(s.b, finish, "tool_calls"), is(s.b, finish, "function_call"):
			ch.finish = canon.FinishToolCalls
		case is(s.b, finish, "content_filter"):
			ch.finish = canon.FinishContentFilter
		default:
			ch.finish = canon.FinishStop
		}
	}
	return true
}

// message1 reads a message or delta: its content, and nothing the patch
// cannot pass (reasoning text, tool calls).
func (p *openaiVLLM) message1(stream bool, ch *backendChoice) bool {
	s := &p.s
	var role, content, rc, r, tc span
	if !s.object(func(k []byte) bool {
		var dst *span
		switch string(k) {
		case "role":
			dst = &role
		case "content":
			dst = &content
		case "reasoning_content":
			dst = &rc
		case "reasoning":
			dst = &r
		case "tool_calls":
			dst = &tc
		}
		v, ok := s.value()
		return ok && (dst == nil || field(dst, v))
	}) {
		return false
	}
	for _, v := range [...]span{rc, r} {
		if v.kind == kStr && v.a != v.b {
			return false // reasoning
		}
	}
	if tc.kind == kArr && tc.b-tc.a > 2 && !emptyArray(s.b[tc.a:tc.b]) {
		return false // tool calls
	}
	switch content.kind {
	case kStr:
		ch.content = content
	case kNone, kNull:
	default:
		return false // content parts, or junk
	}
	ch.role = role.kind == kStr && role.a != role.b
	if !stream && ch.content.kind == kStr && p.thinkTags(ch.content) {
		return false // vllm's splitThink would split it
	}
	return true
}

// emptyArray reports whether raw is [] with whitespace inside.
func emptyArray(raw []byte) bool {
	return len(bytes.TrimLeft(raw[1:len(raw)-1], " \t\r\n")) == 0
}

// thinkTags reports whether content mentions <think> or </think>.
func (p *openaiVLLM) thinkTags(v span) bool {
	raw := p.s.b[v.a:v.b]
	if v.flags&sfEsc != 0 {
		p.tmp = unescape(p.tmp[:0], raw)
		raw = p.tmp
	}
	return bytes.Contains(raw, []byte("think>"))
}

// usage reads an OpenAI usage object as vllm's usageOf does.
func (p *openaiVLLM) usage(u *canon.Usage) bool {
	s := &p.s
	var pt, ct, tt, cached, reasoning span
	var ptd, ctd span
	detail := func(dst *span, key string, val *span) bool {
		if dst.kind != kNone {
			return false
		}
		if s.peek() != '{' {
			v, ok := s.value()
			*dst = v
			return ok
		}
		dst.kind = kObj
		return s.object(func(k []byte) bool {
			v, ok := s.value()
			return ok && (string(k) != key || field(val, v))
		})
	}
	if !s.object(func(k []byte) bool {
		var dst *span
		switch string(k) {
		case "prompt_tokens":
			dst = &pt
		case "completion_tokens":
			dst = &ct
		case "total_tokens":
			dst = &tt
		case "prompt_tokens_details":
			return detail(&ptd, "cached_tokens", &cached)
		case "completion_tokens_details":
			return detail(&ctd, "reasoning_tokens", &reasoning)
		}
		v, ok := s.value()
		return ok && (dst == nil || field(dst, v))
	}) {
		return false
	}
	ok := true
	cnt := func(v span) int {
		if v.kind != kNum {
			return 0 // count of a non-number
		}
		n, nok := plainInt(s.b, v)
		if !nok {
			ok = false
		}
		return int(min(max(n, 0), maxInt32))
	}
	p.ans.pt, p.ans.ct, p.ans.tt = pt, ct, tt
	*u = canon.Usage{PromptTokens: cnt(pt), CompletionTokens: cnt(ct), TotalTokens: cnt(tt),
		CachedTokens: cnt(cached), ReasoningTokens: cnt(reasoning)}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	return ok
}

// appendUsage is openai's appendUsage.
func appendUsage(b []byte, u *canon.Usage) []byte {
	b, _ = appendUsageAt(b, u)
	return b
}

// appendUsageAt is appendUsage, also reporting where it wrote the
// prompt, completion and total counts.
func appendUsageAt(b []byte, u *canon.Usage) ([]byte, [3][2]int) {
	var at [3][2]int
	b = append(b, `{"prompt_tokens":`...)
	at[0][0] = len(b)
	b = appendInt(b, int64(u.PromptTokens))
	at[0][1] = len(b)
	b = append(b, `,"completion_tokens":`...)
	at[1][0] = len(b)
	b = appendInt(b, int64(u.CompletionTokens))
	at[1][1] = len(b)
	b = append(b, `,"total_tokens":`...)
	at[2][0] = len(b)
	b = appendInt(b, int64(u.TotalTokens))
	at[2][1] = len(b)
	if u.CachedTokens > 0 {
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = append(appendInt(b, int64(u.CachedTokens)), '}')
	}
	if u.ReasoningTokens > 0 {
		b = append(b, `,"completion_tokens_details":{"reasoning_tokens":`...)
		b = append(appendInt(b, int64(u.ReasoningTokens)), '}')
	}
	return append(b, '}'), at
}

// appendHeader is openai's header.append with the gateway's values.
func appendHeader(b, id, model, created []byte, object string) []byte {
	b = jsonw.Bytes(append(b, `{"id":`...), id)
	b = append(b, `,"object":"`...)
	b = append(b, object...)
	b = append(append(b, `","created":`...), created...)
	return jsonw.Bytes(append(b, `,"model":`...), model)
}

// response is PatchResponse.
func (p *openaiVLLM) response(c *sdk.Call, body []byte, r *sdk.PatchReport, out *sdk.Output) bool {
	id, model, created, ok := metaOK(c)
	if !ok {
		return false
	}
	p.s = scanner{b: body}
	p.ans = answerSpans{}
	var ch backendChoice
	n, ok := p.top(false, &ch, r)
	if !ok || n != 1 {
		return false
	}
	base := len(out.Body)
	var at answerAt
	b := appendHeader(out.Body, id, model, created, "chat.completion")
	at.header = len(b) - base
	b = appendInt(append(b, `,"choices":[{"index":`...), ch.index)
	b = append(b, `,"message":{"role":"assistant","content":`...)
	if ch.content.kind == kStr {
		at.content[0] = len(b) + 1 - base
		b = appendStr(b, body, ch.content, &p.tmp)
		at.content[1] = len(b) - 1 - base
	} else {
		b = append(b, `""`...)
	}
	b = append(b, `,"refusal":null},"logprobs":null,"finish_reason":`...)
	if ch.finish == canon.FinishNone {
		b = append(b, `"stop"`...)
	} else {
		b = append(append(append(b, '"'), ch.finish...), '"')
	}
	b = append(b, "}]"...)
	if r.HasUsage {
		var u [3][2]int
		b, u = appendUsageAt(append(b, `,"usage":`...), &r.Usage)
		for i := range u {
			at.usage[i] = [2]int{u[i][0] - base, u[i][1] - base}
		}
	}
	out.Body = append(b, `,"system_fingerprint":null}`...)
	r.FinishReason = ch.finish
	r.OutputTokens = sdk.OutputTokens(strLen(body, ch.content))
	if ch.content.kind == kStr && r.HasUsage {
		p.leaveAnswerShape(out, body, out.Body[base:], id, created, ch.content, &at, r)
	}
	return true
}

// Stream: openai's stream state blob (its state.go): version 1, then
// uvarints roles, tools, named, flags (1: [DONE] written). The patch runs
// only while no tool call was seen and [DONE] is not written, and only
// choice 0 exists, so the blob is one of two: roles 0 or 1.
const (
	openaiStateVersion = 1
	openaiFlagDone     = 1
)

// openaiState reads the translator's blob: roles (bit 0 only), ok.
func openaiState(b []byte) (roles uint64, ok bool) {
	if len(b) == 0 {
		return 0, true
	}
	if b[0] != openaiStateVersion {
		return 0, false
	}
	r := sdk.StateReader{B: b[1:]}
	roles, tools, named, flags := r.Uint(), r.Uint(), r.Uint(), r.Uint()
	if r.Err() != nil || len(r.B) != 0 || roles&^1 != 0 || tools != 0 || named != 0 || flags != 0 {
		return 0, false
	}
	return roles, true
}

var doneEvent = []byte("data: [DONE]\n\n")

// vllmPlain is vllm's stream state once choice 0's content has started
// plain (not with <think>), with no tool call seen.
var vllmPlain = vllm.PlainState()

// stream is PatchStream.
func (p *openaiVLLM) stream(c *sdk.Call, st *sdk.PatchStream, events [][]byte, r *sdk.PatchReport, out *sdk.Output) bool {
	id, model, created, ok := metaOK(c)
	if !ok {
		return false
	}
	// vllm's state: the tool calls seen, and each choice's <think>
	// splitter. The patch wants no tool call and choice 0's content either
	// not started (no state) or plain (vllm.PlainState). A first call
	// starts afresh whatever the host passed.
	plain := false
	if !c.First() && len(st.Adapter.In) > 0 {
		if !equal(st.Adapter.In, vllmPlain) {
			return false
		}
		plain = true
	}
	wasPlain := plain
	roles, ok := openaiState(st.Translator.In)
	if !ok {
		return false
	}
	inc, _ := c.MetaBytes(abi.MetaIncludeUsage)
	includeUsage := string(inc) == "1"
	p.hdr = appendHeader(p.hdr[:0], id, model, created, "chat.completion.chunk")
	p.hdr = append(p.hdr, `,"choices":[`...)

	b := out.Body
	chunks := 0
	newRoles := roles
	var last []byte // the last event read
	sawDone := false
	for _, ev := range events {
		ev = bytes.TrimSpace(ev)
		if len(ev) == 0 {
			continue
		}
		if string(ev) == "[DONE]" {
			c.Done()
			sawDone = true
			break
		}
		last = ev
		var ch backendChoice
		var u sdk.PatchReport
		n := 1
		if !p.tmpl.match(ev, &ch) {
			p.s = scanner{b: ev}
			var ok bool
			if n, ok = p.top(true, &ch, &u); !ok || n == 1 && ch.index != 0 {
				return false
			}
			if n == 1 && !ch.role && ch.finish == canon.FinishNone && !u.HasUsage && ch.content.kind == kStr {
				p.tmpl.set(ev, ch.content)
			}
		}
		keep := n == 1 && (ch.role || ch.content.kind == kStr && ch.content.a != ch.content.b || ch.finish != canon.FinishNone)
		if keep && !plain && ch.content.kind == kStr && ch.content.a != ch.content.b {
			// vllm's splitter sees the choice's first content: text whose
			// first non-whitespace byte is neither '<' nor an escape (which
			// might be either) makes the content plain, passed as it is,
			// leading spaces included (thinktag's Start mode); content of
			// whitespace only is held back, and '<' may open a <think>
			// block. Tabs and newlines are escaped in JSON: only spaces
			// come raw.
			i := ch.content.a
			for i < ch.content.b && ev[i] == ' ' {
				i++
			}
			if i == ch.content.b || ev[i] == '<' || ev[i] == '\\' {
				return false
			}
			plain = true
		}
		if !keep && !u.HasUsage {
			continue // an empty delta: nothing to tell the client
		}
		chunks++
		if keep {
			// A choice's first delta always writes its role.
			b = p.appendChoiceEvent(b, ev, &ch, newRoles == 0)
			newRoles = 1
			r.OutputTokens += sdk.OutputTokens(strLen(ev, ch.content))
			if ch.finish != canon.FinishNone {
				r.FinishReason = ch.finish
			}
		}
		if u.HasUsage {
			r.Usage, r.HasUsage = u.Usage, true
			if includeUsage {
				b = append(b, "data: "...)
				b = append(append(b, p.hdr...), `],"usage":`...)
				b = appendUsage(b, &u.Usage)
				b = append(b, "}\n\n"...)
			}
		}
	}
	done := false
	if c.End() {
		b = append(b, doneEvent...)
		done = true
	}
	out.Body = b
	if chunks > 0 || c.End() {
		st.Started = true
	}
	if plain && !wasPlain {
		st.Adapter.Set(vllmPlain)
	}
	// Steady: the role sent, the content plain, the stream going on, and
	// the template this stream's (patch_shape.go).
	var lc backendChoice
	if plain && newRoles == 1 && !done && !sawDone && last != nil && p.tmpl.match(last, &lc) {
		p.tmpl.leaveShape(&p.sh, out, p.hdr)
	}
	if newRoles != roles || done {
		w := &p.st
		w.B = append(w.B[:0], openaiStateVersion)
		w.Uint(newRoles)
		w.Uint(0)
		w.Uint(0)
		var flags uint64
		if done {
			flags = openaiFlagDone
		}
		w.Uint(flags)
		st.Translator.Set(w.B)
	}
	return true
}

// eventTemplate is a content-only chunk as vLLM streams it: every byte
// but the content string's is the same from chunk to chunk (id, model,
// created, the choice's shape). Once the full scan has read such a chunk,
// a chunk made of the same prefix and suffix around a valid string reads
// the same but for the content, so only that string is scanned.
type eventTemplate struct {
	prefix []byte // up to the content's opening quote, included
	suffix []byte // from its closing quote, included
}

func (t *eventTemplate) set(ev []byte, content span) {
	t.prefix = append(t.prefix[:0], ev[:content.a]...)
	t.suffix = append(t.suffix[:0], ev[content.b:]...)
}

// match reports whether ev is the template around a valid content string,
// which it puts in ch.
func (t *eventTemplate) match(ev []byte, ch *backendChoice) bool {
	np, ns := len(t.prefix), len(t.suffix)
	if np == 0 || len(ev) < np+ns || !equal(ev[:np], t.prefix) || !equal(ev[len(ev)-ns:], t.suffix) {
		return false
	}
	s := scanner{b: ev, i: np - 1}
	v, ok := s.str()
	if !ok || v.b != len(ev)-ns {
		return false // the string ends elsewhere: another shape
	}
	ch.content = v
	return true
}

// appendChoiceEvent writes the SSE event of a chunk with one choice
// (openai's encodeChunk and appendChunkChoice), or nothing when the choice
// adds nothing the client has not seen.
func (p *openaiVLLM) appendChoiceEvent(b, src []byte, ch *backendChoice, first bool) []byte {
	return appendChunkEvent(b, p.hdr, src, ch.content, ch.finish, first, &p.tmp)
}

// appendChunkEvent writes the SSE event of a chunk whose choice 0 has the
// content span (of src; kNone for none) and finish reason, after hdr (the
// chunk's opening up to its choices array), or nothing when the choice adds
// nothing the client has not seen; first: the choice's first delta, which
// writes the role. tmp is appendStr's scratch.
func appendChunkEvent(b, hdr, src []byte, content span, finish canon.FinishReason, first bool, tmp *[]byte) []byte {
	hasContent := content.kind == kStr && content.a != content.b
	if !first && !hasContent && finish == canon.FinishNone {
		return b
	}
	b = append(b, "data: "...)
	b = append(b, hdr...)
	b = append(b, `{"index":0,"delta":{`...)
	if first {
		b = append(b, `"role":"assistant"`...)
	}
	if hasContent {
		if first {
			b = append(b, ',')
		}
		b = appendStr(append(b, `"content":`...), src, content, tmp)
	} else if first {
		b = append(b, `,"content":""`...)
	}
	b = append(b, `},"logprobs":null,"finish_reason":`...)
	if finish == canon.FinishNone {
		b = append(b, "null"...)
	} else {
		b = append(append(append(b, '"'), finish...), '"')
	}
	return append(b, "}]}\n\n"...)
}
