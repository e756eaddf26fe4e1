package openai

import (
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// errorStyle is how OpenAI names one canonical error type: its "type", the
// "code" used when the gateway gave none, and a message for an empty one.
type errorStyle struct {
	typ, code, message string
}

// styleOf maps canonical error types to OpenAI's. The SDKs pick their
// exception class from the HTTP status (AuthenticationError for 401,
// RateLimitError for 429, InternalServerError for 5xx); "type" and "code"
// are what applications match on. OpenAI itself answers 404 and 413 with
// invalid_request_error, 429 with code rate_limit_exceeded and 5xx with
// server_error.
func styleOf(t canon.ErrorType, status int) errorStyle {
	switch t {
	case canon.ErrInvalidRequest:
		return errorStyle{"invalid_request_error", "", "invalid request"}
	case canon.ErrAuthentication:
		return errorStyle{"authentication_error", "invalid_api_key", "invalid API key"}
	case canon.ErrPermission:
		return errorStyle{"permission_error", "", "permission denied"}
	case canon.ErrNotFound:
		return errorStyle{"invalid_request_error", "", "not found"}
	case canon.ErrRequestTooLarge:
		return errorStyle{"invalid_request_error", "request_too_large", "request too large"}
	case canon.ErrRateLimit:
		return errorStyle{"rate_limit_error", "rate_limit_exceeded", "rate limit exceeded"}
	case canon.ErrBackend:
		return errorStyle{"server_error", "", "the model backend failed"}
	case canon.ErrOverloaded:
		return errorStyle{"server_error", "", "the model is currently overloaded, please retry"}
	case canon.ErrTimeout:
		return errorStyle{"server_error", "timeout", "the request timed out"}
	case canon.ErrInternal:
		return errorStyle{"server_error", "", "internal error"}
	}
	// An unknown type: classify by status.
	switch {
	case status == 401:
		return styleOf(canon.ErrAuthentication, status)
	case status == 403:
		return styleOf(canon.ErrPermission, status)
	case status == 429:
		return styleOf(canon.ErrRateLimit, status)
	case status >= 400 && status < 500:
		return styleOf(canon.ErrInvalidRequest, status)
	}
	return styleOf(canon.ErrInternal, status)
}

// EncodeError writes {"error":{"message","type","param","code"}}. The HTTP
// status is left as the host set it. Ending an open stream (meta stream =
// "1"), the body goes out as one SSE data event, which the openai SDKs
// raise as an APIError; no [DONE] follows, so the stream reads as cut.
func (t *Translator) EncodeError(c *sdk.Call, e *canon.Error, out *sdk.Output) error {
	stream := c.Meta(abi.MetaStream) == "1"
	if stream {
		out.Body = append(out.Body, "data: "...)
	}
	st := styleOf(e.Type, e.Status)
	msg, code := e.Message, e.Code
	if msg == "" {
		msg = st.message
	}
	if code == "" {
		code = st.code
	}
	b := append(out.Body, `{"error":{"message":`...)
	b = jsonw.String(b, msg)
	b = append(b, `,"type":`...)
	b = jsonw.String(b, st.typ)
	b = append(b, `,"param":`...)
	b = stringOrNull(b, e.Param)
	b = append(b, `,"code":`...)
	b = stringOrNull(b, code)
	out.Body = append(b, "}}"...)
	if stream {
		out.Body = append(out.Body, "\n\n"...)
	}
	return nil
}

func stringOrNull(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return jsonw.String(b, s)
}
