package fakellm

import (
	"bufio"
	"encoding/base64"
	"encoding/binary"
	"math"
	"net"
	"sort"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"
)

// The vLLM engine: vLLM's OpenAI-compatible server (vllm serve), as of the
// 0.10-0.11 releases, with the fields newer releases added where they are
// harmless (reasoning next to reasoning_content, refusal/annotations/...).

func (s *Server) handleVLLM(ctx *fasthttp.RequestCtx) {
	switch string(ctx.Path()) {
	case "/health":
		if s.vllmMethod(ctx, fasthttp.MethodGet) {
			ctx.SetStatusCode(fasthttp.StatusOK)
		}
	case "/ping":
		if ctx.IsGet() || ctx.IsPost() {
			ctx.SetStatusCode(fasthttp.StatusOK)
		} else {
			vllmDetail(ctx, fasthttp.StatusMethodNotAllowed, "Method Not Allowed")
		}
	case "/version":
		if s.vllmMethod(ctx, fasthttp.MethodGet) {
			b := appendJSONString(append([]byte(nil), `{"version":`...), s.cfg.Version)
			writeJSON(ctx, fasthttp.StatusOK, append(b, '}'))
		}
	case "/metrics":
		if s.vllmMethod(ctx, fasthttp.MethodGet) {
			s.serveMetrics(ctx)
		}
	case "/v1/models":
		if s.vllmMethod(ctx, fasthttp.MethodGet) {
			s.vllmModels(ctx)
		}
	case "/v1/chat/completions":
		if s.vllmMethod(ctx, fasthttp.MethodPost) {
			s.vllmChat(ctx)
		}
	case "/v1/completions":
		if s.vllmMethod(ctx, fasthttp.MethodPost) {
			s.vllmCompletions(ctx)
		}
	case "/v1/embeddings":
		if s.vllmMethod(ctx, fasthttp.MethodPost) {
			s.vllmEmbeddings(ctx)
		}
	case "/tokenize":
		if s.vllmMethod(ctx, fasthttp.MethodPost) {
			s.vllmTokenize(ctx)
		}
	case "/detokenize":
		if s.vllmMethod(ctx, fasthttp.MethodPost) {
			s.vllmDetokenize(ctx)
		}
	case "/v1/rerank", "/rerank", "/v2/rerank":
		if s.vllmMethod(ctx, fasthttp.MethodPost) {
			s.vllmRerank(ctx)
		}
	case "/v1/score", "/score":
		if s.vllmMethod(ctx, fasthttp.MethodPost) {
			s.vllmScore(ctx)
		}
	default:
		vllmDetail(ctx, fasthttp.StatusNotFound, "Not Found")
	}
}

// vllmMethod answers 405 as FastAPI does when the method is not m.
func (s *Server) vllmMethod(ctx *fasthttp.RequestCtx, m string) bool {
	if string(ctx.Method()) == m {
		return true
	}
	vllmDetail(ctx, fasthttp.StatusMethodNotAllowed, "Method Not Allowed")
	return false
}

// vllmDetail writes FastAPI's own error body, used for routing errors.
func vllmDetail(ctx *fasthttp.RequestCtx, status int, detail string) {
	b := appendJSONString(append([]byte(nil), `{"detail":`...), detail)
	writeJSON(ctx, status, append(b, '}'))
}

func writeJSON(ctx *fasthttp.RequestCtx, status int, body []byte) {
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(body)
}

// apiError is a request error with the HTTP status to answer.
type apiError struct {
	status int
	msg    string
	param  string
}

