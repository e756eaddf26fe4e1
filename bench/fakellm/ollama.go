package fakellm

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"
)

// The Ollama engine: Ollama's native API (api/types.go, server/routes.go of
// the 0.12 releases). Streams are NDJSON; errors are {"error":"..."}.

const ollamaKeepAlive = 5 * time.Minute

func (s *Server) handleOllama(ctx *fasthttp.RequestCtx) {
	get := ctx.IsGet() || ctx.IsHead()
	post := ctx.IsPost()
	switch path := string(ctx.Path()); {
	case path == "/" && get:
		ctx.SetStatusCode(fasthttp.StatusOK)
		ctx.SetContentType("text/plain; charset=utf-8")
		ctx.SetBodyString("Ollama is running")
	case path == "/api/version" && get:
		b := appendJSONString(append([]byte(nil), `{"version":`...), s.cfg.Version)
		writeOllamaJSON(ctx, fasthttp.StatusOK, append(b, '}'))
	case path == "/api/tags" && get:
		s.ollamaTags(ctx)
	case path == "/api/ps" && ctx.IsGet():
		s.ollamaPS(ctx)
	case path == "/api/show" && post:
		s.ollamaShow(ctx)
	case path == "/api/chat" && post:
		s.ollamaGenerate(ctx, true)
	case path == "/api/generate" && post:
		s.ollamaGenerate(ctx, false)
	case path == "/api/embed" && post:
		s.ollamaEmbed(ctx)
	case path == "/api/embeddings" && post:
		s.ollamaEmbeddings(ctx)
	default:
		// gin answers unknown routes and wrong methods alike
		ctx.SetStatusCode(fasthttp.StatusNotFound)
		ctx.SetContentType("text/plain")
		ctx.SetBodyString("404 page not found")
	}
}

func writeOllamaJSON(ctx *fasthttp.RequestCtx, status int, body []byte) {
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json; charset=utf-8")
	ctx.SetBody(body)
}

func writeOllamaError(ctx *fasthttp.RequestCtx, status int, msg string) {
	b := appendJSONString(append(make([]byte, 0, 32+len(msg)), `{"error":`...), msg)
	writeOllamaJSON(ctx, status, append(b, '}'))
}

// ollamaParse parses the body; it answers the error itself.
func (s *Server) ollamaParse(ctx *fasthttp.RequestCtx) (*fastjson.Parser, *fastjson.Value, bool) {
	body := ctx.PostBody()
	if len(body) == 0 {
		writeOllamaError(ctx, fasthttp.StatusBadRequest, "missing request body")
		return nil, nil, false
	}
	p := s.parsers.Get()
	v, err := p.ParseBytes(body)
	if err != nil {
		s.parsers.Put(p)
		writeOllamaError(ctx, fasthttp.StatusBadRequest, "invalid character in request body: "+err.Error())
		return nil, nil, false
	}
	if v.Type() != fastjson.TypeObject {
		s.parsers.Put(p)
		writeOllamaError(ctx, fasthttp.StatusBadRequest, "json: cannot unmarshal "+v.Type().String()+" into Go value")
		return nil, nil, false
	}
	return p, v, true
}

// ollamaModel resolves a model name ("x" or "x:latest"); it answers the
// error itself.
func (s *Server) ollamaModel(ctx *fasthttp.RequestCtx, name string) *modelState {
	if name == "" {
		writeOllamaError(ctx, fasthttp.StatusBadRequest, "model is required")
		return nil
	}
	ms := s.byName[name]
	if ms == nil {
		writeOllamaError(ctx, fasthttp.StatusNotFound, "model '"+name+"' not found")
	}
	return ms
}

// --- /api/chat and /api/generate ----------------------------------------------

type ollamaRequest struct {
	genRequest
	chat bool
	load bool // no messages / empty prompt: Ollama only loads the model
}

