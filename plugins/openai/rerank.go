package openai

import (
	"strconv"

	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/plugins/internal/jsonread"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// Rerank and score routes, in vLLM's shapes (OpenAI has no such API; vLLM's
// OpenAI-compatible server defines them, after Jina's and Cohere's rerank):
//
//	POST /v1/rerank {model, query, documents: [string | {"text"}], top_n, return_documents}
//	  → {"id","model","usage":{"prompt_tokens","total_tokens"},
//	     "results":[{"index","document":{"text"},"relevance_score"}]}
//	POST /v1/score {model, text_1: string | [string], text_2: string | [string]}
//	  → {"id","object":"list","created","model","data":[{"index","object":"score","score"}],"usage"}
const (
	RouteRerank = "rerank"
	RouteScore  = "score"
)

// maxRerankTexts bounds the documents (or pairs) of one request.
const maxRerankTexts = 1024

// DecodeRerankRequest implements sdk.RerankTranslator.
func (t *Translator) DecodeRerankRequest(c *sdk.Call, body []byte, req *canon.RerankRequest) error {
	o, err := jsonread.Object(&t.p, body)
	if err != nil {
		return err
	}
	if req.Model, err = jsonread.Model(o.Get("model")); err != nil {
		return err
	}
	if u := o.Get("user"); u != nil && u.Type() == fastjson.TypeString {
		req.User = string(u.GetStringBytes())
	}
	if c.Meta(abi.MetaRoute) == RouteScore {
		if req.Text1, err = rerankTexts(o.Get("text_1"), "text_1"); err != nil {
			return err
		}
		if req.Text2, err = rerankTexts(o.Get("text_2"), "text_2"); err != nil {
			return err
		}
		if len(req.Text1) != 1 && len(req.Text1) != len(req.Text2) {
			return sdk.BadInput("text_1 must be one text or as many texts as text_2")
		}
		return nil
	}
	q := o.Get("query")
	if q == nil || q.Type() == fastjson.TypeNull {
		return jsonread.ErrRequired("query")
	}
	if req.Query, _ = jsonread.Str(q); q.Type() != fastjson.TypeString {
		return jsonread.ErrType("query", "a string")
	}
	if req.Documents, err = rerankTexts(o.Get("documents"), "documents"); err != nil {
		return err
	}
	if v := o.Get("top_n"); v != nil && v.Type() != fastjson.TypeNull {
		n, ok := jsonread.Int(v)
		if !ok || n < 0 || n > maxRerankTexts {
			return sdk.BadInput("top_n must be an integer between 0 and " + strconv.Itoa(maxRerankTexts))
		}
		req.TopN = int(n)
	}
	req.ReturnDocuments = true // vLLM's default: the results carry the documents
	if v := o.Get("return_documents"); v != nil && v.Type() != fastjson.TypeNull {
		b, ok := jsonread.Bool(v)
		if !ok {
			return jsonread.ErrType("return_documents", "a boolean")
		}
		req.ReturnDocuments = b
	}
	return nil
}

// rerankTexts reads a string or a non-empty array of strings (or of
// {"text"} objects, as Jina's and Cohere's clients send documents).
func rerankTexts(v *fastjson.Value, field string) ([]string, error) {
	if v == nil || v.Type() == fastjson.TypeNull {
		return nil, jsonread.ErrRequired(field)
	}
	if s, ok := jsonread.Str(v); ok {
		return []string{s}, nil
	}
	items, err := v.Array()
	if err != nil {
		return nil, jsonread.ErrType(field, "a string or an array of strings")
	}
	if len(items) == 0 || len(items) > maxRerankTexts {
		return nil, sdk.BadInput(field + " must hold between 1 and " + strconv.Itoa(maxRerankTexts) + " texts")
	}
	out := make([]string, len(items))
	for i, it := range items {
		s, ok := jsonread.Str(it)
		if !ok && it.Type() == fastjson.TypeObject {
			if tv := it.Get("text"); tv != nil {
				s, ok = jsonread.Str(tv)
			}
		}
		if !ok {
			return nil, sdk.BadInput(jsonread.At(field, i) + ": expected a string")
		}
		out[i] = s
	}
	return out, nil
}

// EncodeRerankResponse implements sdk.RerankTranslator.
func (t *Translator) EncodeRerankResponse(c *sdk.Call, resp *canon.RerankResponse, out *sdk.Output) error {
	id := c.Meta(abi.MetaID)
	model := c.Meta(abi.MetaModel)
	if model == "" {
		model = resp.Model
	}
	b := out.Body
	if c.Meta(abi.MetaRoute) == RouteScore {
		b = append(b, `{"id":`...)
		b = jsonw.String(b, "score-"+trimChatPrefix(id))
		b = append(b, `,"object":"list","created":`...)
		if cr, _ := c.MetaBytes(abi.MetaCreated); ValidCreated(cr) {
			b = append(b, cr...)
		} else {
			b = append(b, '0')
		}
		b = jsonw.String(append(b, `,"model":`...), model)
		b = append(b, `,"data":[`...)
		for i := range resp.Results {
			r := &resp.Results[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonw.Int(append(b, `{"index":`...), int64(r.Index))
			b = jsonw.Float(append(b, `,"object":"score","score":`...), r.Score)
			b = append(b, '}')
		}
		b = append(b, ']')
	} else {
		b = append(b, `{"id":`...)
		b = jsonw.String(b, "rerank-"+trimChatPrefix(id))
		b = jsonw.String(append(b, `,"model":`...), model)
		docs := c.Meta(abi.MetaEncodingFormat) != abi.NoDocuments
		b = append(b, `,"results":[`...)
		for i := range resp.Results {
			r := &resp.Results[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonw.Int(append(b, `{"index":`...), int64(r.Index))
			if docs && r.Document != "" {
				b = jsonw.String(append(b, `,"document":{"text":`...), r.Document)
				b = append(b, '}')
			}
			b = jsonw.Float(append(b, `,"relevance_score":`...), r.Score)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if u := resp.Usage; u != nil {
		b = append(b, `,"usage":{"prompt_tokens":`...)
		b = jsonw.Int(b, int64(u.PromptTokens))
		b = append(b, `,"total_tokens":`...)
		b = jsonw.Int(b, int64(u.PromptTokens))
		b = append(b, '}')
	}
	out.Body = append(b, '}')
	return nil
}

func trimChatPrefix(id string) string {
	if len(id) > 9 && id[:9] == "chatcmpl-" {
		return id[9:]
	}
	return id
}

var _ sdk.RerankTranslator = (*Translator)(nil)