// writeVLLMError writes vLLM's ErrorResponse:
// {"error":{"message":...,"type":...,"param":...,"code":status}}.
func writeVLLMError(ctx *fasthttp.RequestCtx, e apiError) {
	typ := "BadRequestError"
	switch e.status {
	case fasthttp.StatusNotFound:
		typ = "NotFoundError"
	case fasthttp.StatusInternalServerError:
		typ = "InternalServerError"
	case fasthttp.StatusNotImplemented:
		typ = "NotImplementedError"
	}
	b := append(make([]byte, 0, 160), `{"error":{"message":`...)
	b = appendJSONString(b, e.msg)
	b = append(b, `,"type":"`...)
	b = append(b, typ...)
	b = append(b, `","param":`...)
	if e.param == "" {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, e.param)
	}
	b = append(b, `,"code":`...)
	b = appendInt(b, int64(e.status))
	b = append(b, "}}"...)
	writeJSON(ctx, e.status, b)
}

func badRequest(msg, param string) *apiError {
	return &apiError{status: fasthttp.StatusBadRequest, msg: msg, param: param}
}

// parseBody parses the JSON object in the request body. The caller must
// return the parser to s.parsers once done with v.
func (s *Server) parseBody(ctx *fasthttp.RequestCtx) (*fastjson.Parser, *fastjson.Value, *apiError) {
	p := s.parsers.Get()
	body := ctx.PostBody()
	v, err := p.ParseBytes(body)
	if err != nil {
		s.parsers.Put(p)
		if len(body) == 0 {
			return nil, nil, badRequest("Field required: request body is missing", "")
		}
		return nil, nil, badRequest("JSON decode error: "+err.Error(), "")
	}
	if v.Type() != fastjson.TypeObject {
		s.parsers.Put(p)
		return nil, nil, badRequest("Input should be a valid dictionary or object to extract fields from", "")
	}
	return p, v, nil
}

// vllmModel resolves the "model" field; unknown models are a 404.
func (s *Server) vllmModel(v *fastjson.Value) (*modelState, *apiError) {
	name := string(v.GetStringBytes("model"))
	ms := s.lookupModel(name)
	if ms == nil {
		return nil, &apiError{status: fasthttp.StatusNotFound, msg: "The model `" + name + "` does not exist.", param: "model"}
	}
	return ms, nil
}

// --- /v1/models ---------------------------------------------------------------

