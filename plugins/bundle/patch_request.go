package bundle

import (
	"unsafe"

	"github.com/mindrouter/mindrouter/plugins/openai"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// The request patch: an OpenAI Chat Completions body in, the body vllm's
// EncodeRequest writes for what openai's DecodeRequest reads, out. The
// client's strings (messages, tool schemas) are copied, everything else is
// rewritten in the order vllm writes it; fields the translator does not
// read (metadata, store, ...) are dropped, as the full path drops them, and
// requests with n > 1, logprobs or top_logprobs are left to the full path. vllm ignores ChatRequest.ContextLength, so meta context_length
// changes nothing.

// Top-level request fields the translator reads (openai's reqFields).
const (
	rfModel = iota
	rfMessages
	rfStream
	rfStreamOptions
	rfMaxTokens
	rfMaxCompletionTokens
	rfTemperature
	rfTopP
	rfTopK
	rfMinP
	rfRepetitionPenalty
	rfFrequencyPenalty
	rfPresencePenalty
	rfSeed
	rfStop
	rfN
	rfResponseFormat
	rfTools
	rfToolChoice
	rfParallelToolCalls
	rfFunctions
	rfFunctionCall
	rfUser
	rfSafetyIdentifier
	rfThink
	rfThinking
	rfChatTemplateKwargs
	rfReasoningEffort
	rfLogprobs
	rfTopLogprobs
	nReqFields
)

func reqField(k []byte) int {
	switch string(k) {
	case "model":
		return rfModel
	case "messages":
		return rfMessages
	case "stream":
		return rfStream
	case "stream_options":
		return rfStreamOptions
	case "max_tokens":
		return rfMaxTokens
	case "max_completion_tokens":
		return rfMaxCompletionTokens
	case "temperature":
		return rfTemperature
	case "top_p":
		return rfTopP
	case "top_k":
		return rfTopK
	case "min_p":
		return rfMinP
	case "repetition_penalty":
		return rfRepetitionPenalty
	case "frequency_penalty":
		return rfFrequencyPenalty
	case "presence_penalty":
		return rfPresencePenalty
	case "seed":
		return rfSeed
	case "stop":
		return rfStop
	case "n":
		return rfN
	case "response_format":
		return rfResponseFormat
	case "tools":
		return rfTools
	case "tool_choice":
		return rfToolChoice
	case "parallel_tool_calls":
		return rfParallelToolCalls
	case "functions":
		return rfFunctions
	case "function_call":
		return rfFunctionCall
	case "user":
		return rfUser
	case "safety_identifier":
		return rfSafetyIdentifier
	case "think":
		return rfThink
	case "thinking":
		return rfThinking
	case "chat_template_kwargs":
		return rfChatTemplateKwargs
	case "reasoning_effort":
		return rfReasoningEffort
	case "logprobs":
		return rfLogprobs
	case "top_logprobs":
		return rfTopLogprobs
	}
	return -1
}

// reqState is what the scan of a request found besides the spans of the
// scalar fields.
type reqState struct {
	f     [nReqFields]span
	tools int // number of tools written to p.tool
	// thinking and chat_template_kwargs, as scanned.
	thinking, kwargs canon.Think
	includeU         bool
	// tool_choice and response_format, rewritten into p.aux at these
	// offsets ([a, b)); empty when absent or writing nothing.
	tcA, tcB, rfA, rfB int
}

// request is PatchRequest.
func (p *openaiVLLM) request(c *sdk.Call, body []byte, req *canon.ChatRequest, out *sdk.Output) bool {
	// openai: a route other than chat has no request body.
	if route, ok := c.MetaBytes(abi.MetaRoute); ok && len(route) > 0 && string(route) != openai.RouteChat {
		return false
	}
	s := &p.s
	*s = scanner{b: body}
	p.msgs, p.tool, p.aux = p.msgs[:0], p.tool[:0], p.aux[:0]
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
			// A repeated field: fastjson's Visit keeps the last, Get the
			// first; the patch does not guess.
			if f[id].kind != kNone {
				return false
			}
			var v span
			var vok bool
			switch id {
			case rfMessages:
				v, vok = p.messages()
			case rfTools:
				v, vok = p.tools(&r)
			case rfToolChoice:
				v, vok = p.toolChoice(&r)
			case rfResponseFormat:
				v, vok = p.responseFormat(&r)
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

// reqVals are a request's scalar fields as openai's DecodeRequest reads
// them, checked by checkRequest.
type reqVals struct {
	maxTokens  int64
	floats     [6]float64 // temperature, top_p, min_p, repetition, frequency, presence penalties
	topK, seed int64
	stream     bool
	think      canon.Think // with the operator's default applied
	user, stop span
	parallel   span
}

// checkRequest checks the scalar fields as openai's DecodeRequest does:
// false for anything it would refuse or the patches do not take (n > 1,
// logprobs, the legacy function fields).
func checkRequest(c *sdk.Call, body []byte, r *reqState, v *reqVals) bool {
	f := &r.f
	// model: a non-empty string. Without escapes its bytes are its value,
	// which meta repeats.
	m := f[rfModel]
	if m.kind != kStr || m.flags&sfEsc != 0 || m.a == m.b {
		return false
	}
	if f[rfMessages].kind != kArr {
		return false
	}
	// decodeSampling.
	for _, id := range [...]int{rfMaxTokens, rfMaxCompletionTokens} {
		if f[id].null() {
			continue
		}
		n, ok := plainInt(body, f[id])
		if !ok || n < 1 || n > maxInt32 {
			return false
		}
		v.maxTokens = n
	}
	for i, fl := range [...]struct {
		id       int
		min, max float64
	}{
		{rfTemperature, 0, 2}, {rfTopP, 0, 1}, {rfMinP, 0, 1},
		{rfRepetitionPenalty, 1e-9, 1e9}, {rfFrequencyPenalty, -2, 2}, {rfPresencePenalty, -2, 2},
	} {
		if f[fl.id].null() {
			continue
		}
		x, ok := float(body, f[fl.id])
		if !ok || !(x >= fl.min && x <= fl.max) {
			return false
		}
		v.floats[i] = x
	}
	if !f[rfTopK].null() {
		n, ok := plainInt(body, f[rfTopK])
		if !ok || n < -1 || n > maxInt32 {
			return false
		}
		v.topK = n
	}
	if !f[rfSeed].null() {
		n, ok := plainInt(body, f[rfSeed])
		if !ok {
			return false
		}
		v.seed = n
	}
	if !f[rfN].null() {
		if n, ok := plainInt(body, f[rfN]); !ok || n != 1 {
			return false // n > 1 is left to the full path; n: 1 writes nothing
		}
	}
	// logprobs and top_logprobs are left to the full path (rare; the
	// adapters write them only when set).
	if !f[rfLogprobs].null() || !f[rfTopLogprobs].null() {
		return false
	}
	v.stop = f[rfStop]
	switch v.stop.kind {
	case kNone, kNull, kStr, kArr: // arrays are checked when written (appendStop)
	default:
		return false
	}
	// decodeStreaming.
	if !f[rfStream].null() {
		b, ok := boolOf(f[rfStream])
		if !ok {
			return false
		}
		v.stream = b
	}
	for _, id := range [...]int{rfSafetyIdentifier, rfUser} {
		u := f[id]
		if u.null() {
			continue
		}
		if u.kind != kStr {
			return false
		}
		if u.a != u.b {
			v.user = u // user wins over its successor safety_identifier
		}
	}
	// decodeTools: the legacy pair is left to the full path.
	if !f[rfFunctions].null() || !f[rfFunctionCall].null() {
		return false
	}
	v.parallel = f[rfParallelToolCalls]
	if !v.parallel.null() {
		if _, ok := boolOf(v.parallel); !ok {
			return false
		}
	}
	// decodeThinking: the first of think, thinking, chat_template_kwargs,
	// reasoning_effort that says something wins; all must be valid.
	think := canon.ThinkUnset
	if t := f[rfThink]; !t.null() {
		switch {
		case t.kind == kTrue:
			think = canon.ThinkOn
		case t.kind == kFalse:
			think = canon.ThinkOff
		case is(body, t, "low"):
			think = canon.ThinkLow
		case is(body, t, "medium"):
			think = canon.ThinkMedium
		case is(body, t, "high"):
			think = canon.ThinkHigh
		default:
			return false
		}
	}
	if think == canon.ThinkUnset {
		think = r.thinking
	}
	if think == canon.ThinkUnset {
		think = r.kwargs
	}
	if t := f[rfReasoningEffort]; !t.null() {
		var e canon.Think
		switch {
		case is(body, t, "none"):
			e = canon.ThinkOff
		case is(body, t, "minimal"), is(body, t, "low"):
			e = canon.ThinkLow
		case is(body, t, "medium"):
			e = canon.ThinkMedium
		case is(body, t, "high"), is(body, t, "xhigh"):
			e = canon.ThinkHigh
		default:
			return false
		}
		if think == canon.ThinkUnset {
			think = e
		}
	}
	if think == canon.ThinkUnset {
		think = sdk.ThinkDefault(c) // the operator's default, as the full path applies it
	}
	v.think = think
	return true
}

// writeRequest checks the scalar fields (checkRequest) and writes the body
// as vllm's EncodeRequest does.
func (p *openaiVLLM) writeRequest(c *sdk.Call, body []byte, r *reqState, req *canon.ChatRequest, out *sdk.Output) bool {
	var v reqVals
	if !checkRequest(c, body, r, &v) {
		return false
	}
	f, m := &r.f, r.f[rfModel]
	maxTokens, floats, topK, seed, stream := v.maxTokens, v.floats, v.topK, v.seed, v.stream
	stop, user, parallel, think := v.stop, v.user, v.parallel, v.think

	// vllm's EncodeRequest, in its order.
	b := append(out.Body, `{"model":`...)
	b = appendStr(b, body, m, &p.tmp)
	b = append(b, `,"messages":`...)
	b = append(b, p.msgs...)
	if stream {
		b = append(b, `,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":false}`...)
	}
	if maxTokens > 0 {
		b = appendInt(append(b, `,"max_tokens":`...), maxTokens)
	}
	b = optFloat(b, body, f, floats[:], 0, rfTemperature, `,"temperature":`)
	b = optFloat(b, body, f, floats[:], 1, rfTopP, `,"top_p":`)
	if !f[rfTopK].null() {
		b = appendInt(append(b, `,"top_k":`...), topK)
	}
	b = optFloat(b, body, f, floats[:], 2, rfMinP, `,"min_p":`)
	b = optFloat(b, body, f, floats[:], 3, rfRepetitionPenalty, `,"repetition_penalty":`)
	b = optFloat(b, body, f, floats[:], 4, rfFrequencyPenalty, `,"frequency_penalty":`)
	b = optFloat(b, body, f, floats[:], 5, rfPresencePenalty, `,"presence_penalty":`)
	if !f[rfSeed].null() {
		b = appendInt(append(b, `,"seed":`...), seed)
	}
	var ok bool
	if b, ok = appendStop(b, body, stop, &p.tmp); !ok {
		out.Body = b[:0]
		return false
	}
	if r.tools > 0 {
		b = append(append(b, `,"tools":`...), p.tool...)
	}
	b = append(b, p.aux[r.tcA:r.tcB]...)
	if !parallel.null() {
		b = append(b, `,"parallel_tool_calls":`...)
		b = jsonw.Bool(b, parallel.kind == kTrue)
	}
	b = append(b, p.aux[r.rfA:r.rfB]...)
	switch think {
	case canon.ThinkOn:
		b = append(b, `,"chat_template_kwargs":{"enable_thinking":true}`...)
	case canon.ThinkOff:
		b = append(b, `,"chat_template_kwargs":{"enable_thinking":false}`...)
	case canon.ThinkLow, canon.ThinkMedium, canon.ThinkHigh:
		b = append(b, `,"reasoning_effort":"`...)
		b = append(b, think...)
		b = append(b, `","chat_template_kwargs":{"enable_thinking":true}`...)
	}
	if user.kind == kStr {
		b = appendStr(append(b, `,"user":`...), body, user, &p.tmp)
	}
	out.Body = append(b, '}')
	out.SetMeta(abi.MetaPath, "/v1/chat/completions")
	out.SetMeta(abi.MetaMethod, "POST")
	out.SetMeta(abi.MetaContentType, "application/json")

	// The SDK reads req within this call only: the model may alias body.
	req.Model = unsafe.String(&body[m.a], m.b-m.a)
	req.Stream = stream
	req.IncludeUsage = r.includeU
	req.MaxTokens = int(maxTokens)
	return true
}

const maxInt32 = 1<<31 - 1

// optFloat writes a sampling number as the full path does (jsonw.Float of
// its value); a number already written that way is copied: strconv's
// shortest formatting is dear in the guest (2–3 % of a request call).
func optFloat(b, body []byte, f *[nReqFields]span, floats []float64, i, id int, key string) []byte {
	if f[id].null() {
		return b
	}
	return appendFloat(append(b, key...), body, f[id], floats[i])
}

// appendFloat appends x, the value of number span v of body, as jsonw.Float
// writes it: v's bytes when they are that already.
func appendFloat(b, body []byte, v span, x float64) []byte {
	if t := body[v.a:v.b]; shortestFloat(t) {
		return append(b, t...)
	}
	return jsonw.Float(b, x)
}

// appendStop writes stop as vllm does: the non-empty strings of a string
// or an array of strings, nothing when there are none.
func appendStop(b, body []byte, v span, tmp *[]byte) ([]byte, bool) {
	switch v.kind {
	case kStr:
		if v.a == v.b {
			return b, true
		}
		b = append(b, `,"stop":[`...)
		return append(appendStr(b, body, v, tmp), ']'), true
	case kArr:
	default:
		return b, true
	}
	s := scanner{b: body, i: v.a}
	mark := len(b)
	b = append(b, `,"stop":[`...)
	n := 0
	if !s.open('[') {
		return b, false
	}
	for more, ok := s.first(']'), true; more; {
		if s.peek() != '"' {
			return b, false
		}
		e, eok := s.str()
		if !eok {
			return b, false
		}
		if e.a != e.b {
			if n > 0 {
				b = append(b, ',')
			}
			b = appendStr(b, body, e, tmp)
			n++
		}
		if more, ok = s.next(']'); !ok {
			return b, false
		}
	}
	if n == 0 {
		return b[:mark], true
	}
	return append(b, ']'), true
}

// streamOptions reads stream_options: an object whose include_usage is a
// boolean or null.
func scanStreamOptions(s *scanner, r *reqState) (span, bool) {
	if s.peek() == 'n' {
		return s.lit("null", kNull)
	}
	a := s.i
	if !s.open('{') {
		return span{}, false
	}
	seen := false
	for more, ok := s.first('}'), true; more; {
		k, kok := s.key()
		if !kok {
			return span{}, false
		}
		v, vok := s.value()
		if !vok {
			return span{}, false
		}
		if string(k) == "include_usage" {
			if seen {
				return span{}, false
			}
			seen = true
			if !v.null() {
				b, bok := boolOf(v)
				if !bok {
					return span{}, false
				}
				r.includeU = b
			}
		}
		if more, ok = s.next('}'); !ok {
			return span{}, false
		}
	}
	return span{kind: kObj, a: a, b: s.i}, true
}

// thinking reads the Anthropic-style thinking switch (openai's
// decodeThinkingObject) into r.think.
func scanThinking(s *scanner, r *reqState) (span, bool) {
	switch s.peek() {
	case 'n':
		return s.lit("null", kNull)
	case 't':
		r.thinking = canon.ThinkOn
		return s.lit("true", kTrue)
	case 'f':
		r.thinking = canon.ThinkOff
		return s.lit("false", kFalse)
	}
	a := s.i
	var typ, budget span
	if !s.object(func(k []byte) bool {
		var dst *span
		switch string(k) {
		case "type":
			dst = &typ
		case "budget_tokens":
			dst = &budget
		}
		v, ok := s.value()
		return ok && (dst == nil || field(dst, v))
	}) {
		return span{}, false
	}
	t := canon.ThinkUnset
	if !budget.null() {
		n, ok := plainInt(s.b, budget)
		if !ok || n < 0 || n > maxInt32 {
			return span{}, false
		}
		if n > 0 {
			t = canon.ThinkOn
		}
	}
	switch {
	case typ.null():
	case is(s.b, typ, "enabled"), is(s.b, typ, "adaptive"):
		t = canon.ThinkOn
	case is(s.b, typ, "disabled"):
		t = canon.ThinkOff
	default:
		return span{}, false
	}
	r.thinking = t
	return span{kind: kObj, a: a, b: s.i}, true
}

// templateKwargs reads chat_template_kwargs.enable_thinking, or failing
// that .thinking (openai's decodeTemplateKwargs); the translator keeps no
// other kwarg, so neither does the patch.
func scanTemplateKwargs(s *scanner, r *reqState) (span, bool) {
	if s.peek() == 'n' {
		return s.lit("null", kNull)
	}
	a := s.i
	var en, th span
	if !s.object(func(k []byte) bool {
		var dst *span
		switch string(k) {
		case "enable_thinking":
			dst = &en
		case "thinking":
			dst = &th
		}
		v, ok := s.value()
		return ok && (dst == nil || field(dst, v))
	}) {
		return span{}, false
	}
	t := canon.ThinkUnset
	for _, v := range [...]span{en, th} {
		if v.null() {
			continue
		}
		b, ok := boolOf(v)
		if !ok {
			return span{}, false
		}
		t = canon.ThinkOff
		if b {
			t = canon.ThinkOn
		}
		break
	}
	r.kwargs = t
	return span{kind: kObj, a: a, b: s.i}, true
}