func (s *Server) parseOllama(ctx *fasthttp.RequestCtx, v *fastjson.Value, chat bool) (*ollamaRequest, bool) {
	name := string(v.GetStringBytes("model"))
	ms := s.ollamaModel(ctx, name)
	if ms == nil {
		return nil, false
	}
	r := &ollamaRequest{chat: chat}
	r.ms, r.reqModel = ms, name
	r.stream = jtype(v.Get("stream")) != fastjson.TypeFalse
	if chat {
		msgs := v.GetArray("messages")
		if len(msgs) == 0 {
			r.load = true
			return r, true
		}
		r.promptTokens, r.seedText = messageStats(msgs)
	} else {
		prompt := string(v.GetStringBytes("prompt"))
		if prompt == "" {
			r.load = true
			return r, true
		}
		r.seedText = prompt
		r.promptTokens = 4 + countWords(prompt)
		if v.GetBool("raw") { // no template: the text continues the prompt
			r.promptTokens -= 4
			r.continuation = true
		}
		if sys := v.GetStringBytes("system"); len(sys) > 0 {
			r.promptTokens += 4 + countWordsBytes(sys)
		}
	}
	// logprobs: Ollama >= 0.12.11 (api.ChatRequest.Logprobs, TopLogprobs).
	if jtype(v.Get("logprobs")) == fastjson.TypeTrue {
		r.logprobs = true
		r.topLogprobs = min(max(v.GetInt("top_logprobs"), 0), 20)
	}
	if opts := v.Get("options"); opts != nil {
		if n := opts.GetInt("num_predict"); n > 0 {
			r.maxTokens = n
		}
		if n := opts.GetInt("num_ctx"); n > 0 {
			// Ollama reloads the model at the num_ctx asked for, at
			// most the model's trained context (it warns and caps).
			ms.numCtx.Store(int64(min(n, s.cfg.MaxModelLen)))
		}
	}
	// The request runs at the loaded context: Ollama drops the oldest
	// messages of a longer prompt (truncate, default true) or, told not
	// to, refuses it with the words of its runner.
	if limit := int(ms.numCtx.Load()); r.promptTokens > limit {
		if jtype(v.Get("truncate")) == fastjson.TypeFalse {
			writeOllamaError(ctx, fasthttp.StatusBadRequest, "the input length exceeds the context length")
			return nil, false
		}
		r.promptTokens = limit
	}

	think := s.cfg.DefaultThinking
	thinkSet := false
	switch t := v.Get("think"); jtype(t) {
	case fastjson.TypeTrue:
		think, thinkSet = true, true
	case fastjson.TypeFalse:
		think, thinkSet = false, true
	case fastjson.TypeString:
		switch string(t.GetStringBytes()) {
		case "high", "medium", "low", "max":
			think, thinkSet = true, true
		default:
			writeOllamaError(ctx, fasthttp.StatusBadRequest,
				"invalid think value: "+strconv.Quote(string(t.GetStringBytes()))+" (must be \"high\", \"medium\", \"low\", true, or false)")
			return nil, false
		}
	}
	if !ms.thinking {
		if thinkSet && think {
			writeOllamaError(ctx, fasthttp.StatusBadRequest, strconv.Quote(name)+" does not support thinking")
			return nil, false
		}
		think = false
	}
	r.think = think

	seed := textSeed(ms.name, r.seedText)
	if f := v.Get("format"); f != nil {
		switch f.Type() {
		case fastjson.TypeString:
			if string(f.GetStringBytes()) == "json" {
				r.jsonContent = answerJSON(seed, s.cfg.Tokens)
			}
		case fastjson.TypeObject:
			r.jsonContent = jsonFromSchema(f, seed)
		}
	}
	if chat && !lastRoleTool(v) && !toolTurnsUsed(v, s.cfg.ToolTurns) { // after a tool's result a model answers in text
		if tp, _ := pickTool(v.GetArray("tools"), "", seed); tp != nil {
			r.tool = tp
		}
	}
	return r, true
}

