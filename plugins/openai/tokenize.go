package openai

import (
	"strconv"

	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"

	"github.com/mindrouter/mindrouter/plugins/internal/jsonread"
)

// decodeTokenize reads a /v1/tokenize body (the reference implementation's
// shape): a chat request's messages and tools, or a legacy prompt (a
// string or an array of strings, each counted as a user message).
// Sampling fields are ignored: nothing is generated.
func decodeTokenize(o *fastjson.Object, f *reqFields, req *canon.ChatRequest) error {
	if p := o.Get("prompt"); p != nil && f.messages == nil {
		switch p.Type() {
		case fastjson.TypeString:
			req.Messages = []canon.Message{userText(string(p.GetStringBytes()))}
		case fastjson.TypeArray:
			items, _ := p.Array()
			for i, it := range items {
				s, ok := jsonread.Str(it)
				if !ok {
					return sdk.BadInput("prompt[" + strconv.Itoa(i) + "]: expected a string")
				}
				req.Messages = append(req.Messages, userText(s))
			}
		default:
			return jsonread.ErrType("prompt", "a string or an array of strings")
		}
		return nil
	}
	if err := decodeMessages(f.messages, req); err != nil {
		return err
	}
	return decodeTools(f, req)
}

func userText(s string) canon.Message {
	return canon.Message{Role: canon.RoleUser, Content: []canon.Part{{Type: canon.PartText, Text: s}}}
}

// EncodeTokenCount writes {"count","max_model_len","is_estimate"} (the
// reference implementation's /v1/tokenize answer; max_model_len is null
// when the gateway does not know the model's context window).
func (t *Translator) EncodeTokenCount(c *sdk.Call, tc *canon.TokenCount, out *sdk.Output) error {
	b := append(out.Body, `{"count":`...)
	b = jsonw.Int(b, int64(tc.Count))
	b = append(b, `,"max_model_len":`...)
	if tc.MaxModelLen > 0 {
		b = jsonw.Int(b, int64(tc.MaxModelLen))
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"is_estimate":`...)
	b = jsonw.Bool(b, tc.Estimate)
	out.Body = append(b, '}')
	return nil
}

var _ sdk.TokenCountTranslator = (*Translator)(nil)
