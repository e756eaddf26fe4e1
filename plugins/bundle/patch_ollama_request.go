package bundle

import (
	"strconv"
	"unsafe"

	"github.com/mindrouter/mindrouter/plugins/openai"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// The openai×ollama request patch: an OpenAI Chat Completions body in, the
// /api/chat body ollama's EncodeRequest writes for what openai's
// DecodeRequest reads, out. The scalar fields are checked as for vllm
// (checkRequest); messages are rewritten during the scan (role, content
// with text parts joined by newlines, an assistant's reasoning as
// "thinking"), and the sampling fields go into Ollama's "options" with
// meta context_length as num_ctx. Left to the full path, besides what
// checkRequest declines (logprobs: false, which writes nothing, is
// taken): tools, tool_choice and response_format (unless
// null), tool messages, assistant tool calls and images (Ollama's
// encodings of them look names up, validate and fetch).

// request is PatchRequest.
func (p *openaiOllama) request(c *sdk.Call, body []byte, req *canon.ChatRequest, out *sdk.Output) bool {
	// openai: a route other than chat has no request body.
	if route, ok := c.MetaBytes(abi.MetaRoute); ok && len(route) > 0 && string(route) != openai.RouteChat {
		return false
	}
	s := &p.s
	*s = scanner{b: body}
	p.msgs = p.msgs[:0]
	var r reqState
	f := &r.f
	if !s.open('{') {
		return false
	}
	for more, ok := s.first('}'), true; more; {
		k, kok := s.key()
		if !kok {
			return false
		}
		id := reqField(k)
		if id < 0 {
			if _, ok := s.value(); !ok {
				return false
			}
		} else {
			if f[id].kind != kNone {
				return false // repeated: fastjson's Visit keeps the last, Get the first
			}
			var v span
			var vok bool
			switch id {
			case rfMessages:
				v, vok = p.reqMessages()
			case rfStreamOptions:
				v, vok = scanStreamOptions(s, &r)
			case rfThinking:
				v, vok = scanThinking(s, &r)
			case rfChatTemplateKwargs:
				v, vok = scanTemplateKwargs(s, &r)
			default:
				v, vok = s.value()
			}
			if !vok {
				return false
			}
			f[id] = v
		}
		if more, ok = s.next('}'); !ok {
			return false
		}
	}
	if !s.end() {
		return false
	}
	return p.writeRequest(c, body, &r, req, out)
}

// writeRequest writes the body as ollama's EncodeRequest does.
func (p *openaiOllama) writeRequest(c *sdk.Call, body []byte, r *reqState, req *canon.ChatRequest, out *sdk.Output) bool {
	f := &r.f
	if !f[rfTools].null() || !f[rfToolChoice].null() || !f[rfResponseFormat].null() {
		return false
	}
	// logprobs: false and top_logprobs: 0 (decodeLogprobs' bounds) write
	// nothing; checkRequest declines the rest.
	if lp := f[rfLogprobs]; lp.kind == kFalse {
		f[rfLogprobs] = span{}
		if tl := f[rfTopLogprobs]; !tl.null() {
			if n, ok := plainInt(body, tl); !ok || n != 0 {
				return false
			}
			f[rfTopLogprobs] = span{}
		}
	}
	var v reqVals
	if !checkRequest(c, body, r, &v) {
		return false
	}
	// hostHints: ContextLength from meta (Atoi, positive).
	ctx := 0
	if m, ok := c.MetaBytes(abi.MetaContextLength); ok {
		if n, err := strconv.Atoi(string(m)); err == nil && n > 0 {
			ctx = n
		}
	}
	m := f[rfModel]
	b := append(out.Body, `{"model":`...)
	b = appendStr(b, body, m, &p.tmp)
	b = append(b, `,"messages":`...)
	b = append(b, p.msgs...)
	if v.stream {
		b = append(b, `,"stream":true`...)
	} else {
		b = append(b, `,"stream":false`...)
	}
	switch v.think {
	case canon.ThinkOn:
		b = append(b, `,"think":true`...)
	case canon.ThinkOff:
		b = append(b, `,"think":false`...)
	case canon.ThinkLow, canon.ThinkMedium, canon.ThinkHigh:
		b = append(b, `,"think":"`...)
		b = append(append(b, v.think...), '"')
	}
	// appendOptions, in its order; nothing when no option is set.
	start := len(b)
	b = append(b, `,"options":{`...)
	o := len(b)
	for i, fl := range [...]struct {
		id  int
		key string
	}{
		{rfTemperature, `"temperature":`}, {rfTopP, `"top_p":`}, {rfTopK, `"top_k":`}, {rfMinP, `"min_p":`},
		{rfRepetitionPenalty, `"repeat_penalty":`}, {rfFrequencyPenalty, `"frequency_penalty":`},
		{rfPresencePenalty, `"presence_penalty":`}, {rfSeed, `"seed":`},
	} {
		if f[fl.id].null() {
			continue
		}
		b = optKey(b, o, fl.key)
		switch {
		case fl.id == rfTopK:
			b = appendInt(b, v.topK)
		case fl.id == rfSeed:
			b = appendInt(b, v.seed)
		case i < 2:
			b = appendFloat(b, body, f[fl.id], v.floats[i]) // temperature, top_p
		default:
			b = appendFloat(b, body, f[fl.id], v.floats[i-1]) // after top_k
		}
	}
	mark := len(b)
	stop, ok := appendStop(b, body, v.stop, &p.tmp)
	if !ok {
		out.Body = b[:0]
		return false
	}
	if len(stop) > mark {
		// appendStop writes `,"stop":[...]`: the comma only after another option.
		if mark == o {
			stop = append(stop[:mark], stop[mark+1:]...)
		}
		b = stop
	}
	if v.maxTokens > 0 {
		b = appendInt(optKey(b, o, `"num_predict":`), v.maxTokens)
	}
	if ctx > 0 {
		b = appendInt(optKey(b, o, `"num_ctx":`), int64(ctx))
	}
	if len(b) == o {
		b = b[:start]
	} else {
		b = append(b, '}')
	}
	out.Body = append(b, '}')
	out.SetMeta(abi.MetaPath, "/api/chat")
	out.SetMeta(abi.MetaMethod, "POST")
	out.SetMeta(abi.MetaContentType, "application/json")

	// The SDK reads req within this call only: the model may alias body.
	req.Model = unsafe.String(&body[m.a], m.b-m.a)
	req.Stream = v.stream
	req.IncludeUsage = r.includeU
	req.MaxTokens = int(v.maxTokens)
	return true
}

// optKey writes an options key, after a comma unless it is the first
// (the object's members start at o).
func optKey(b []byte, o int, key string) []byte {
	if len(b) > o {
		b = append(b, ',')
	}
	return append(b, key...)
}

// reqMessages writes the messages array to p.msgs as ollama's
// appendMessage writes each.
func (p *openaiOllama) reqMessages() (span, bool) {
	s := &p.s
	if s.peek() != '[' {
		return span{}, false // null or not an array
	}
	a := s.i
	if !s.open('[') || !s.first(']') {
		return span{}, false // empty
	}
	p.msgs = append(p.msgs, '[')
	for more, ok := true, true; more; {
		if len(p.msgs) > 1 {
			p.msgs = append(p.msgs, ',')
		}
		if !p.reqMessage() {
			return span{}, false
		}
		if more, ok = s.next(']'); !ok {
			return span{}, false
		}
	}
	p.msgs = append(p.msgs, ']')
	return span{kind: kArr, a: a, b: s.i}, true
}

// reqMessage writes one message: system, user or assistant without tool
// calls.
func (p *openaiOllama) reqMessage() bool {
	s := &p.s
	var role, content, name, toolCalls, reasoningContent, reasoning, functionCall span
	p.text = p.text[:0]
	ok := s.object(func(k []byte) bool {
		var dst *span
		switch string(k) {
		case "role":
			dst = &role
		case "content":
			if s.peek() == '[' {
				a := s.i
				if content.kind != kNone || !p.reqParts() {
					return false
				}
				content = span{kind: kArr, a: a, b: s.i}
				return true
			}
			dst = &content
		case "name":
			dst = &name
		case "tool_calls":
			dst = &toolCalls
		case "reasoning_content":
			dst = &reasoningContent
		case "reasoning":
			dst = &reasoning
		case "function_call":
			dst = &functionCall
		}
		v, ok := s.value()
		return ok && (dst == nil || field(dst, v))
	})
	if !ok {
		return false
	}
	body := s.b
	var r string
	switch {
	case is(body, role, "system"), is(body, role, "developer"):
		r = "system"
	case is(body, role, "user"):
		r = "user"
	case is(body, role, "assistant"):
		r = "assistant"
	default:
		return false // tool, function (legacy tool results), absent, unknown
	}
	assistant := r == "assistant"
	switch content.kind {
	case kNone, kNull:
		if !assistant {
			return false // content is required
		}
	case kStr, kArr:
	default:
		return false
	}
	switch name.kind {
	case kNone, kNull, kStr: // read, and not sent
	default:
		return false
	}
	var reason span
	if assistant {
		if !toolCalls.null() || !functionCall.null() {
			return false
		}
		for _, v := range [...]span{reasoning, reasoningContent} {
			if v.null() {
				continue
			}
			if v.kind != kStr {
				return false
			}
			if v.a != v.b {
				reason = v // reasoning_content beats reasoning
			}
		}
	}
	b := append(p.msgs, `{"role":"`...)
	b = append(b, r...)
	b = append(b, `","content":"`...)
	switch content.kind {
	case kStr:
		b = appendStrInner(b, body, content, &p.tmp)
	case kArr:
		b = append(b, p.text...)
	}
	b = append(b, '"')
	if reason.kind == kStr {
		b = appendStr(append(b, `,"thinking":`...), body, reason, &p.tmp)
	}
	p.msgs = append(b, '}')
	return true
}

// reqParts joins an array of text (and refusal) parts into p.text,
// escaped and separated by newlines (ollama's appendText); any other part
// type is left to the full path.
func (p *openaiOllama) reqParts() bool {
	s := &p.s
	if !s.open('[') {
		return false
	}
	first := true
	for more, ok := s.first(']'), true; more; {
		var typ, text, refusal span
		if !s.object(func(k []byte) bool {
			var dst *span
			switch string(k) {
			case "type":
				dst = &typ
			case "text":
				dst = &text
			case "refusal":
				dst = &refusal
			}
			v, ok := s.value()
			return ok && (dst == nil || field(dst, v))
		}) {
			return false
		}
		var t span
		switch {
		case is(s.b, typ, "text"):
			t = text
		case is(s.b, typ, "refusal"):
			t = refusal
		default:
			return false // images and the rest
		}
		if t.kind != kStr {
			return false
		}
		if !first {
			p.text = append(p.text, '\\', 'n')
		}
		first = false
		p.text = appendStrInner(p.text, s.b, t, &p.tmp)
		if more, ok = s.next(']'); !ok {
			return false
		}
	}
	return true
}
