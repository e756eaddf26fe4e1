package bundle

// The parts of a request the patch rewrites while scanning it: messages
// (openai's decodeMessages, vllm's writeMessage), tools (decodeToolList,
// vllm's tools), tool_choice and response_format. Each starts at the value
// (after the key's colon) and returns the value's span.

// field records v in *dst, failing on a repeated key.
func field(dst *span, v span) bool {
	if dst.kind != kNone {
		return false
	}
	*dst = v
	return true
}

// members scans the object at s.i, calling f with each key and the
// scanner positioned at its value; f must consume the value. keys that f
// does not want are skipped by f returning false for handled.
func (s *scanner) object(f func(k []byte) bool) bool {
	if !s.open('{') {
		return false
	}
	for more, ok := s.first('}'), true; more; {
		k, kok := s.key()
		if !kok || !f(k) {
			return false
		}
		if more, ok = s.next('}'); !ok {
			return false
		}
	}
	return true
}

// messages writes the messages array to p.msgs.
func (p *openaiVLLM) messages() (span, bool) {
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
		if !p.message() {
			return span{}, false
		}
		if more, ok = s.next(']'); !ok {
			return span{}, false
		}
	}
	p.msgs = append(p.msgs, ']')
	return span{kind: kArr, a: a, b: s.i}, true
}

