package gemini

import (
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// EncodeResponse writes a GenerateContentResponse: one candidate per
// choice, its thinking first as a thought part, then text, then function
// calls.
func (t *Translator) EncodeResponse(c *sdk.Call, resp *canon.ChatResponse, out *sdk.Output) error {
	var w jsonw.W
	w.B = out.Body[:0]
	w.Obj()
	w.Key("candidates")
	w.Arr()
	for i := range resp.Choices {
		ch := &resp.Choices[i]
		w.Obj()
		w.Key("content")
		w.Obj()
		w.Key("role")
		w.Str("model")
		w.Key("parts")
		w.Arr()
		if ch.Message.Reasoning != "" {
			textPart(&w, ch.Message.Reasoning, true)
		}
		for _, p := range ch.Message.Content {
			if p.Type == canon.PartText && p.Text != "" {
				textPart(&w, p.Text, false)
			}
		}
		for _, tc := range ch.Message.ToolCalls {
			callPart(&w, tc.ID, tc.Name, tc.Arguments)
		}
		w.EndArr()
		w.EndObj()
		w.Key("finishReason")
		w.Str(finishReason(ch.FinishReason, len(ch.Message.ToolCalls) > 0))
		w.Key("index")
		w.Int(int64(ch.Index))
		w.EndObj()
	}
	w.EndArr()
	if resp.Usage != nil {
		usage(&w, resp.Usage)
	}
	w.Key("modelVersion")
	w.Str(c.Meta(abi.MetaModel))
	w.Key("responseId")
	w.Str(c.Meta(abi.MetaID))
	w.EndObj()
	out.Body = w.B
	return nil
}

func textPart(w *jsonw.W, text string, thought bool) {
	w.Obj()
	w.Key("text")
	w.Str(text)
	if thought {
		w.Key("thought")
		w.Bool(true)
	}
	w.EndObj()
}

// callPart writes a functionCall part; args that are not a JSON object
// (a model's broken output) are sent as {"_raw": "..."} so the client's
// decoder still gets an object.
func callPart(w *jsonw.W, id, name, args string) {
	w.Obj()
	w.Key("functionCall")
	w.Obj()
	if id != "" {
		w.Key("id")
		w.Str(id)
	}
	w.Key("name")
	w.Str(name)
	w.Key("args")
	if isObject(args) {
		w.Raw([]byte(args))
	} else {
		w.Obj()
		w.Key("_raw")
		w.Str(args)
		w.EndObj()
	}
	w.EndObj()
	w.EndObj()
}

func isObject(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r':
			continue
		case '{':
			return validJSON(s)
		}
		return false
	}
	return false
}

// finishReason maps a canonical finish reason to Gemini's. A function
// call ends with STOP, as Gemini's own models do.
func finishReason(f canon.FinishReason, calls bool) string {
	switch f {
	case canon.FinishLength:
		return "MAX_TOKENS"
	case canon.FinishContentFilter:
		return "SAFETY"
	case canon.FinishStop, canon.FinishToolCalls:
		return "STOP"
	}
	if calls {
		return "STOP"
	}
	return "FINISH_REASON_UNSPECIFIED"
}

// usage writes usageMetadata. Gemini counts thoughts apart from the
// candidates' tokens; canonical completion tokens include reasoning.
func usage(w *jsonw.W, u *canon.Usage) {
	w.Key("usageMetadata")
	w.Obj()
	w.Key("promptTokenCount")
	w.Int(int64(u.PromptTokens))
	w.Key("candidatesTokenCount")
	w.Int(int64(u.CompletionTokens - u.ReasoningTokens))
	total := u.TotalTokens
	if total == 0 {
		total = u.PromptTokens + u.CompletionTokens
	}
	w.Key("totalTokenCount")
	w.Int(int64(total))
	if u.ReasoningTokens > 0 {
		w.Key("thoughtsTokenCount")
		w.Int(int64(u.ReasoningTokens))
	}
	if u.CachedTokens > 0 {
		w.Key("cachedContentTokenCount")
		w.Int(int64(u.CachedTokens))
	}
	w.EndObj()
}
