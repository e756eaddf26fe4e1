package vllm

import (
	"sort"

	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// EncodeRerankRequest writes vLLM's /v1/rerank or /v1/score request
// (vLLM's OpenAI-compatible server, "Re-rank API" and "Score API").
func (a *Adapter) EncodeRerankRequest(c *sdk.Call, req *canon.RerankRequest, out *sdk.Output) error {
	w := &a.w
	w.Reset()
	w.B = out.Body[:0]
	w.Obj()
	if req.Model != "" {
		w.Key("model")
		w.Str(req.Model)
	}
	path := "/v1/rerank"
	if req.Score() {
		path = "/v1/score"
		w.Key("text_1")
		if len(req.Text1) == 1 {
			w.Str(req.Text1[0])
		} else {
			strArray(w, req.Text1)
		}
		w.Key("text_2")
		strArray(w, req.Text2)
	} else {
		if len(req.Documents) == 0 {
			return sdk.BadInput("documents: at least one is required")
		}
		w.Key("query")
		w.Str(req.Query)
		w.Key("documents")
		strArray(w, req.Documents)
		if req.TopN > 0 {
			w.Key("top_n")
			w.Int(int64(req.TopN))
		}
	}
	if req.User != "" {
		w.Key("user")
		w.Str(req.User)
	}
	w.EndObj()
	out.Body = w.B
	out.SetMeta(abi.MetaPath, path)
	out.SetMeta(abi.MetaMethod, "POST")
	out.SetMeta(abi.MetaContentType, "application/json")
	return nil
}

// DecodeRerankResponse reads vLLM's rerank answer ({"results":[{"index",
// "document":{"text"},"relevance_score"}]}, sorted by vLLM) or score
// answer ({"data":[{"index","score"}]}, in request order).
func (a *Adapter) DecodeRerankResponse(c *sdk.Call, body []byte, resp *canon.RerankResponse) error {
	v, err := a.p.ParseBytes(body)
	if err != nil || v.Type() != fastjson.TypeObject {
		return sdk.BadInput("backend response: not a JSON object")
	}
	if msg, ok := errorPayload(v); ok {
		return sdk.BadInput("backend error: " + msg)
	}
	resp.Model = str(v.Get("model"))
	items, key := v.GetArray("results"), "relevance_score"
	if items == nil {
		items, key = v.GetArray("data"), "score"
	}
	if items == nil {
		return sdk.BadInput("backend response: neither results nor data")
	}
	resp.Results = make([]canon.RerankResult, 0, len(items))
	for i, it := range items {
		if it == nil || it.Type() != fastjson.TypeObject {
			return sdk.BadInput("backend response: result is not an object")
		}
		r := canon.RerankResult{Index: i, Score: it.GetFloat64(key)}
		if iv := it.Get("index"); iv != nil && iv.Type() == fastjson.TypeNumber {
			r.Index = count(iv)
		}
		if d := it.Get("document"); d != nil {
			if d.Type() == fastjson.TypeString {
				r.Document = str(d)
			} else {
				r.Document = str(d.Get("text"))
			}
		}
		resp.Results = append(resp.Results, r)
	}
	if key == "relevance_score" { // rerank: best first, whatever the backend did
		sort.SliceStable(resp.Results, func(i, j int) bool { return resp.Results[i].Score > resp.Results[j].Score })
	}
	if u := usageOf(v.Get("usage")); u != nil {
		if u.PromptTokens == 0 {
			u.PromptTokens = u.TotalTokens
		}
		resp.Usage = u
	}
	return nil
}

func strArray(w interface {
	Arr()
	Str(string)
	EndArr()
}, ss []string) {
	w.Arr()
	for _, s := range ss {
		w.Str(s)
	}
	w.EndArr()
}

var _ sdk.RerankAdapter = (*Adapter)(nil)