// message writes one message.
func (p *openaiVLLM) message() bool {
	s := &p.s
	var role, content, name, toolCalls, toolCallID, reasoningContent, reasoning, functionCall span
	p.text, p.call = p.text[:0], p.call[:0]
	nCalls := 0
	ok := s.object(func(k []byte) bool {
		var dst *span
		switch string(k) {
		case "role":
			dst = &role
		case "content":
			if s.peek() == '[' {
				a := s.i
				if content.kind != kNone || !p.parts() {
					return false
				}
				content = span{kind: kArr, a: a, b: s.i}
				return true
			}
			dst = &content
		case "name":
			dst = &name
		case "tool_calls":
			if s.peek() == '[' {
				a := s.i
				n, ok := p.toolCalls()
				if toolCalls.kind != kNone || !ok {
					return false
				}
				toolCalls, nCalls = span{kind: kArr, a: a, b: s.i}, n
				return true
			}
			dst = &toolCalls
		case "tool_call_id":
			dst = &toolCallID
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
	b, body := p.msgs, s.b
	var r string
	switch {
	case is(body, role, "system"), is(body, role, "developer"):
		r = "system"
	case is(body, role, "user"):
		r = "user"
	case is(body, role, "assistant"):
		r = "assistant"
	case is(body, role, "tool"):
		r = "tool"
	default:
		return false // absent, "function" (legacy), unknown
	}
	assistant := r == "assistant"
	empty := true
	switch content.kind {
	case kNone, kNull:
		if !assistant {
			return false // content is required
		}
	case kStr:
		empty = content.a == content.b
	case kArr:
		empty = len(p.text) == 0
	default:
		return false
	}
	switch name.kind {
	case kNone, kNull, kStr:
	default:
		return false
	}
	var reason span
	if assistant {
		switch toolCalls.kind {
		case kNone, kNull:
			if !functionCall.null() {
				return false // legacy function_call
			}
		case kArr:
		default:
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
	} else {
		nCalls = 0
	}
	if r == "tool" {
		switch toolCallID.kind {
		case kNone, kNull, kStr:
		default:
			return false
		}
	}

	b = append(b, `{"role":"`...)
	b = append(b, r...)
	b = append(b, `","content":`...)
	switch {
	case assistant && nCalls > 0 && empty:
		b = append(b, "null"...)
	case content.kind == kStr:
		b = appendStr(b, body, content, &p.tmp)
	default:
		b = append(append(append(b, '"'), p.text...), '"')
	}
	if name.kind == kStr && name.a != name.b {
		b = appendStr(append(b, `,"name":`...), body, name, &p.tmp)
	}
	if reason.kind == kStr {
		b = appendStr(append(b, `,"reasoning":`...), body, reason, &p.tmp)
	}
	if nCalls > 0 {
		b = append(append(b, `,"tool_calls":`...), p.call...)
	}
	if r == "tool" {
		b = append(b, `,"tool_call_id":`...)
		if toolCallID.kind == kStr {
			b = appendStr(b, body, toolCallID, &p.tmp)
		} else {
			b = append(b, `""`...)
		}
	}
	p.msgs = append(b, '}')
	return true
}

// parts joins an array of text (and refusal) parts into p.text, escaped;
// any other part type is left to the full path.
func (p *openaiVLLM) parts() bool {
	s := &p.s
	if !s.open('[') {
		return false
	}
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
		p.text = appendStrInner(p.text, s.b, t, &p.tmp)
		if more, ok = s.next(']'); !ok {
			return false
		}
	}
	return true
}

// toolCalls writes an assistant message's tool calls to p.call and
// returns how many there are.
func (p *openaiVLLM) toolCalls() (int, bool) {
	s := &p.s
	if !s.open('[') {
		return 0, false
	}
	n := 0
	p.call = append(p.call, '[')
	for more, ok := s.first(']'), true; more; {
		var id, typ, fn, name, args span
		if !s.object(func(k []byte) bool {
			switch string(k) {
			case "id":
				v, ok := s.value()
				return ok && field(&id, v)
			case "type":
				v, ok := s.value()
				return ok && field(&typ, v)
			case "function":
				if fn.kind != kNone || s.peek() != '{' {
					return false
				}
				fn.kind = kObj
				return s.object(func(k []byte) bool {
					var dst *span
					switch string(k) {
					case "name":
						dst = &name
					case "arguments":
						dst = &args
					}
					v, ok := s.value()
					return ok && (dst == nil || field(dst, v))
				})
			}
			_, ok := s.value()
			return ok
		}) {
			return 0, false
		}
		if !(id.null() || id.kind == kStr) || !(typ.null() || is(s.b, typ, "function")) ||
			fn.kind != kObj || name.kind != kStr || !(args.null() || args.kind == kStr) {
			return 0, false
		}
		if n > 0 {
			p.call = append(p.call, ',')
		}
		p.call = append(p.call, `{"id":`...)
		if id.kind == kStr {
			p.call = appendStr(p.call, s.b, id, &p.tmp)
		} else {
			p.call = append(p.call, `""`...)
		}
		p.call = appendStr(append(p.call, `,"type":"function","function":{"name":`...), s.b, name, &p.tmp)
		p.call = append(p.call, `,"arguments":`...)
		if args.kind == kStr && args.a != args.b {
			p.call = appendStr(p.call, s.b, args, &p.tmp)
		} else {
			p.call = append(p.call, `"{}"`...) // vllm: vLLM json.loads them
		}
		p.call = append(p.call, "}}"...)
		n++
		if more, ok = s.next(']'); !ok {
			return 0, false
		}
	}
	p.call = append(p.call, ']')
	return n, true
}

// tools writes the tools array to p.tool.
func (p *openaiVLLM) tools(r *reqState) (span, bool) {
	s := &p.s
	switch s.peek() {
	case 'n':
		return s.lit("null", kNull)
	case '[':
	default:
		return span{}, false
	}
	a := s.i
	s.open('[')
	p.tool = append(p.tool, '[')
	for more, ok := s.first(']'), true; more; {
		var typ, fn, name, desc, params, strict span
		if !s.object(func(k []byte) bool {
			switch string(k) {
			case "type":
				v, ok := s.value()
				return ok && field(&typ, v)
			case "function":
				if fn.kind != kNone {
					return false
				}
				if s.peek() != '{' {
					v, ok := s.value()
					fn = v
					return ok
				}
				fn.kind = kObj
				return s.object(func(k []byte) bool {
					var dst *span
					switch string(k) {
					case "name":
						dst = &name
					case "description":
						dst = &desc
					case "parameters":
						dst = &params
					case "strict":
						dst = &strict
					}
					v, ok := s.value()
					return ok && (dst == nil || field(dst, v))
				})
			}
			_, ok := s.value()
			return ok
		}) {
			return span{}, false
		}
		if !(typ.null() || is(s.b, typ, "function")) || fn.kind != kObj ||
			name.kind != kStr || name.a == name.b ||
			!(desc.null() || desc.kind == kStr) || !(params.null() || params.kind == kObj) ||
			!(strict.null() || strict.kind == kTrue || strict.kind == kFalse) {
			return span{}, false
		}
		b := p.tool
		if r.tools > 0 {
			b = append(b, ',')
		}
		b = appendStr(append(b, `{"type":"function","function":{"name":`...), s.b, name, &p.tmp)
		if desc.kind == kStr && desc.a != desc.b {
			b = appendStr(append(b, `,"description":`...), s.b, desc, &p.tmp)
		}
		if params.kind == kObj {
			b = appendCompact(append(b, `,"parameters":`...), s.b, params)
		}
		if strict.kind == kTrue {
			b = append(b, `,"strict":true`...)
		}
		p.tool = append(b, "}}"...)
		r.tools++
		if more, ok = s.next(']'); !ok {
			return span{}, false
		}
	}
	p.tool = append(p.tool, ']')
	return span{kind: kArr, a: a, b: s.i}, true
}

// toolChoice writes tool_choice to p.aux (openai's decodeToolChoice).
func (p *openaiVLLM) toolChoice(r *reqState) (span, bool) {
	s := &p.s
	r.tcA = len(p.aux)
	defer func() { r.tcB = len(p.aux) }()
	switch s.peek() {
	case 'n':
		return s.lit("null", kNull)
	case '"':
		v, ok := s.str()
		if !ok || !(is(s.b, v, "auto") || is(s.b, v, "none") || is(s.b, v, "required")) {
			return span{}, false
		}
		p.aux = append(p.aux, `,"tool_choice":"`...)
		p.aux = append(append(p.aux, s.b[v.a:v.b]...), '"')
		return v, true
	case '{':
	default:
		return span{}, false
	}
	a := s.i
	var typ, fn, fnName, name span
	if !s.object(func(k []byte) bool {
		switch string(k) {
		case "type":
			v, ok := s.value()
			return ok && field(&typ, v)
		case "name":
			v, ok := s.value()
			return ok && field(&name, v)
		case "function":
			if fn.kind != kNone {
				return false
			}
			if s.peek() != '{' {
				v, ok := s.value()
				fn = v
				return ok
			}
			fn.kind = kObj
			return s.object(func(k []byte) bool {
				v, ok := s.value()
				return ok && (string(k) != "name" || field(&fnName, v))
			})
		}
		_, ok := s.value()
		return ok
	}) {
		return span{}, false
	}
	n := name
	if !typ.null() {
		if !is(s.b, typ, "function") {
			return span{}, false
		}
		if !fn.null() {
			if fn.kind != kObj {
				return span{}, false
			}
			n = fnName
		}
	}
	if n.kind != kStr || n.a == n.b {
		return span{}, false
	}
	p.aux = append(p.aux, `,"tool_choice":{"type":"function","function":{"name":`...)
	p.aux = append(appendStr(p.aux, s.b, n, &p.tmp), "}}"...)
	return span{kind: kObj, a: a, b: s.i}, true
}

// Fixed vllm fragments.
const jsonObjectSchema = `{"type":"json_schema","json_schema":{"name":"json_response","schema":{"type":"object"}}}`

// responseFormat writes response_format to p.aux (openai's
// decodeResponseFormat, vllm's response_format).
func (p *openaiVLLM) responseFormat(r *reqState) (span, bool) {
	s := &p.s
	r.rfA = len(p.aux)
	defer func() { r.rfB = len(p.aux) }()
	switch s.peek() {
	case 'n':
		return s.lit("null", kNull)
	case '{':
	default:
		return span{}, false
	}
	a := s.i
	var typ, js, name, schema, strict span
	if !s.object(func(k []byte) bool {
		switch string(k) {
		case "type":
			v, ok := s.value()
			return ok && field(&typ, v)
		case "json_schema":
			if js.kind != kNone {
				return false
			}
			if s.peek() != '{' {
				v, ok := s.value()
				js = v
				return ok
			}
			js.kind = kObj
			return s.object(func(k []byte) bool {
				var dst *span
				switch string(k) {
				case "name":
					dst = &name
				case "schema":
					dst = &schema
				case "strict":
					dst = &strict
				}
				v, ok := s.value()
				return ok && (dst == nil || field(dst, v))
			})
		}
		_, ok := s.value()
		return ok
	}) {
		return span{}, false
	}
	switch {
	case is(s.b, typ, "text"):
		// vLLM's default: nothing to send.
	case is(s.b, typ, "json_object"):
		p.aux = append(p.aux, `,"response_format":`+jsonObjectSchema...)
	case is(s.b, typ, "json_schema"):
		if js.kind != kObj || !(name.null() || name.kind == kStr) ||
			!(schema.null() || schema.kind == kObj || schema.kind == kTrue || schema.kind == kFalse) ||
			!(strict.null() || strict.kind == kTrue || strict.kind == kFalse) {
			return span{}, false
		}
		b := append(p.aux, `,"response_format":{"type":"json_schema","json_schema":{"name":`...)
		if name.kind == kStr && name.a != name.b {
			b = appendStr(b, s.b, name, &p.tmp)
		} else {
			b = append(b, `"response"`...)
		}
		b = append(b, `,"schema":`...)
		if schema.null() {
			b = append(b, `{"type":"object"}`...)
		} else {
			b = appendCompact(b, s.b, schema)
		}
		if strict.kind == kTrue {
			b = append(b, `,"strict":true`...)
		}
		p.aux = append(b, "}}"...)
	default:
		return span{}, false
	}
	return span{kind: kObj, a: a, b: s.i}, true
}
