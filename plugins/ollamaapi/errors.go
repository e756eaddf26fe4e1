package ollamaapi

import (
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// defaultMessage is the message for an error the gateway gave none.
func defaultMessage(t canon.ErrorType) string {
	switch t {
	case canon.ErrInvalidRequest:
		return "invalid request"
	case canon.ErrAuthentication:
		return "invalid API key"
	case canon.ErrPermission:
		return "permission denied"
	case canon.ErrNotFound:
		return "not found"
	case canon.ErrRequestTooLarge:
		return "request too large"
	case canon.ErrRateLimit:
		return "rate limit exceeded"
	case canon.ErrBackend:
		return "the model backend failed"
	case canon.ErrOverloaded:
		return "the model is currently overloaded, please retry"
	case canon.ErrTimeout:
		return "the request timed out"
	}
	return "internal error"
}

// EncodeError writes Ollama's error body, {"error":"message"}; the HTTP
// status is left as the host set it (the official clients raise a
// StatusError with it). Ending an open stream (meta stream = "1"), the same
// object goes out as one NDJSON line, which the clients raise as an error
// after the lines before it.
func (t *Translator) EncodeError(c *sdk.Call, e *canon.Error, out *sdk.Output) error {
	msg := e.Message
	if msg == "" {
		msg = defaultMessage(e.Type)
	}
	b := jsonw.String(append(out.Body, `{"error":`...), msg)
	b = append(b, '}')
	if c.Meta(abi.MetaStream) == "1" {
		b = append(b, '\n')
	}
	out.Body = b
	return nil
}
