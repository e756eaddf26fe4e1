package fakellm

import (
	"bufio"
	"net"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"
)

// --- /v1/chat/completions -----------------------------------------------------

func (s *Server) parseVLLMChat(v *fastjson.Value) (*genRequest, *apiError) {
	ms, e := s.vllmModel(v)
	if e != nil {
		return nil, e
	}
	msgsV := v.Get("messages")
	if msgsV == nil || msgsV.Type() != fastjson.TypeArray {
		return nil, badRequest("Field required: messages", "messages")
	}
	r := &genRequest{ms: ms, reqModel: ms.name, stream: v.GetBool("stream")}
	if n := v.GetInt("n"); n > 1 {
		if n > 128 {
			return nil, badRequest("n must be at most 128", "n")
		}
		r.n = n
	}
	if jtype(v.Get("logprobs")) == fastjson.TypeTrue {
		r.logprobs = true
		r.topLogprobs = v.GetInt("top_logprobs")
		if r.topLogprobs < 0 || r.topLogprobs > 20 {
			// vLLM's --max-logprobs default is 20.
			return nil, badRequest("top_logprobs must be between 0 and 20", "top_logprobs")
		}
	} else if v.GetInt("top_logprobs") > 0 {
		return nil, badRequest("when using `top_logprobs`, `logprobs` must be set to true.", "top_logprobs")
	}
	var seedText string
	r.promptTokens, seedText = messageStats(msgsV.GetArray())
	r.seedText = seedText
	if e := s.vllmMaxTokens(v, r, "max_completion_tokens", "max_tokens"); e != nil {
		return nil, e
	}
	if e := s.vllmStreamOptions(v, r); e != nil {
		return nil, e
	}

	// reasoning
	think := s.cfg.DefaultThinking
	if kw := v.Get("chat_template_kwargs"); kw != nil {
		for _, k := range [...]string{"enable_thinking", "thinking"} {
			switch jtype(kw.Get(k)) {
			case fastjson.TypeTrue:
				think = true
			case fastjson.TypeFalse:
				think = false
			}
		}
	}
	if re := v.Get("reasoning_effort"); re != nil && re.Type() == fastjson.TypeString {
		think = string(re.GetStringBytes()) != "none"
	}
	r.think = think && ms.thinking
	r.hideThinking = jtype(v.Get("include_reasoning")) == fastjson.TypeFalse

	seed := textSeed(ms.name, seedText)
	s.vllmResponseFormat(v, r, seed)

	// tools
	tools := v.GetArray("tools")
	choice := v.Get("tool_choice")
	// A model that was just given a tool's result answers in text, as real
	// ones do, unless tool_choice forces another call.
	call, name := len(tools) > 0 && !lastRoleTool(v) && !toolTurnsUsed(v, s.cfg.ToolTurns), ""
	required := false
	if choice != nil && choice.Type() != fastjson.TypeNull {
		switch choice.Type() {
		case fastjson.TypeString:
			switch string(choice.GetStringBytes()) {
			case "none":
				call = false
			case "required":
				required, call = true, len(tools) > 0
			}
		case fastjson.TypeObject:
			name = string(choice.GetStringBytes("function", "name"))
			r.toolNamed, call = true, len(tools) > 0
		}
		if len(tools) == 0 && string(choice.GetStringBytes()) != "none" {
			return nil, badRequest("When using `tool_choice`, `tools` must be set.", "tool_choice")
		}
	}
	if call {
		tp, notFound := pickTool(tools, name, seed)
		if notFound {
			return nil, badRequest("The tool specified in `tool_choice` does not match any of the specified `tools`", "tool_choice")
		}
		r.tool = tp
		r.nullContent = !r.toolNamed && !required
	}
	return r, nil
}

