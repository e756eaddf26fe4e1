package responses

import (
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// item is one output item: its kind, whether a stream still has it open,
// the canonical tool index (function calls), and its call_id, name and
// text (the reasoning text, the message text or the call's arguments).
type item struct {
	kind         byte
	open         bool
	tool         int
	callID, name string
	text         string
	// more is what a stream call appended to text so far, in the scratch
	// buffer buf (-1: none): the state blob is written from text and
	// more without joining them, which would copy the text once more per
	// call. whole: the buffer holds text and more joined (flatten).
	more  string
	buf   int
	whole bool
}

// Response statuses.
const (
	statusInProgress = "in_progress"
	statusCompleted  = "completed"
	statusIncomplete = "incomplete"
	statusFailed     = "failed"
)

// outcome is how a response ended.
type outcome struct {
	status     string
	incomplete string // incomplete_details.reason
	errCode    string // error.code of a failed response
	errMsg     string
}

// outcomeOf maps the finish reason.
func outcomeOf(f canon.FinishReason) outcome {
	switch f {
	case canon.FinishLength:
		return outcome{status: statusIncomplete, incomplete: "max_output_tokens"}
	case canon.FinishContentFilter:
		return outcome{status: statusIncomplete, incomplete: "content_filter"}
	}
	return outcome{status: statusCompleted}
}

// appendItem writes an output item: its final form (done), or the form
// output_item.added announces (empty text, status in_progress). The item
// an incomplete response was cut off in (cut) is itself incomplete.
func appendItem(b []byte, h *ids, it *item, n int, done, cut bool) []byte {
	status := statusCompleted
	if !done {
		status = statusInProgress
	} else if cut {
		status = statusIncomplete
	}
	b = append(b, `{"id":`...)
	b = h.appendItemID(b, it.kind, n)
	switch it.kind {
	case kindReasoning:
		b = append(b, `,"type":"reasoning","summary":[],"content":[`...)
		if done {
			b = append(b, `{"type":"reasoning_text","text":`...)
			b = append(jsonw.String(b, it.text), '}')
		}
		b = append(b, ']')
	case kindMessage:
		b = append(b, `,"type":"message","status":"`...)
		b = append(b, status...)
		b = append(b, `","role":"assistant","content":[`...)
		if done {
			b = appendTextPart(b, it.text)
		}
		b = append(b, ']')
	default:
		b = append(b, `,"type":"function_call","status":"`...)
		b = append(b, status...)
		b = append(b, `","call_id":`...)
		b = appendCallID(b, h, it, n)
		b = appendName(b, h, it.name)
		b = append(b, `,"arguments":`...)
		if done {
			b = jsonw.String(b, arguments(it.text))
		} else {
			b = append(b, `""`...)
		}
	}
	return append(b, '}')
}

// appendName writes a call's `,"name":…`, with `,"namespace":…` before
// it when the model called a namespaced tool by its flat name.
func appendName(b []byte, h *ids, flat string) []byte {
	ns, name := h.echo.unflat(flat)
	if ns != "" {
		b = append(b, `,"namespace":`...)
		b = jsonw.String(b, ns)
	}
	b = append(b, `,"name":`...)
	return jsonw.String(b, name)
}

func appendCallID(b []byte, h *ids, it *item, n int) []byte {
	if it.callID != "" {
		return jsonw.String(b, it.callID)
	}
	return h.appendCallID(b, n)
}

// arguments returns a finished call's arguments, "{}" when the model gave
// none, so clients that parse them always see a JSON object.
func arguments(s string) string {
	if s == "" {
		return "{}"
	}
	return s
}

// appendTextPart writes an output_text content part.
func appendTextPart(b []byte, text string) []byte {
	b = append(b, `{"type":"output_text","text":`...)
	b = jsonw.String(b, text)
	return append(b, `,"annotations":[],"logprobs":[]}`...)
}

// appendResponse writes the Response object. The request fields it
// echoes come from the request's note (echo.go), the API's defaults
// without one.
func appendResponse(b []byte, h *ids, o *outcome, items []item, u *canon.Usage) []byte {
	if h.echo.pre == "" { // ids made without a call
		h.echo = echoNote{pre: defaultPre, post: defaultPost, user: defaultUser}
	}
	b = append(b, `{"id":`...)
	b = h.appendRespID(b)
	b = append(b, `,"object":"response","created_at":`...)
	b = append(b, h.created...)
	b = append(b, `,"status":"`...)
	b = append(b, o.status...)
	b = append(b, `","background":false,"error":`...)
	if o.status == statusFailed {
		b = append(b, `{"code":`...)
		b = jsonw.String(b, o.errCode)
		b = append(b, `,"message":`...)
		b = append(jsonw.String(b, o.errMsg), '}')
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"incomplete_details":`...)
	if o.incomplete != "" {
		b = append(b, `{"reason":"`...)
		b = append(b, o.incomplete...)
		b = append(b, `"}`...)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, ',')
	b = append(b, h.echo.pre...)
	b = append(b, `,"model":`...)
	b = jsonw.String(b, h.model)
	b = append(b, `,"output":[`...)
	for i := range items {
		if i > 0 {
			b = append(b, ',')
		}
		// The item the answer was cut off in is incomplete: the last one
		// of an incomplete response, any still open in a failed one.
		cut := o.status == statusIncomplete && i == len(items)-1 || o.status == statusFailed && items[i].open
		b = appendItem(b, h, &items[i], i, o.status != statusInProgress, cut)
	}
	b = append(b, "],"...)
	b = append(b, h.echo.post...)
	b = append(b, `,"usage":`...)
	if u == nil {
		b = append(b, "null"...)
	} else {
		uu := *u
		if uu.ReasoningTokens == 0 {
			uu.ReasoningTokens = estimateReasoning(items, uu.CompletionTokens)
		}
		b = appendUsage(b, &uu)
	}
	b = append(b, `,"user":`...)
	b = append(b, h.echo.user...)
	return append(b, '}')
}

// estimateReasoning estimates the reasoning tokens of a finished answer
// whose backend did not count them (vLLM and Ollama do not): about four
// bytes of reasoning text a token, at most the output tokens. Clients
// budget by output_tokens_details.reasoning_tokens; zero would say the
// model did not reason.
func estimateReasoning(items []item, output int) int {
	n := 0
	for i := range items {
		if items[i].kind == kindReasoning {
			n += (len(items[i].text) + 3) / 4
		}
	}
	if output > 0 {
		n = min(n, output)
	}
	return n
}

// appendUsage writes the Responses usage object; the detail objects are
// required by the API, zero when the backend did not say.
func appendUsage(b []byte, u *canon.Usage) []byte {
	total := u.TotalTokens
	if total == 0 {
		total = u.PromptTokens + u.CompletionTokens
	}
	b = append(b, `{"input_tokens":`...)
	b = jsonw.Int(b, int64(u.PromptTokens))
	b = append(b, `,"input_tokens_details":{"cached_tokens":`...)
	b = jsonw.Int(b, int64(u.CachedTokens))
	b = append(b, `},"output_tokens":`...)
	b = jsonw.Int(b, int64(u.CompletionTokens))
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":`...)
	b = jsonw.Int(b, int64(u.ReasoningTokens))
	b = append(b, `},"total_tokens":`...)
	b = jsonw.Int(b, int64(total))
	return append(b, '}')
}
