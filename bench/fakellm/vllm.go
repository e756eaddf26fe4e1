package fakellm

import (
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
		if s.cfg.NoTokenize {
			vllmDetail(ctx, fasthttp.StatusNotFound, "Not Found")
		} else if s.vllmMethod(ctx, fasthttp.MethodPost) {
			s.vllmTokenize(ctx)
		}
	case "/detokenize":
		if s.cfg.NoTokenize {
			vllmDetail(ctx, fasthttp.StatusNotFound, "Not Found")
		} else if s.vllmMethod(ctx, fasthttp.MethodPost) {
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