// vllmMaxTokens reads the token limit (the first present of keys) and checks
// it against the context length as vLLM does.
func (s *Server) vllmMaxTokens(v *fastjson.Value, r *genRequest, keys ...string) *apiError {
	for _, k := range keys {
		x := v.Get(k)
		if x == nil || x.Type() == fastjson.TypeNull {
			continue
		}
		n, err := x.Int()
		if err != nil {
			return badRequest("Input should be a valid integer: "+k, k)
		}
		if n < 1 {
			return badRequest("max_tokens must be at least 1, got "+itoa(n)+".", k)
		}
		r.maxTokens = n
		break
	}
	limit := s.cfg.MaxModelLen
	if r.promptTokens >= limit {
		return badRequest("This model's maximum context length is "+itoa(limit)+" tokens. However, your request has "+
			itoa(r.promptTokens)+" input tokens. Please reduce the length of the input messages.", "")
	}
	if r.maxTokens > 0 && r.promptTokens+r.maxTokens > limit {
		return badRequest("'max_tokens' or 'max_completion_tokens' is too large: "+itoa(r.maxTokens)+
			". This model's maximum context length is "+itoa(limit)+" tokens and your request has "+
			itoa(r.promptTokens)+" input tokens ("+itoa(r.maxTokens)+" > "+itoa(limit)+" - "+itoa(r.promptTokens)+").",
			"max_tokens")
	}
	return nil
}

func (s *Server) vllmStreamOptions(v *fastjson.Value, r *genRequest) *apiError {
	so := v.Get("stream_options")
	if jtype(so) == fastjson.TypeNull {
		return nil
	}
	if !r.stream {
		return badRequest("Stream options can only be defined when `stream=True`.", "stream_options")
	}
	if so.Type() != fastjson.TypeObject {
		return badRequest("Input should be a valid dictionary: stream_options", "stream_options")
	}
	// vLLM's StreamOptions.include_usage defaults to true.
	r.includeUsage = jtype(so.Get("include_usage")) != fastjson.TypeFalse
	r.continuousUsage = r.includeUsage && so.GetBool("continuous_usage_stats")
	return nil
}

// vllmResponseFormat handles response_format json_object / json_schema and
// the vLLM-specific structured_outputs.json and guided_json.
func (s *Server) vllmResponseFormat(v *fastjson.Value, r *genRequest, seed uint64) {
	if rf := v.Get("response_format"); rf != nil && rf.Type() == fastjson.TypeObject {
		switch string(rf.GetStringBytes("type")) {
		case "json_object":
			r.jsonContent = answerJSON(seed, s.cfg.Tokens)
		case "json_schema":
			if schema := rf.Get("json_schema", "schema"); schema != nil && schema.Type() == fastjson.TypeObject {
				r.jsonContent = jsonFromSchema(schema, seed)
			} else {
				r.jsonContent = answerJSON(seed, s.cfg.Tokens)
			}
		}
	}
	for _, schema := range [...]*fastjson.Value{v.Get("structured_outputs", "json"), v.Get("guided_json")} {
		if schema == nil {
			continue
		}
		switch schema.Type() {
		case fastjson.TypeObject:
			r.jsonContent = jsonFromSchema(schema, seed)
		case fastjson.TypeString:
			var p fastjson.Parser
			if sv, err := p.ParseBytes(schema.GetStringBytes()); err == nil && sv.Type() == fastjson.TypeObject {
				r.jsonContent = jsonFromSchema(sv, seed)
			}
		}
	}
}

func (s *Server) vllmChat(ctx *fasthttp.RequestCtx) {
	p, v, e := s.parseBody(ctx)
	if e != nil {
		writeVLLMError(ctx, *e)
		return
	}
	r, e := s.parseVLLMChat(v)
	s.parsers.Put(p)
	if e != nil {
		writeVLLMError(ctx, *e)
		return
	}
	if !s.vllmFault(ctx, r) {
		return
	}
	pl := s.makePlan(r)
	c := s.newCall(ctx, r.ms)
	object := "chat.completion"
	if r.stream {
		object = "chat.completion.chunk"
	}
	hdr := vllmHeader(ctx, "chatcmpl-", object, r.ms.name)
	if r.stream {
		s.startStream(ctx, true, func(w *bufio.Writer, conn net.Conn) {
			s.vllmChatStream(w, conn, c, r, pl, hdr)
		})
		return
	}
	if !s.generate(c, pl.completion) {
		c.finish(r.promptTokens, 0, "")
		s.drop(ctx) // cancelled: the client is gone or the server is closing
		return
	}
	if r.fault == faultDrop {
		c.cancelled = true
		c.finish(r.promptTokens, pl.completion, "")
		s.drop(ctx)
		return
	}
	bp := getBuf()
	b := s.vllmChatBody(*bp, r, pl, hdr)
	c.finish(r.promptTokens, pl.completion, pl.finish)
	writeJSON(ctx, fasthttp.StatusOK, b)
	*bp = b
	putBuf(bp)
}

