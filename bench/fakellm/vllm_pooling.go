package fakellm

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"sort"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"
)

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
