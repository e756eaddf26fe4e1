package openai

import (
	"strconv"
	"strings"

	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"

	"github.com/mindrouter/mindrouter/plugins/internal/jsonread"
)

// RouteCompletions is OpenAI's legacy text completion API. Its requests
// become canonical requests with a Prompt (canon.ChatRequest), which the
// adapters send to the engine's raw completion endpoint, never through a
// chat template; the answer is a text_completion object, never a chat one.
const RouteCompletions = "completions"

// maxPrompts bounds the prompts of one request (each gets n choices).
const maxPrompts = 128

// completionRoute reports whether the call is for RouteCompletions.
func completionRoute(c *sdk.Call) bool {
	r, _ := c.MetaBytes(abi.MetaRoute)
	return string(r) == RouteCompletions
}

// decodeCompletion reads a /v1/completions body: prompt (a string or an
// array of strings; token-id prompts are refused: the gateway cannot
// route or count them), the sampling fields chat has, logprobs as the
// legacy integer (0–5 alternatives per token), stream and stream_options,
// user. echo, suffix and best_of > 1 are refused rather than ignored.
func decodeCompletion(o *fastjson.Object, f *reqFields, req *canon.ChatRequest) error {
	p := o.Get("prompt")
	if p == nil {
		return jsonread.ErrRequired("prompt")
	}
	switch p.Type() {
	case fastjson.TypeString:
		req.Prompt = []string{string(p.GetStringBytes())}
	case fastjson.TypeArray:
		items, _ := p.Array()
		if len(items) == 0 || len(items) > maxPrompts {
			return sdk.BadInput("prompt must hold between 1 and " + strconv.Itoa(maxPrompts) + " strings")
		}
		for i, it := range items {
			s, ok := jsonread.Str(it)
			if !ok {
				return sdk.BadInput("prompt[" + strconv.Itoa(i) + "]: expected a string (token-id prompts are not supported)")
			}
			req.Prompt = append(req.Prompt, s)
		}
	default:
		return jsonread.ErrType("prompt", "a string or an array of strings")
	}
	if v := o.Get("echo"); v != nil && v.Type() == fastjson.TypeTrue {
		return sdk.BadInput("echo is not supported")
	}
	if v := o.Get("suffix"); v != nil && v.Type() != fastjson.TypeNull {
		if s, ok := jsonread.Str(v); !ok || s != "" {
			return sdk.BadInput("suffix is not supported")
		}
	}
	if v := o.Get("best_of"); v != nil && v.Type() != fastjson.TypeNull {
		if n, ok := jsonread.Int(v); !ok || n != 1 {
			return sdk.BadInput("best_of is not supported")
		}
	}
	lp := f.logprobs
	f.logprobs, f.topLogprobs = nil, nil // chat's boolean form; the legacy one is read below
	if err := decodeSampling(f, req); err != nil {
		return err
	}
	if lp != nil && lp.Type() != fastjson.TypeNull {
		n, ok := jsonread.Int(lp)
		if !ok || n < 0 || n > 5 {
			return sdk.BadInput("logprobs must be an integer between 0 and 5")
		}
		req.Logprobs, req.TopLogprobs = true, int(n)
	}
	return decodeStreaming(f, req)
}

// completionID is the response id: the gateway's id with OpenAI's cmpl-
// prefix instead of chatcmpl-.
func completionID(c *sdk.Call, fallback string) string {
	id := c.Meta(abi.MetaID)
	if id == "" {
		id = fallback
	}
	if rest, ok := strings.CutPrefix(id, "chatcmpl-"); ok {
		return "cmpl-" + rest
	}
	return id
}