func (s *Server) vllmModels(ctx *fasthttp.RequestCtx) {
	now := time.Now().Unix()
	b := append(make([]byte, 0, 512*len(s.models)), `{"object":"list","data":[`...)
	for i, ms := range s.models {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = appendJSONString(b, ms.name)
		b = append(b, `,"object":"model","created":`...)
		b = appendInt(b, now)
		b = append(b, `,"owned_by":"vllm","root":`...)
		b = appendJSONString(b, ms.name)
		b = append(b, `,"parent":null,"max_model_len":`...)
		b = appendInt(b, int64(s.cfg.MaxModelLen))
		b = append(b, `,"permission":[{"id":"modelperm-`...)
		b = newID(b)
		b = append(b, `","object":"model_permission","created":`...)
		b = appendInt(b, now)
		b = append(b, `,"allow_create_engine":false,"allow_sampling":true,"allow_logprobs":true,`+
			`"allow_search_indices":false,"allow_view":true,"allow_fine_tuning":false,`+
			`"organization":"*","group":null,"is_blocking":false}]}`...)
	}
	writeJSON(ctx, fasthttp.StatusOK, append(b, "]}"...))
}

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
		return nil, badRequest("n > 1 is not supported by this server (fakellm)", "n")
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
	call, name := len(tools) > 0, ""
	required := false
	if choice != nil && choice.Type() != fastjson.TypeNull {
		switch choice.Type() {
		case fastjson.TypeString:
			switch string(choice.GetStringBytes()) {
			case "none":
				call = false
			case "required":
				required = true
			}
		case fastjson.TypeObject:
			name = string(choice.GetStringBytes("function", "name"))
			r.toolNamed = true
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

// vllmFault applies the request's fault draw. It returns false when the
// request has been answered (error or hang).
func (s *Server) vllmFault(ctx *fasthttp.RequestCtx, r *genRequest) bool {
	r.fault = s.faults.draw()
	switch r.fault {
	case faultError:
		writeVLLMError(ctx, apiError{status: fasthttp.StatusInternalServerError, msg: vllmFaultMessage})
		return false
	case faultHang:
		s.hang(ctx)
		return false
	}
	return true
}

// generate runs a non-streaming generation: it waits for a slot and then
// until the last of n tokens is due. It returns false if the request was
// cancelled meanwhile.
func (s *Server) generate(c *call, n int) bool {
	if !c.acquire() {
		return false
	}
	last := n - 1
	if last < 0 {
		last = 0
	}
	if !c.waitToken(last) {
		return false
	}
	c.tokenEmittedAt(c.tokenTime(0))
	return true
}

// vllmHeader renders the common start of every response object:
// {"id":"<prefix><id>","object":"<object>","created":N,"model":"m"
func vllmHeader(ctx *fasthttp.RequestCtx, prefix, object, model string) []byte {
	b := make([]byte, 0, 128+len(model))
	b = append(b, `{"id":"`...)
	b = append(b, prefix...)
	if h := ctx.Request.Header.Peek("X-Request-Id"); len(h) > 0 {
		b = appendJSONStringBody(b, string(h))
	} else {
		b = newID(b)
	}
	b = append(b, `","object":"`...)
	b = append(b, object...)
	b = append(b, `","created":`...)
	b = appendInt(b, time.Now().Unix())
	b = append(b, `,"model":`...)
	return appendJSONString(b, model)
}

func appendVLLMUsage(b []byte, prompt, completion int, details bool) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = appendInt(b, int64(prompt))
	b = append(b, `,"total_tokens":`...)
	b = appendInt(b, int64(prompt+completion))
	b = append(b, `,"completion_tokens":`...)
	b = appendInt(b, int64(completion))
	if details {
		b = append(b, `,"prompt_tokens_details":null`...)
	}
	return append(b, '}')
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
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
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
	b = append(b, `},"logprobs":null,"finish_reason":"`...)
	b = append(b, pl.finish...)
	b = append(b, `","stop_reason":null}],"service_tier":null,"system_fingerprint":null,"usage":`...)
	b = appendVLLMUsage(b, r.promptTokens, pl.completion, true)
	return append(b, `,"prompt_logprobs":null,"prompt_token_ids":null,"kv_transfer_params":null}`...)
}

// startStream sends a streaming response. For vLLM the headers go out at
// once (Starlette's StreamingResponse); Ollama sends them with the first
// chunk (gin).
func (s *Server) startStream(ctx *fasthttp.RequestCtx, sse bool, run func(w *bufio.Writer, conn net.Conn)) {
	ctx.SetStatusCode(fasthttp.StatusOK)
	if sse {
		ctx.SetContentType("text/event-stream; charset=utf-8")
		ctx.Response.ImmediateHeaderFlush = true
	} else {
		ctx.SetContentType("application/x-ndjson")
	}
	conn := ctx.Conn()
	s.activeStreams.Add(1)
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		defer s.activeStreams.Add(-1)
		run(w, conn)
	})
}

// streamer writes one chunk at a time and notices a vanished client.
type streamer struct {
	w    *bufio.Writer
	c    *call
	conn net.Conn
	bp   *[]byte
}

func (st *streamer) buf() []byte { return (*st.bp)[:0] }

// send writes b and flushes it to the client. It returns false when the
// client has gone.
func (st *streamer) send(b []byte) bool {
	*st.bp = b
	if _, err := st.w.Write(b); err != nil {
		st.c.cancelled = true
		return false
	}
	if err := st.w.Flush(); err != nil {
		st.c.cancelled = true
		return false
	}
	return true
}

// dropConn closes the connection mid-stream (fault injection).
func (st *streamer) dropConn() {
	st.c.cancelled = true
	_ = st.w.Flush()
	_ = st.conn.Close()
}