func (s *Server) ollamaGenerate(ctx *fasthttp.RequestCtx, chat bool) {
	p, v, ok := s.ollamaParse(ctx)
	if !ok {
		return
	}
	r, ok := s.parseOllama(ctx, v, chat)
	s.parsers.Put(p)
	if !ok {
		return
	}
	if r.load {
		r.ms.lastUsed.Store(time.Now().UnixNano())
		b := s.ollamaChunkStart(nil, r)
		if chat {
			b = append(b, `"message":{"role":"assistant","content":""},"done":true,"done_reason":"load"}`...)
		} else {
			b = append(b, `"response":"","done":true,"done_reason":"load"}`...)
		}
		writeOllamaJSON(ctx, fasthttp.StatusOK, b)
		return
	}
	r.fault = s.faults.draw()
	switch r.fault {
	case faultError:
		writeOllamaError(ctx, fasthttp.StatusInternalServerError, ollamaFaultMessage)
		return
	case faultHang:
		s.hang(ctx)
		return
	}
	pl := s.makePlan(&r.genRequest)
	if pl.finish == "tool_calls" {
		pl.finish = "stop" // Ollama has no tool_calls done reason
	}
	c := s.newCall(ctx, r.ms)
	if r.stream {
		s.startStream(ctx, false, func(w *bufio.Writer, conn net.Conn) {
			s.ollamaStream(w, conn, c, r, pl)
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
	b := s.ollamaChunkStart(*bp, r)
	if chat {
		b = append(b, `"message":{"role":"assistant","content":`...)
		b = appendPieces(b, pl.content)
		if len(pl.reasoning) > 0 {
			b = append(b, `,"thinking":`...)
			b = appendPieces(b, pl.reasoning)
		}
		b = appendOllamaToolCalls(b, pl)
		b = append(b, `},`...)
		if r.logprobs {
			b = append(b, `"logprobs":`...)
			b = append(appendLogprobList(b, pl.content, r.topLogprobs), ',')
		}
	} else {
		b = append(b, `"response":`...)
		b = appendPieces(b, pl.content)
		if len(pl.reasoning) > 0 {
			b = append(b, `,"thinking":`...)
			b = appendPieces(b, pl.reasoning)
		}
		b = append(b, ',')
	}
	end := time.Now()
	b = s.ollamaDone(b, r, pl, c, c.tokenTime(0), end)
	c.finish(r.promptTokens, pl.completion, pl.finish)
	writeOllamaJSON(ctx, fasthttp.StatusOK, b)
	*bp = b
	putBuf(bp)
}

// ollamaChunkStart renders {"model":"m","created_at":"...",
func (s *Server) ollamaChunkStart(b []byte, r *ollamaRequest) []byte {
	b = append(b, `{"model":`...)
	b = appendJSONString(b, r.reqModel)
	b = append(b, `,"created_at":`...)
	b = appendRFC3339Nano(b, time.Now().UTC())
	return append(b, ',')
}

// appendOllamaToolCalls appends ,"tool_calls":[...] when the plan calls a
// tool whose arguments were generated completely (a cut-off call does not
// parse, so Ollama would not report it).
func appendOllamaToolCalls(b []byte, pl *plan) []byte {
	if pl.tool == nil || pl.toolArgs != len(pl.tool.pieces) {
		return b
	}
	b = append(b, `,"tool_calls":[{"id":`...)
	b = appendJSONString(b, ollamaToolCallID())
	b = append(b, `,"function":{"index":0,"name":`...)
	b = appendJSONString(b, pl.tool.name)
	b = append(b, `,"arguments":`...)
	b = append(b, pl.tool.args...)
	return append(b, "}}]"...)
}

// ollamaDone renders the end of the final object: done, done_reason,
// context (generate) and the metrics, in api.ChatResponse field order.
func (s *Server) ollamaDone(b []byte, r *ollamaRequest, pl *plan, c *call, first, end time.Time) []byte {
	b = append(b, `"done":true,"done_reason":"`...)
	b = append(b, pl.finish...)
	b = append(b, '"')
	if !r.chat {
		b = append(b, `,"context":[`...)
		ids := tokenIDs(make([]int, 0, r.promptTokens+pl.completion), r.seedText)
		for _, t := range pl.content {
			ids = tokenIDs(ids, t)
		}
		for i, id := range ids {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendInt(b, int64(id))
		}
		b = append(b, ']')
	}
	positive := func(d time.Duration) int64 { return max(int64(d), 1) }
	b = append(b, `,"total_duration":`...)
	b = appendInt(b, positive(end.Sub(c.arrived)))
	b = append(b, `,"load_duration":`...)
	b = appendInt(b, positive(c.slotAt.Sub(c.arrived)))
	b = append(b, `,"prompt_eval_count":`...)
	b = appendInt(b, int64(r.promptTokens))
	b = append(b, `,"prompt_eval_duration":`...)
	b = appendInt(b, positive(first.Sub(c.slotAt)))
	if pl.completion > 0 {
		b = append(b, `,"eval_count":`...)
		b = appendInt(b, int64(pl.completion))
		b = append(b, `,"eval_duration":`...)
		b = appendInt(b, positive(end.Sub(first)))
	}
	return append(b, '}')
}

func (s *Server) ollamaStream(w *bufio.Writer, conn net.Conn, c *call, r *ollamaRequest, pl *plan) {
	st := &streamer{w: w, c: c, conn: conn, bp: getBuf()}
	completion := 0
	defer func() {
		c.finish(r.promptTokens, completion, pl.finish)
		putBuf(st.bp)
	}()
	if !c.acquire() || !c.waitToken(0) {
		return
	}
	first := time.Now()
	c.tokenEmitted()
	// piece writes one NDJSON chunk carrying a piece of thinking or content.
	piece := func(tok string, thinking bool) bool {
		b := s.ollamaChunkStart(st.buf(), r)
		if r.chat {
			b = append(b, `"message":{"role":"assistant","content":`...)
			if thinking {
				b = append(b, `"","thinking":`...)
				b = appendJSONString(b, tok)
			} else {
				b = appendJSONString(b, tok)
			}
			b = append(b, '}')
			if r.logprobs && !thinking {
				b = append(b, `,"logprobs":[`...)
				b = append(appendTokenLogprob(b, tok, r.topLogprobs), ']')
			}
		} else {
			b = append(b, `"response":`...)
			if thinking {
				b = append(b, `"","thinking":`...)
				b = appendJSONString(b, tok)
			} else {
				b = appendJSONString(b, tok)
			}
		}
		return st.send(append(b, `,"done":false}`+"\n"...))
	}
	dropAt := dropPoint(&r.genRequest, pl.completion)
	i := 0
	next := func() bool {
		if i == dropAt {
			st.dropConn()
			return false
		}
		if i > 0 && !c.waitToken(i) {
			return false
		}
		i++
		completion++
		return true
	}
	for _, tok := range pl.reasoning {
		if !next() || !piece(tok, true) {
			return
		}
	}
	for _, tok := range pl.content {
		if !next() || !piece(tok, false) {
			return
		}
	}
	if pl.tool != nil {
		// Ollama's tool parser reports the call once it is complete.
		for range 1 + pl.toolArgs {
			if !next() {
				return
			}
		}
		if pl.toolArgs == len(pl.tool.pieces) {
			b := s.ollamaChunkStart(st.buf(), r)
			b = append(b, `"message":{"role":"assistant","content":""`...)
			b = appendOllamaToolCalls(b, pl)
			if !st.send(append(b, `},"done":false}`+"\n"...)) {
				return
			}
		}
	}
	b := s.ollamaChunkStart(st.buf(), r)
	if r.chat {
		b = append(b, `"message":{"role":"assistant","content":""},`...)
	} else {
		b = append(b, `"response":"",`...)
	}
	b = s.ollamaDone(b, r, pl, c, first, time.Now())
	st.send(append(b, '\n'))
}

// --- model listing -------------------------------------------------------------

type ollamaInfo struct {
	family, paramSize, quant, digest string
	params                           float64 // billions
	size                             int64
	embedding                        bool
}

var paramRe = regexp.MustCompile(`(\d+(?:\.\d+)?)b\b`)

func ollamaModelInfo(name string) ollamaInfo {
	n := strings.ToLower(name)
	info := ollamaInfo{family: "llama", quant: "Q4_K_M", params: 8.0}
	switch {
	case strings.Contains(n, "qwen3"):
		info.family = "qwen3"
	case strings.Contains(n, "qwen") || strings.Contains(n, "deepseek-r1"):
		info.family = "qwen2"
	case strings.Contains(n, "gpt-oss"):
		info.family, info.quant, info.params = "gptoss", "MXFP4", 20.9
	case strings.Contains(n, "gemma"):
		info.family = "gemma3"
	case strings.Contains(n, "phi"):
		info.family = "phi3"
	case strings.Contains(n, "embed"):
		info.family, info.quant, info.params, info.embedding = "nomic-bert", "F16", 0.137, true
	}
	if m := paramRe.FindStringSubmatch(strings.NewReplacer("-", " ", ":", " ", "_", " ").Replace(n)); m != nil {
		if f, err := strconv.ParseFloat(m[1], 64); err == nil && f > 0 {
			info.params = f
		}
	}
	info.paramSize = strconv.FormatFloat(info.params, 'f', 1, 64) + "B"
	bits := 4.85
	if info.quant == "F16" {
		bits = 16
	}
	info.size = int64(info.params * 1e9 * bits / 8)
	sum := sha256.Sum256([]byte(name))
	info.digest = hex.EncodeToString(sum[:])
	return info
}

// ollamaName is how Ollama lists a model: always with a tag.
func ollamaName(name string) string {
	if strings.Contains(name, ":") {
		return name
	}
	return name + ":latest"
}

func appendOllamaDetails(b []byte, info ollamaInfo) []byte {
	b = append(b, `{"parent_model":"","format":"gguf","family":`...)
	b = appendJSONString(b, info.family)
	b = append(b, `,"families":[`...)
	b = appendJSONString(b, info.family)
	b = append(b, `],"parameter_size":`...)
	b = appendJSONString(b, info.paramSize)
	b = append(b, `,"quantization_level":`...)
	b = appendJSONString(b, info.quant)
	return append(b, '}')
}

func (s *Server) ollamaTags(ctx *fasthttp.RequestCtx) {
	b := append(make([]byte, 0, 512*len(s.models)), `{"models":[`...)
	for i, ms := range s.models {
		info := ollamaModelInfo(ms.name)
		if i > 0 {
			b = append(b, ',')
		}
		name := ollamaName(ms.name)
		b = append(b, `{"name":`...)
		b = appendJSONString(b, name)
		b = append(b, `,"model":`...)
		b = appendJSONString(b, name)
		b = append(b, `,"modified_at":`...)
		b = appendRFC3339Nano(b, s.started)
		b = append(b, `,"size":`...)
		b = appendInt(b, info.size)
		b = append(b, `,"digest":`...)
		b = appendJSONString(b, info.digest)
		b = append(b, `,"details":`...)
		b = appendOllamaDetails(b, info)
		b = append(b, '}')
	}
	writeOllamaJSON(ctx, fasthttp.StatusOK, append(b, "]}"...))
}

// ollamaPS lists the models used within the keep-alive window (5 minutes),
// the longest-lived first, as Ollama lists its loaded models.
func (s *Server) ollamaPS(ctx *fasthttp.RequestCtx) {
	now := time.Now()
	type loaded struct {
		ms      *modelState
		expires time.Time
	}
	var list []loaded
	for _, ms := range s.models {
		if last := ms.lastUsed.Load(); last != 0 {
			exp := time.Unix(0, last).Add(ollamaKeepAlive)
			if exp.After(now) {
				list = append(list, loaded{ms, exp})
			}
		}
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].expires.After(list[j].expires) })
	b := append(make([]byte, 0, 512), `{"models":[`...)
	for i, l := range list {
		info := ollamaModelInfo(l.ms.name)
		if i > 0 {
			b = append(b, ',')
		}
		name := ollamaName(l.ms.name)
		b = append(b, `{"name":`...)
		b = appendJSONString(b, name)
		b = append(b, `,"model":`...)
		b = appendJSONString(b, name)
		b = append(b, `,"size":`...)
		b = appendInt(b, info.size)
		b = append(b, `,"digest":`...)
		b = appendJSONString(b, info.digest)
		b = append(b, `,"details":`...)
		b = appendOllamaDetails(b, info)
		b = append(b, `,"expires_at":`...)
		b = appendRFC3339Nano(b, l.expires)
		b = append(b, `,"size_vram":`...)
		b = appendInt(b, info.size)
		b = append(b, `,"context_length":`...)
		b = appendInt(b, l.ms.numCtx.Load())
		b = append(b, '}')
	}
	writeOllamaJSON(ctx, fasthttp.StatusOK, append(b, "]}"...))
}

func (s *Server) ollamaShow(ctx *fasthttp.RequestCtx) {
	p, v, ok := s.ollamaParse(ctx)
	if !ok {
		return
	}
	name := string(v.GetStringBytes("model"))
	if name == "" {
		name = string(v.GetStringBytes("name"))
	}
	s.parsers.Put(p)
	ms := s.ollamaModel(ctx, name)
	if ms == nil {
		return
	}
	info := ollamaModelInfo(ms.name)
	arch := info.family
	b := append(make([]byte, 0, 2048), `{"modelfile":`...)
	b = appendJSONString(b, "# Modelfile generated by \"ollama show\"\n"+
		"# To build a new Modelfile based on this, replace FROM with:\n# FROM "+ollamaName(ms.name)+"\n\n"+
		"FROM /root/.ollama/models/blobs/sha256-"+info.digest+"\n"+
		"TEMPLATE \"\"\""+ollamaTemplate+"\"\"\"\n"+
		"PARAMETER temperature 0.6\nPARAMETER top_k 20\nPARAMETER top_p 0.95\n")
	b = append(b, `,"parameters":`...)
	b = appendJSONString(b, "temperature                    0.6\ntop_k                          20\ntop_p                          0.95")
	b = append(b, `,"template":`...)
	b = appendJSONString(b, ollamaTemplate)
	b = append(b, `,"details":`...)
	b = appendOllamaDetails(b, info)
	// model_info is a Go map: encoding/json writes its keys sorted
	mi := map[string]string{
		"general.architecture":         strconv.Quote(arch),
		"general.basename":             strconv.Quote(ms.name),
		"general.file_type":            "15",
		"general.parameter_count":      strconv.FormatInt(int64(info.params*1e9), 10),
		"general.quantization_version": "2",
		arch + ".context_length":       strconv.Itoa(s.cfg.MaxModelLen),
		arch + ".embedding_length":     "4096",
		arch + ".block_count":          "36",
		"tokenizer.ggml.model":         `"gpt2"`,
	}
	keys := make([]string, 0, len(mi))
	for k := range mi {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b = append(b, `,"model_info":{`...)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = append(b, mi[k]...)
	}
	b = append(b, `},"capabilities":[`...)
	if info.embedding {
		b = append(b, `"embedding"`...)
	} else {
		b = append(b, `"completion"`...)
		vision := !s.cfg.VisionByName || ollamaVision(ms.name)
		if vision {
			b = append(b, `,"vision"`...)
		}
		if !s.cfg.VisionByName || !strings.Contains(ms.name, "llava") { // Ollama's llava has no tools
			b = append(b, `,"tools"`...)
		}
		if ms.thinking {
			b = append(b, `,"thinking"`...)
		}
	}
	b = append(b, `],"modified_at":`...)
	b = appendRFC3339Nano(b, s.started)
	writeOllamaJSON(ctx, fasthttp.StatusOK, append(b, '}'))
}

// ollamaVision reports whether a model is named as Ollama's vision models
// are (llava, *vision*, *-vl): with Config.VisionByName, the models whose
// /api/show lists "vision".
func ollamaVision(name string) bool {
	return strings.Contains(name, "llava") || strings.Contains(name, "vision") || strings.Contains(name, "-vl")
}

const ollamaTemplate = "{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}<|im_start|>assistant\n"

// --- embeddings ---------------------------------------------------------------

func (s *Server) ollamaEmbed(ctx *fasthttp.RequestCtx) {
	p, v, ok := s.ollamaParse(ctx)
	if !ok {
		return
	}
	defer s.parsers.Put(p)
	ms := s.ollamaModel(ctx, string(v.GetStringBytes("model")))
	if ms == nil {
		return
	}
	var inputs []string
	switch in := v.Get("input"); jtype(in) {
	case fastjson.TypeString:
		inputs = []string{string(in.GetStringBytes())}
	case fastjson.TypeArray:
		for _, x := range in.GetArray() {
			if x.Type() != fastjson.TypeString {
				writeOllamaError(ctx, fasthttp.StatusBadRequest, "invalid input type")
				return
			}
			inputs = append(inputs, string(x.GetStringBytes()))
		}
	case fastjson.TypeNull:
	default:
		writeOllamaError(ctx, fasthttp.StatusBadRequest, "invalid input type")
		return
	}
	dim := s.cfg.EmbeddingDim
	if d := v.GetInt("dimensions"); d > 0 && d < dim {
		dim = d
	}
	name := string(v.GetStringBytes("model"))
	if len(inputs) == 0 {
		b := appendJSONString(append([]byte(nil), `{"model":`...), name)
		writeOllamaJSON(ctx, fasthttp.StatusOK, append(b, `,"embeddings":[]}`...))
		return
	}
	prompt := 0
	for _, in := range inputs {
		prompt += countWords(in)
	}
	start := time.Now()
	fault, ok := s.poolingFault(ctx, func() {
		writeOllamaError(ctx, fasthttp.StatusInternalServerError, ollamaFaultMessage)
	})
	if !ok || !s.prefill(ctx, ms, prompt, fault) {
		return
	}
	b := appendJSONString(append(make([]byte, 0, 64+len(inputs)*dim*12), `{"model":`...), name)
	b = append(b, `,"embeddings":[`...)
	vec := make([]float32, s.cfg.EmbeddingDim)
	for i, in := range inputs {
		embedding(vec, ms.name, in)
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		for j, f := range normalized(vec[:dim]) {
			if j > 0 {
				b = append(b, ',')
			}
			b = appendGoFloat32(b, f)
		}
		b = append(b, ']')
	}
	total := max(int64(time.Since(start)), 1)
	b = append(b, `],"total_duration":`...)
	b = appendInt(b, total)
	b = append(b, `,"load_duration":`...)
	b = appendInt(b, max(total/10, 1))
	b = append(b, `,"prompt_eval_count":`...)
	b = appendInt(b, int64(prompt))
	writeOllamaJSON(ctx, fasthttp.StatusOK, append(b, '}'))
}

func (s *Server) ollamaEmbeddings(ctx *fasthttp.RequestCtx) {
	p, v, ok := s.ollamaParse(ctx)
	if !ok {
		return
	}
	defer s.parsers.Put(p)
	ms := s.ollamaModel(ctx, string(v.GetStringBytes("model")))
	if ms == nil {
		return
	}
	prompt := string(v.GetStringBytes("prompt"))
	if prompt == "" {
		writeOllamaJSON(ctx, fasthttp.StatusOK, []byte(`{"embedding":[]}`))
		return
	}
	fault, ok := s.poolingFault(ctx, func() {
		writeOllamaError(ctx, fasthttp.StatusInternalServerError, ollamaFaultMessage)
	})
	if !ok || !s.prefill(ctx, ms, countWords(prompt), fault) {
		return
	}
	vec := make([]float32, s.cfg.EmbeddingDim)
	embedding(vec, ms.name, prompt)
	b := append(make([]byte, 0, 16+len(vec)*22), `{"embedding":[`...)
	for j, f := range vec {
		if j > 0 {
			b = append(b, ',')
		}
		b = appendGoFloat64(b, float64(f))
	}
	writeOllamaJSON(ctx, fasthttp.StatusOK, append(b, "]}"...))
}
