package fakellm

import (
	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"
)

// --- /tokenize, /detokenize ---------------------------------------------------

// Chat-template token ids added around each message: <|im_start|>, the role,
// a newline before the content and <|im_end|> (templateTokens per message),
// then the content's, the reasoning's and the tool-call arguments' tokens
// (promptExtras): the prompt token count of chat requests (messageStats).
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
			promptExtras(m, func(b []byte) { ids = tokenIDs(ids, string(b)) })
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