// appendCompletionHead writes `{"id":…,"object":"text_completion",
// "created":…,"model":…`, the gateway's values first.
func appendCompletionHead(b []byte, c *sdk.Call, id, model string, created int64) []byte {
	b = append(b, `{"id":`...)
	b = jsonw.String(b, completionID(c, id))
	b = append(b, `,"object":"text_completion","created":`...)
	if cr, _ := c.MetaBytes(abi.MetaCreated); ValidCreated(cr) {
		b = append(b, cr...)
	} else {
		b = jsonw.Int(b, created)
	}
	b = append(b, `,"model":`...)
	if m := c.Meta(abi.MetaModel); m != "" {
		return jsonw.String(b, m)
	}
	return jsonw.String(b, model)
}

// appendCompletionChoice writes one choice: {"index","text","logprobs",
// "finish_reason"}.
func appendCompletionChoice(b []byte, index int, text string, logprobs []byte, finish canon.FinishReason) []byte {
	b = append(b, `{"index":`...)
	b = jsonw.Int(b, int64(index))
	b = append(b, `,"text":`...)
	b = jsonw.String(b, text)
	b = appendLogprobs(append(b, `,"logprobs":`...), logprobs)
	b = append(b, `,"finish_reason":`...)
	if finish == canon.FinishNone {
		b = append(b, "null"...)
	} else {
		b = jsonw.String(b, string(finish))
	}
	return append(b, '}')
}

// encodeCompletion writes a text_completion object.
func (t *Translator) encodeCompletion(c *sdk.Call, resp *canon.ChatResponse, out *sdk.Output) error {
	b := appendCompletionHead(out.Body, c, resp.ID, resp.Model, resp.Created)
	b = append(b, `,"choices":[`...)
	for i := range resp.Choices {
		ch := &resp.Choices[i]
		if i > 0 {
			b = append(b, ',')
		}
		finish := ch.FinishReason
		if finish == canon.FinishNone {
			finish = canon.FinishStop
		}
		b = appendCompletionChoice(b, ch.Index, ch.Message.Text(), ch.Logprobs, finish)
	}
	b = append(b, ']')
	if resp.Usage != nil {
		b = appendUsage(append(b, `,"usage":`...), resp.Usage)
	}
	out.Body = append(b, `,"system_fingerprint":null}`...)
	return nil
}

// encodeCompletionStream writes one text_completion event per canonical
// chunk that carries text, log probabilities or a finish reason (a raw
// completion has no role, reasoning or tool deltas: those are not written),
// the usage as its own event with "choices":[] when the client asked
// (meta include_usage), and "[DONE]" on the last call. It keeps no state.
func (t *Translator) encodeCompletionStream(c *sdk.Call, chunks []canon.ChatChunk, out *sdk.Output) error {
	usage := c.Meta(abi.MetaIncludeUsage) == "1"
	for i := range chunks {
		ch := &chunks[i]
		t.buf = t.buf[:0]
		n := 0
		for j := range ch.Choices {
			cc := &ch.Choices[j]
			if cc.Delta.Content == "" && len(cc.Logprobs) == 0 && cc.FinishReason == canon.FinishNone {
				continue
			}
			if n == 0 {
				t.buf = appendCompletionHead(t.buf, c, ch.ID, ch.Model, ch.Created)
				t.buf = append(t.buf, `,"choices":[`...)
			} else {
				t.buf = append(t.buf, ',')
			}
			n++
			t.buf = appendCompletionChoice(t.buf, cc.Index, cc.Delta.Content, cc.Logprobs, cc.FinishReason)
		}
		if n > 0 {
			t.buf = append(t.buf, "]}"...)
			out.Body = sdk.AppendSSE(out.Body, "", t.buf)
		}
		if ch.Usage != nil && usage {
			t.buf = appendCompletionHead(t.buf[:0], c, ch.ID, ch.Model, ch.Created)
			t.buf = appendUsage(append(t.buf, `,"choices":[],"usage":`...), ch.Usage)
			out.Body = sdk.AppendSSE(out.Body, "", append(t.buf, '}'))
		}
	}
	if c.End() {
		out.Body = sdk.AppendSSE(out.Body, "", doneEvent)
	}
	return nil
}