func dropPoint(r *genRequest, total int) int {
	if r.fault != faultDrop {
		return -1
	}
	return total / 2
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

	chunk := func(delta func(b []byte) []byte, finish string) bool {
		b := append(st.buf(), prefix...)
		b = append(b, `{"index":0,"delta":`...)
		b = delta(b)
		b = append(b, `,"logprobs":null,"finish_reason":`...)
		if finish == "" {
			b = append(b, "null}]"...)
		} else {
			b = append(b, '"')
			b = append(b, finish...)
			b = append(b, `","stop_reason":null}]`...)
		}
		if r.continuousUsage {
			b = append(b, `,"usage":`...)
			b = appendVLLMUsage(b, r.promptTokens, completion, false)
		}
		b = append(b, "}\n\n"...)
		return st.send(b)
	}

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
		if !chunk(func(b []byte) []byte {
			b = append(b, `{"content":`...)
			b = appendJSONString(b, tok)
			return append(b, '}')
		}, finishOf(last)) {
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
		b = appendVLLMUsage(b, r.promptTokens, completion, false)
		b = append(b, "}\n\n"...)
		if !st.send(b) {
			return
		}
	}
	st.send(append(st.buf(), "data: [DONE]\n\n"...))
}

// --- /v1/completions ----------------------------------------------------------

func (s *Server) vllmCompletions(ctx *fasthttp.RequestCtx) {
	p, v, e := s.parseBody(ctx)
	if e != nil {
		writeVLLMError(ctx, *e)
		return
	}
	reqs, e := s.parseVLLMCompletions(v)
	s.parsers.Put(p)
	if e != nil {
		writeVLLMError(ctx, *e)
		return
	}
	r := reqs[0]
	if !s.vllmFault(ctx, r) {
		return
	}
	plans := make([]*plan, len(reqs))
	prompt, longest := 0, 0
	for i, q := range reqs {
		plans[i] = s.makePlan(q)
		prompt += q.promptTokens
		longest = max(longest, plans[i].completion)
	}
	c := s.newCall(ctx, r.ms)
	hdr := vllmHeader(ctx, "cmpl-", "text_completion", r.ms.name)
	if r.stream {
		s.startStream(ctx, true, func(w *bufio.Writer, conn net.Conn) {
			s.vllmCompletionsStream(w, conn, c, reqs, plans, prompt, longest, hdr)
		})
		return
	}
	completion := 0
	for _, pl := range plans {
		completion += pl.completion
	}
	if !s.generate(c, longest) {
		c.finish(prompt, 0, "")
		s.drop(ctx) // cancelled: the client is gone or the server is closing
		return
	}
	if r.fault == faultDrop {
		c.cancelled = true
		c.finish(prompt, completion, "")
		s.drop(ctx)
		return
	}
	b := append(make([]byte, 0, 1024), hdr...)
	b = append(b, `,"choices":[`...)
	for i, pl := range plans {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = appendInt(b, int64(i))
		b = append(b, `,"text":"`...)
		if reqs[i].echoText != "" {
			b = appendJSONStringBody(b, reqs[i].echoText)
		}
		for _, t := range pl.content {
			b = appendJSONStringBody(b, t)
		}
		b = append(b, `","logprobs":null,"finish_reason":"`...)
		b = append(b, pl.finish...)
		b = append(b, `","stop_reason":null,"prompt_logprobs":null}`...)
	}
	b = append(b, `],"service_tier":null,"system_fingerprint":null,"usage":`...)
	b = appendVLLMUsage(b, prompt, completion, true)
	b = append(b, `,"kv_transfer_params":null}`...)
	c.finish(prompt, completion, plans[0].finish)
	writeJSON(ctx, fasthttp.StatusOK, b)
}

