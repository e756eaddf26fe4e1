package responses

import (
	"strings"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// EncodeError writes OpenAI's error shape,
// {"error":{"message","type","param","code"}}, as the Chat Completions
// translator does (the same types and codes per status). A client error
// the gateway gave no param names the request field its message starts
// with ("input[2].content[0].type: ..."), as OpenAI's own errors do.
//
// Ending an open stream (meta stream = "1": the backend failed after the
// 200), the body is the stream's one terminal event, response.failed; see
// appendFailed for what it can and cannot say.
func (t *Translator) EncodeError(c *sdk.Call, e *canon.Error, out *sdk.Output) error {
	if c.Meta(abi.MetaStream) == "1" {
		out.Body = appendFailed(c, out.Body, e, failedSeq, nil)
		return nil
	}
	if e.Param == "" && e.Status >= 400 && e.Status < 500 {
		ec := *e
		ec.Param = paramOf(e.Message)
		return t.oa.EncodeError(c, &ec, out)
	}
	return t.oa.EncodeError(c, e, out)
}

// failedSeq is the sequence_number of a response.failed written without
// the stream's state (the host's error_encode carries none): the largest
// integer a JSON number holds exactly, so the event still sorts after
// every event before it. With the state (EncodeStreamError), it is the
// stream's next number.
const failedSeq = 1<<53 - 1

// EncodeStreamError writes the response.failed event that ends a stream
// the backend broke, with the stream's state: the next sequence_number
// and the output so far. The host's error_encode does not pass the stream
// state today; when it does (a contract change of the ABI), the SDK calls
// this instead of EncodeError for meta stream = "1".
func (t *Translator) EncodeStreamError(c *sdk.Call, st *sdk.State, e *canon.Error, out *sdk.Output) error {
	if len(st.In) == 0 {
		// A host older than ABI 2.5, or a stream that failed before its
		// first event: no state to continue from.
		out.Body = appendFailed(c, out.Body, e, failedSeq, nil)
		return nil
	}
	var s streamState
	if err := s.decode(st.In, t.items[:0]); err != nil {
		return err
	}
	defer func() { t.items = s.items[:0] }()
	if s.done {
		return nil // the terminal event was written: nothing may follow it
	}
	var h ids
	h.read(c, e.RequestID, "", 0)
	if h.model == "" {
		h.model = s.model
	}
	if s.created != "" {
		h.created = s.created
	}
	if e.Code == CodeStateTooLarge {
		// The answer outgrew the state the host keeps for the stream: the
		// output so far is what the client got, so the response ends
		// incomplete at its length, as at max_output_tokens, not failed.
		em := emitter{t: t, s: &s, out: out, h: h}
		t.nbuf = 0
		em.closeAll(-1, true)
		em.lifecycle("response.incomplete", &outcome{status: statusIncomplete, incomplete: "max_output_tokens"})
		return nil
	}
	out.Body = appendFailedWith(out.Body, &h, e, s.seq, s.items)
	return nil
}

// CodeStateTooLarge is the canonical error code with which the host ends
// a stream whose state outgrew its limit (plugins.yaml
// limits.state_max_kb): EncodeStreamError ends it response.incomplete.
const CodeStateTooLarge = "stream_state_too_large"

// appendFailed writes response.failed for e without the stream's state:
// its response id comes from the error's request id (the gateway's
// "chatcmpl-<hex>"), its output is empty and its model unknown.
func appendFailed(c *sdk.Call, b []byte, e *canon.Error, seq uint64, items []item) []byte {
	h := ids{hex: strings.TrimPrefix(e.RequestID, "chatcmpl-"), created: "0"}
	h.echo.read(c)
	return appendFailedWith(b, &h, e, seq, items)
}

func appendFailedWith(b []byte, h *ids, e *canon.Error, seq uint64, items []item) []byte {
	code := "server_error"
	if e.Type == canon.ErrRateLimit || e.Status == 429 {
		code = "rate_limit_exceeded"
	}
	msg := e.Message
	if msg == "" {
		msg = "the model backend failed"
	}
	o := outcome{status: statusFailed, errCode: code, errMsg: msg}
	ev := append([]byte(nil), `{"type":"response.failed","sequence_number":`...)
	ev = jsonw.Uint(ev, seq)
	ev = append(ev, `,"response":`...)
	ev = appendResponse(ev, h, &o, items, nil)
	return sdk.AppendSSE(b, "response.failed", append(ev, '}'))
}

// topFields are the request fields an error message may start with.
var topFields = [...]string{"model", "input", "instructions", "tools", "tool_choice", "text", "reasoning",
	"max_output_tokens", "temperature", "top_p", "metadata", "parallel_tool_calls", "stream", "store",
	"background", "previous_response_id", "conversation", "prompt", "user", "safety_identifier"}

// paramOf returns the field path a decode error message starts with
// ("input[2].content[0].type: ..." → "input[2].content[0].type"), or ""
// when it starts with no request field.
func paramOf(msg string) string {
	end := strings.IndexAny(msg, " :")
	if end <= 0 {
		return ""
	}
	path := msg[:end]
	top := path
	if i := strings.IndexAny(top, ".["); i >= 0 {
		top = top[:i]
	}
	for _, f := range topFields {
		if top == f {
			return path
		}
	}
	return ""
}