func appendPieces(b []byte, pieces []string) []byte {
	b = append(b, '"')
	for _, p := range pieces {
		b = appendJSONStringBody(b, p)
	}
	return append(b, '"')
}

func (s *Server) vllmChatBody(b []byte, r *genRequest, pl *plan, hdr []byte) []byte {
	b = append(b, hdr...)
	b = append(b, `,"choices":[`...)
	// n > 1: every choice is the same deterministic text.
	for i := range max(r.n, 1) {
		if i > 0 {
			b = append(b, ',')
		}
		b = s.vllmChoice(b, r, pl, i)
	}
	b = append(b, `],"service_tier":null,"system_fingerprint":null,"usage":`...)
	b = appendVLLMUsage(b, r.promptTokens, pl.completion*max(r.n, 1), true)
	return append(b, `,"prompt_logprobs":null,"prompt_token_ids":null,"kv_transfer_params":null}`...)
}

// vllmChoice writes choice i of a chat.completion.
func (s *Server) vllmChoice(b []byte, r *genRequest, pl *plan, i int) []byte {
	b = append(b, `{"index":`...)
	b = appendInt(b, int64(i))
	b = append(b, `,"message":{"role":"assistant","content":`...)
	switch {
	case pl.tool != nil && r.nullContent, len(pl.content) == 0 && len(pl.reasoning) > 0:
		b = append(b, "null"...)
	default:
		b = appendPieces(b, pl.content)
	}
	b = append(b, `,"refusal":null,"annotations":null,"audio":null,"function_call":null,"tool_calls":[`...)
	if pl.tool != nil {
		b = append(b, `{"id":"chatcmpl-tool-`...)
		b = newID(b)
		b = append(b, `","type":"function","function":{"name":`...)
		b = appendJSONString(b, pl.tool.name)
		b = append(b, `,"arguments":`...)
		b = appendJSONString(b, pl.toolArgsText())
		b = append(b, "}}"...)
	}
	b = append(b, `],"reasoning":`...)
	mark := len(b)
	if len(pl.reasoning) == 0 || r.hideThinking {
		b = append(b, "null"...)
	} else {
		b = appendPieces(b, pl.reasoning)
	}
	reasoning := b[mark:]
	b = append(b, `,"reasoning_content":`...)
	b = append(b, reasoning...)
	b = append(b, `},"logprobs":`...)
	if r.logprobs {
		b = append(b, `{"content":`...)
		b = append(appendLogprobList(b, pl.content, r.topLogprobs), '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"finish_reason":"`...)
	b = append(b, pl.finish...)
	return append(b, `","stop_reason":null}`...)
}

func (s *Server) vllmChatStream(w *bufio.Writer, conn net.Conn, c *call, r *genRequest, pl *plan, hdr []byte) {
	st := &streamer{w: w, c: c, conn: conn, bp: getBuf()}
	completion := 0
	defer func() {
		c.finish(r.promptTokens, completion, pl.finish)
		putBuf(st.bp)
	}()
	if !c.acquire() || !c.waitToken(0) {
		return
	}
	prefix := append(append([]byte("data: "), hdr...), `,"choices":[`...)

	choices := max(r.n, 1)
	// chunk sends one event per choice (n > 1: the same text for each);
	// lpTok, when logprobs were asked for, is the content token whose
	// logprobs the event carries.
	chunkLP := func(delta func(b []byte) []byte, finish, lpTok string, lp bool) bool {
		for i := range choices {
			b := append(st.buf(), prefix...)
			b = append(b, `{"index":`...)
			b = appendInt(b, int64(i))
			b = append(b, `,"delta":`...)
			b = delta(b)
			b = append(b, `,"logprobs":`...)
			if lp && r.logprobs {
				b = append(b, `{"content":[`...)
				b = append(appendTokenLogprob(b, lpTok, r.topLogprobs), "]}"...)
			} else {
				b = append(b, "null"...)
			}
			b = append(b, `,"finish_reason":`...)
			if finish == "" {
				b = append(b, "null}]"...)
			} else {
				b = append(b, '"')
				b = append(b, finish...)
				b = append(b, `","stop_reason":null}]`...)
			}
			if r.continuousUsage {
				b = append(b, `,"usage":`...)
				b = appendVLLMUsage(b, r.promptTokens, completion*choices, false)
			}
			b = append(b, "}\n\n"...)
			if !st.send(b) {
				return false
			}
		}
		return true
	}
	chunk := func(delta func(b []byte) []byte, finish string) bool { return chunkLP(delta, finish, "", false) }

	c.tokenEmitted()
	if !chunk(func(b []byte) []byte { return append(b, `{"role":"assistant","content":""}`...) }, "") {
		return
	}
	dropAt := dropPoint(r, pl.completion)
	i := 0 // token index
	// next waits for token i and reports whether streaming goes on; last
	// tells whether token i is the final one of a truncated generation.
	next := func() (ok, last bool) {
		if i == dropAt {
			st.dropConn()
			return false, false
		}
		if i > 0 && !c.waitToken(i) {
			return false, false
		}
		completion++
		i++
		return true, i == pl.completion && pl.finish == "length"
	}
	finishOf := func(last bool) string {
		if last {
			return "length"
		}
		return ""
	}
	for _, tok := range pl.reasoning {
		ok, last := next()
		if !ok {
			return
		}
		if r.hideThinking && !last {
			continue
		}
		delta := func(b []byte) []byte {
			if r.hideThinking {
				return append(b, `{}`...)
			}
			b = append(b, `{"reasoning_content":`...)
			b = appendJSONString(b, tok)
			b = append(b, `,"reasoning":`...)
			b = appendJSONString(b, tok)
			return append(b, '}')
		}
		if !chunk(delta, finishOf(last)) {
			return
		}
	}
	for _, tok := range pl.content {
		ok, last := next()
		if !ok {
			return
		}
		if !chunkLP(func(b []byte) []byte {
			b = append(b, `{"content":`...)
			b = appendJSONString(b, tok)
			return append(b, '}')
		}, finishOf(last), tok, true) {
			return
		}
	}
	if pl.tool != nil {
		ok, last := next()
		if !ok {
			return
		}
		if !chunk(func(b []byte) []byte {
			b = append(b, `{"tool_calls":[{"id":"chatcmpl-tool-`...)
			b = newID(b)
			b = append(b, `","type":"function","index":0,"function":{"name":`...)
			b = appendJSONString(b, pl.tool.name)
			return append(b, `,"arguments":""}}]}`...)
		}, finishOf(last)) {
			return
		}
		for _, piece := range pl.tool.pieces[:pl.toolArgs] {
			ok, last := next()
			if !ok {
				return
			}
			if !chunk(func(b []byte) []byte {
				b = append(b, `{"tool_calls":[{"index":0,"function":{"arguments":`...)
				b = appendJSONString(b, piece)
				return append(b, "}}]}"...)
			}, finishOf(last)) {
				return
			}
		}
	}
	if pl.finish != "length" {
		delta := `{"content":""}`
		if pl.tool != nil {
			delta = `{}`
		}
		if !chunk(func(b []byte) []byte { return append(b, delta...) }, pl.finish) {
			return
		}
	}
	if r.includeUsage {
		b := append(st.buf(), prefix[:len(prefix)-len(`,"choices":[`)]...)
		b = append(b, `,"choices":[],"usage":`...)
		b = appendVLLMUsage(b, r.promptTokens, completion*choices, false)
		b = append(b, "}\n\n"...)
		if !st.send(b) {
			return
		}
	}
	// Uncounted before the end marker goes out: a gateway may start the
	// next request on this slot as soon as it reads the marker (see
	// call.uncount).
	st.c.uncount()
	st.send(append(st.buf(), "data: [DONE]\n\n"...))
}