func (s *Server) parseVLLMCompletions(v *fastjson.Value) ([]*genRequest, *apiError) {
	ms, e := s.vllmModel(v)
	if e != nil {
		return nil, e
	}
	prompts, e := textInputs(v.Get("prompt"), "prompt")
	if e != nil {
		return nil, e
	}
	if n := v.GetInt("n"); n > 1 {
		return nil, badRequest("n > 1 is not supported by this server (fakellm)", "n")
	}
	echo := v.GetBool("echo")
	reqs := make([]*genRequest, len(prompts))
	for i, prompt := range prompts {
		r := &genRequest{ms: ms, reqModel: ms.name, stream: v.GetBool("stream"), seedText: prompt, continuation: true}
		r.promptTokens = countWords(prompt)
		// The completions API defaults max_tokens to 16.
		r.maxTokens = 16
		if e := s.vllmMaxTokens(v, r, "max_tokens"); e != nil {
			return nil, e
		}
		if e := s.vllmStreamOptions(v, r); e != nil {
			return nil, e
		}
		s.vllmResponseFormat(v, r, textSeed(ms.name, prompt))
		if echo {
			r.echoText = prompt
		}
		reqs[i] = r
	}
	return reqs, nil
}

// textInputs reads a prompt/input field: a string, a list of strings, a list
// of token ids or a list of token id lists (ids are rendered back to text).
func textInputs(x *fastjson.Value, field string) ([]string, *apiError) {
	if x == nil {
		return nil, badRequest("Field required: "+field, field)
	}
	switch x.Type() {
	case fastjson.TypeString:
		return []string{string(x.GetStringBytes())}, nil
	case fastjson.TypeArray:
		arr := x.GetArray()
		if len(arr) == 0 {
			return nil, badRequest("Input should be a non-empty list: "+field, field)
		}
		if arr[0].Type() == fastjson.TypeNumber {
			return []string{detokenize(intList(arr))}, nil
		}
		out := make([]string, 0, len(arr))
		for _, a := range arr {
			switch a.Type() {
			case fastjson.TypeString:
				out = append(out, string(a.GetStringBytes()))
			case fastjson.TypeArray:
				out = append(out, detokenize(intList(a.GetArray())))
			default:
				return nil, badRequest("Input should be a valid string or list: "+field, field)
			}
		}
		return out, nil
	}
	return nil, badRequest("Input should be a valid string or list: "+field, field)
}

func intList(arr []*fastjson.Value) []int {
	out := make([]int, 0, len(arr))
	for _, a := range arr {
		out = append(out, a.GetInt())
	}
	return out
}

func (s *Server) vllmCompletionsStream(w *bufio.Writer, conn net.Conn, c *call, reqs []*genRequest, plans []*plan,
	prompt, longest int, hdr []byte) {
	st := &streamer{w: w, c: c, conn: conn, bp: getBuf()}
	completion := 0
	defer func() {
		c.finish(prompt, completion, plans[0].finish)
		putBuf(st.bp)
	}()
	r := reqs[0]
	if !c.acquire() || !c.waitToken(0) {
		return
	}
	prefix := append(append([]byte("data: "), hdr...), `,"choices":[`...)
	chunk := func(index int, text string, finish string) bool {
		b := append(st.buf(), prefix...)
		b = append(b, `{"index":`...)
		b = appendInt(b, int64(index))
		b = append(b, `,"text":`...)
		b = appendJSONString(b, text)
		b = append(b, `,"logprobs":null,"finish_reason":`...)
		if finish == "" {
			b = append(b, "null"...)
		} else {
			b = append(b, '"')
			b = append(b, finish...)
			b = append(b, '"')
		}
		b = append(b, `,"stop_reason":null}]`...)
		if r.continuousUsage {
			b = append(b, `,"usage":`...)
			b = appendVLLMUsage(b, prompt, completion, false)
		}
		return st.send(append(b, "}\n\n"...))
	}
	c.tokenEmitted()
	dropAt := dropPoint(r, longest)
	// The prompts are generated as one batch: step j emits token j of each.
	for j := 0; j < longest; j++ {
		if j == dropAt {
			st.dropConn()
			return
		}
		if j > 0 && !c.waitToken(j) {
			return
		}
		for i, pl := range plans {
			if j >= len(pl.content) {
				continue
			}
			completion++
			finish := ""
			if j == len(pl.content)-1 && pl.finish == "length" {
				finish = "length"
			}
			if !chunk(i, pl.content[j], finish) {
				return
			}
			if j == len(pl.content)-1 && pl.finish != "length" {
				if !chunk(i, "", pl.finish) {
					return
				}
			}
		}
	}
	if r.includeUsage {
		b := append(st.buf(), prefix[:len(prefix)-len(`,"choices":[`)]...)
		b = append(b, `,"choices":[],"usage":`...)
		b = appendVLLMUsage(b, prompt, completion, false)
		if !st.send(append(b, "}\n\n"...)) {
			return
		}
	}
	st.send(append(st.buf(), "data: [DONE]\n\n"...))
}

