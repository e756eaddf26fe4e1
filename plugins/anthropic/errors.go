package anthropic

import (
	"strings"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// errorStyle is how Anthropic names one canonical error type: its
// error.type and a message for an empty one.
type errorStyle struct{ typ, message string }

// styleOf maps canonical error types to Anthropic's
// (https://docs.claude.com/en/api/errors; timeout_error is in the SDKs'
// list of error types). The SDKs pick their error class from the HTTP
// status; error.type is what applications match on.
func styleOf(t canon.ErrorType, status int) errorStyle {
	switch t {
	case canon.ErrInvalidRequest:
		return errorStyle{"invalid_request_error", "invalid request"}
	case canon.ErrAuthentication:
		return errorStyle{"authentication_error", "invalid x-api-key"}
	case canon.ErrPermission:
		return errorStyle{"permission_error", "permission denied"}
	case canon.ErrNotFound:
		return errorStyle{"not_found_error", "not found"}
	case canon.ErrRequestTooLarge:
		return errorStyle{"request_too_large", "request exceeds the maximum allowed number of bytes"}
	case canon.ErrRateLimit:
		return errorStyle{"rate_limit_error", "rate limit exceeded"}
	case canon.ErrBackend:
		return errorStyle{"api_error", "the model backend failed"}
	case canon.ErrOverloaded:
		return errorStyle{"overloaded_error", "Overloaded"}
	case canon.ErrTimeout:
		return errorStyle{"timeout_error", "the request timed out"}
	case canon.ErrInternal:
		return errorStyle{"api_error", "internal error"}
	}
	// An unknown type: classify by status, as Anthropic numbers them.
	switch {
	case status == 401:
		return styleOf(canon.ErrAuthentication, status)
	case status == 403:
		return styleOf(canon.ErrPermission, status)
	case status == 404:
		return styleOf(canon.ErrNotFound, status)
	case status == 413:
		return styleOf(canon.ErrRequestTooLarge, status)
	case status == 429:
		return styleOf(canon.ErrRateLimit, status)
	case status == 503 || status == 529:
		return styleOf(canon.ErrOverloaded, status)
	case status == 504:
		return styleOf(canon.ErrTimeout, status)
	case status >= 400 && status < 500:
		return styleOf(canon.ErrInvalidRequest, status)
	}
	return styleOf(canon.ErrInternal, status)
}

// errorCode is the error.details.error_code a client matches on, or "":
// MidSystemNotSupported for a mid-conversation system message refused
// (its code is in the request_decode error's message, or in e.Code).
func errorCode(e *canon.Error) string {
	if e.Code == MidSystemNotSupported || e.Type == canon.ErrInvalidRequest && strings.Contains(e.Message, "("+MidSystemNotSupported+")") {
		return MidSystemNotSupported
	}
	return ""
}

// EncodeError writes {"type":"error","error":{"type","message"},
// "request_id"}. The HTTP status is left as the host set it. Ending an
// open stream (meta stream = "1"), the body goes out as an "error" event,
// as Anthropic reports a failure after the 200; no message_stop follows,
// so the stream reads as cut.
func (t *Translator) EncodeError(c *sdk.Call, e *canon.Error, out *sdk.Output) error {
	b := out.Body
	stream := c.Meta(abi.MetaStream) == "1"
	if stream {
		b = event(b, "error")
	}
	st := styleOf(e.Type, e.Status)
	msg := e.Message
	if msg == "" {
		msg = st.message
	} else if e.Code == "context_length_exceeded" && st.typ == "invalid_request_error" && e.Status != 413 {
		msg = contextMessage(msg)
	}
	b = append(b, `{"type":"error","error":{"type":`...)
	b = jsonw.String(b, st.typ)
	b = append(b, `,"message":`...)
	b = jsonw.String(b, msg)
	if code := errorCode(e); code != "" {
		b = append(b, `,"details":{"error_code":`...)
		b = jsonw.String(b, code)
		b = append(b, '}')
	}
	b = append(b, '}')
	if e.RequestID != "" {
		b = append(b, `,"request_id":`...)
		b = jsonw.String(b, e.RequestID)
	}
	b = append(b, '}')
	if stream {
		b = append(b, "\n\n"...)
	}
	out.Body = b
	return nil
}

// contextMessage words a context-exceeded error as Anthropic does, which
// agents match before they compact the conversation (Claude Code):
// "prompt is too long: N tokens > M maximum", or, when the input fits but
// not with max_tokens, "input length and `max_tokens` exceed context
// limit: N + X > M, decrease input length or `max_tokens` and try again".
// The counts are read from the gateway's own message ("the input is about
// N tokens; model m's context window is M tokens: ...") or vLLM's ("This
// model's maximum context length is M tokens. However, your request has N
// input tokens", "'max_tokens' ... is too large: X. ..."); a message
// without them (Ollama's) keeps its words after "prompt is too long: ".
func contextMessage(msg string) string {
	m, okM := numberAfter(msg, "context window is ")
	if !okM {
		m, okM = numberAfter(msg, "maximum context length is ")
	}
	n, okN := numberAfter(msg, "the input is about ")
	if !okN {
		n, okN = numberAfter(msg, "your request has ")
	}
	if !okN {
		n, okN = numberAfter(msg, "tokens (") // older vLLM: "you requested T tokens (N in the messages, X in the completion)"
	}
	if !okM || !okN {
		return "prompt is too long: " + msg
	}
	if x, ok := numberAfter(msg, "is too large: "); ok {
		return "input length and `max_tokens` exceed context limit: " + n + " + " + x + " > " + m +
			", decrease input length or `max_tokens` and try again"
	}
	return "prompt is too long: " + n + " tokens > " + m + " maximum"
}

// numberAfter returns the decimal digits that follow the last marker in s.
func numberAfter(s, marker string) (string, bool) {
	i := strings.LastIndex(s, marker)
	if i < 0 {
		return "", false
	}
	s = s[i+len(marker):]
	j := 0
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	return s[:j], j > 0
}
