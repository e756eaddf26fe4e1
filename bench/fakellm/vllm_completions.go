package fakellm

import (
	"bufio"
	"net"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"
)

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
	// Uncounted before the end marker goes out: a gateway may start the
	// next request on this slot as soon as it reads the marker (see
	// call.uncount).
	st.c.uncount()
	st.send(append(st.buf(), "data: [DONE]\n\n"...))
}