// --- pooling endpoints: embeddings, rerank, score -----------------------------

// prefill runs a prompt-only request (embeddings, rerank, score): it holds a
// slot for the prefill time (TTFT). It returns false if cancelled; the
// request is then answered by the caller's fault handling or not at all.
func (s *Server) prefill(ctx *fasthttp.RequestCtx, ms *modelState, promptTokens int, fault faultKind) bool {
	c := s.newCall(ctx, ms)
	if !c.acquire() || !c.waitToken(0) {
		c.finish(promptTokens, 0, "")
		s.drop(ctx) // cancelled: the client is gone or the server is closing
		return false
	}
	if fault == faultDrop {
		c.cancelled = true
		c.finish(promptTokens, 0, "")
		s.drop(ctx)
		return false
	}
	c.finish(promptTokens, 0, "")
	return true
}

// poolingFault draws the fault of a pooling request; false when answered.
func (s *Server) poolingFault(ctx *fasthttp.RequestCtx, errf func()) (faultKind, bool) {
	f := s.faults.draw()
	switch f {
	case faultError:
		errf()
		return f, false
	case faultHang:
		s.hang(ctx)
		return f, false
	}
	return f, true
}

func (s *Server) vllmEmbeddings(ctx *fasthttp.RequestCtx) {
	p, v, e := s.parseBody(ctx)
	if e != nil {
		writeVLLMError(ctx, *e)
		return
	}
	defer s.parsers.Put(p)
	ms, e := s.vllmModel(v)
	if e != nil {
		writeVLLMError(ctx, *e)
		return
	}
	inputs, e := textInputs(v.Get("input"), "input")
	if e != nil {
		writeVLLMError(ctx, *e)
		return
	}
	dim := s.cfg.EmbeddingDim
	if d := v.GetInt("dimensions"); d > 0 {
		if d > dim {
			writeVLLMError(ctx, *badRequest("dimensions must not exceed the model's embedding size "+itoa(dim), "dimensions"))
			return
		}
		dim = d
	}
	b64 := string(v.GetStringBytes("encoding_format")) == "base64"
	prompt := 0
	for _, in := range inputs {
		prompt += countWords(in)
	}
	fault, ok := s.poolingFault(ctx, func() {
		writeVLLMError(ctx, apiError{status: fasthttp.StatusInternalServerError, msg: vllmFaultMessage})
	})
	if !ok || !s.prefill(ctx, ms, prompt, fault) {
		return
	}
	b := append(make([]byte, 0, 256+len(inputs)*dim*12), `{"id":"embd-`...)
	b = newID(b)
	b = append(b, `","object":"list","created":`...)
	b = appendInt(b, time.Now().Unix())
	b = append(b, `,"model":`...)
	b = appendJSONString(b, ms.name)
	b = append(b, `,"data":[`...)
	vec := make([]float32, s.cfg.EmbeddingDim)
	raw := make([]byte, 4*dim)
	for i, in := range inputs {
		embedding(vec, ms.name, in)
		out := normalized(vec[:dim])
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = appendInt(b, int64(i))
		b = append(b, `,"object":"embedding","embedding":`...)
		if b64 {
			for j, f := range out {
				binary.LittleEndian.PutUint32(raw[4*j:], math.Float32bits(f))
			}
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, raw)
			b = append(b, '"')
		} else {
			b = append(b, '[')
			for j, f := range out {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendPyFloat(b, float64(f))
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, `],"usage":`...)
	b = appendVLLMUsage(b, prompt, 0, true)
	writeJSON(ctx, fasthttp.StatusOK, append(b, '}'))
}

// normalized rescales v to unit length in place (after a dimensions cut).
func normalized(v []float32) []float32 {
	var n float64
	for _, f := range v {
		n += float64(f) * float64(f)
	}
	if n == 0 || math.Abs(n-1) < 1e-6 {
		return v
	}
	inv := 1 / math.Sqrt(n)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
	return v
}

func (s *Server) vllmRerank(ctx *fasthttp.RequestCtx) {
	p, v, e := s.parseBody(ctx)
	if e != nil {
		writeVLLMError(ctx, *e)
		return
	}
	defer s.parsers.Put(p)
	ms, e := s.vllmModel(v)
	if e != nil {
		writeVLLMError(ctx, *e)
		return
	}
	q := v.Get("query")
	if q == nil || q.Type() != fastjson.TypeString {
		writeVLLMError(ctx, *badRequest("Field required: query", "query"))
		return
	}
	query := string(q.GetStringBytes())
	docsV := v.GetArray("documents")
	if docsV == nil {
		writeVLLMError(ctx, *badRequest("Field required: documents", "documents"))
		return
	}
	docs := make([]string, len(docsV))
	for i, d := range docsV {
		if d.Type() == fastjson.TypeString {
			docs[i] = string(d.GetStringBytes())
		} else {
			docs[i] = string(d.GetStringBytes("text"))
		}
	}
	type result struct {
		index int
		score float64
	}
	results := make([]result, len(docs))
	prompt := 0
	for i, d := range docs {
		results[i] = result{i, relevance(ms.name, query, d)}
		prompt += countWords(query) + countWords(d)
	}
	sort.SliceStable(results, func(a, b int) bool { return results[a].score > results[b].score })
	if n := v.GetInt("top_n"); n > 0 && n < len(results) {
		results = results[:n]
	}
	fault, ok := s.poolingFault(ctx, func() {
		writeVLLMError(ctx, apiError{status: fasthttp.StatusInternalServerError, msg: vllmFaultMessage})
	})
	if !ok || !s.prefill(ctx, ms, prompt, fault) {
		return
	}
	b := append(make([]byte, 0, 512), `{"id":"rerank-`...)
	b = newID(b)
	b = append(b, `","model":`...)
	b = appendJSONString(b, ms.name)
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = appendInt(b, int64(prompt))
	b = append(b, `,"total_tokens":`...)
	b = appendInt(b, int64(prompt))
	b = append(b, `},"results":[`...)
	for i, res := range results {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = appendInt(b, int64(res.index))
		b = append(b, `,"document":{"text":`...)
		b = appendJSONString(b, docs[res.index])
		b = append(b, `},"relevance_score":`...)
		b = appendPyFloat(b, res.score)
		b = append(b, '}')
	}
	writeJSON(ctx, fasthttp.StatusOK, append(b, "]}"...))
}

func (s *Server) vllmScore(ctx *fasthttp.RequestCtx) {
	p, v, e := s.parseBody(ctx)
	if e != nil {
		writeVLLMError(ctx, *e)
		return
	}
	defer s.parsers.Put(p)
	ms, e := s.vllmModel(v)
	if e != nil {
		writeVLLMError(ctx, *e)
		return
	}
	k1, k2 := "text_1", "text_2"
	if v.Get(k1) == nil && v.Get("queries") != nil {
		k1, k2 = "queries", "documents"
	}
	left, e := textInputs(v.Get(k1), k1)
	if e != nil {
		writeVLLMError(ctx, *e)
		return
	}
	right, e := textInputs(v.Get(k2), k2)
	if e != nil {
		writeVLLMError(ctx, *e)
		return
	}
	if len(left) == 1 && len(right) > 1 {
		l := left[0]
		left = make([]string, len(right))
		for i := range left {
			left[i] = l
		}
	}
	if len(left) != len(right) {
		writeVLLMError(ctx, *badRequest("text_1 and text_2 must have the same length, or text_1 must be a single text", k1))
		return
	}
	prompt := 0
	for i := range left {
		prompt += countWords(left[i]) + countWords(right[i])
	}
	fault, ok := s.poolingFault(ctx, func() {
		writeVLLMError(ctx, apiError{status: fasthttp.StatusInternalServerError, msg: vllmFaultMessage})
	})
	if !ok || !s.prefill(ctx, ms, prompt, fault) {
		return
	}
	b := append(make([]byte, 0, 512), `{"id":"score-`...)
	b = newID(b)
	b = append(b, `","object":"list","created":`...)
	b = appendInt(b, time.Now().Unix())
	b = append(b, `,"model":`...)
	b = appendJSONString(b, ms.name)
	b = append(b, `,"data":[`...)
	for i := range left {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = appendInt(b, int64(i))
		b = append(b, `,"object":"score","score":`...)
		b = appendPyFloat(b, relevance(ms.name, left[i], right[i]))
		b = append(b, '}')
	}
	b = append(b, `],"usage":`...)
	b = appendVLLMUsage(b, prompt, 0, true)
	writeJSON(ctx, fasthttp.StatusOK, append(b, '}'))
}

// --- /tokenize, /detokenize ---------------------------------------------------

// Chat-template token ids added around each message: <|im_start|>, the role,
// a newline before the content and <|im_end|> (4 per message, matching the
// prompt token count of chat requests).
const (
	tokIMStart = 151644
	tokIMEnd   = 151645
	tokNewline = 198
)

func (s *Server) vllmTokenize(ctx *fasthttp.RequestCtx) {
	p, v, e := s.parseBody(ctx)
	if e != nil {
		writeVLLMError(ctx, *e)
		return
	}
	defer s.parsers.Put(p)
	if _, e := s.vllmModel(v); e != nil {
		writeVLLMError(ctx, *e)
		return
	}
	var ids []int
	switch {
	case v.Get("messages") != nil:
		for _, m := range v.GetArray("messages") {
			role := string(m.GetStringBytes("role"))
			ids = append(ids, tokIMStart, 1000+int(hashString(fnvOffset, role)%150000), tokNewline)
			ids = tokenIDs(ids, messageText(m.Get("content")))
			ids = append(ids, tokIMEnd)
		}
	case v.Get("prompt") != nil:
		ids = tokenIDs(ids, string(v.GetStringBytes("prompt")))
	default:
		writeVLLMError(ctx, *badRequest("Field required: prompt or messages", "prompt"))
		return
	}
	b := append(make([]byte, 0, 64+8*len(ids)), `{"count":`...)
	b = appendInt(b, int64(len(ids)))
	b = append(b, `,"max_model_len":`...)
	b = appendInt(b, int64(s.cfg.MaxModelLen))
	b = append(b, `,"tokens":[`...)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendInt(b, int64(id))
	}
	b = append(b, `],"token_strs":`...)
	if v.GetBool("return_token_strs") {
		b = append(b, '[')
		for i, id := range ids {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, detokenize([]int{id}))
		}
		b = append(b, ']')
	} else {
		b = append(b, "null"...)
	}
	writeJSON(ctx, fasthttp.StatusOK, append(b, '}'))
}

func (s *Server) vllmDetokenize(ctx *fasthttp.RequestCtx) {
	p, v, e := s.parseBody(ctx)
	if e != nil {
		writeVLLMError(ctx, *e)
		return
	}
	defer s.parsers.Put(p)
	if _, e := s.vllmModel(v); e != nil {
		writeVLLMError(ctx, *e)
		return
	}
	toks := v.Get("tokens")
	if toks == nil || toks.Type() != fastjson.TypeArray {
		writeVLLMError(ctx, *badRequest("Field required: tokens", "tokens"))
		return
	}
	b := appendJSONString(append([]byte(nil), `{"prompt":`...), detokenize(intList(toks.GetArray())))
	writeJSON(ctx, fasthttp.StatusOK, append(b, '}'))
}
