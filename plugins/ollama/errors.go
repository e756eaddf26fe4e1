package ollama

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/valyala/fastjson"
)

// maxErrorMessage caps the message taken from a backend error body.
const maxErrorMessage = 512

// DecodeError turns an Ollama error response ({"error":"..."}, or any body)
// into a canonical error. Client mistakes keep a 4xx status; backend
// failures become 502, 503 or 504 (see sdk.ErrorStatus).
func (a *Adapter) DecodeError(c *sdk.Call, status int, body []byte, e *canon.Error) error {
	e.Message = a.errorMessage(body)
	if e.Message == "" {
		e.Message = "ollama returned HTTP status " + strconv.Itoa(status)
	}
	e.Status, e.Type = sdk.ErrorStatus(status)
	lower := strings.ToLower(e.Message)
	switch {
	case strings.Contains(lower, "model") && strings.Contains(lower, "not found"):
		// `model "x" not found, try pulling it first` (older Ollama) or
		// `model 'x' not found` (newer).
		e.Status, e.Type, e.Code = 404, canon.ErrNotFound, "model_not_found"
	case e.Type == canon.ErrInvalidRequest && strings.Contains(lower, "context length"):
		e.Code = "context_length_exceeded"
	}
	return nil
}

// errorMessage returns the "error" member of a JSON body, capped at
// maxErrorMessage bytes, or "" for anything else: an unstructured body (a
// proxy's HTML page, a stack trace) may name internal hosts and paths, so
// it never becomes a client-visible message (the gateway logs it).
func (a *Adapter) errorMessage(body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '{' {
		if v, err := a.p.ParseBytes(body); err == nil && v.Type() == fastjson.TypeObject {
			if ev := v.Get("error"); ev != nil && ev.Type() != fastjson.TypeNull {
				return capMessage([]byte(errorText(ev)))
			}
		}
	}
	return ""
}

// capMessage copies at most maxErrorMessage bytes of b, cut at a character
// boundary.
func capMessage(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > maxErrorMessage {
		n := maxErrorMessage
		for n > maxErrorMessage-utf8.UTFMax && !utf8.RuneStart(b[n]) {
			n--
		}
		b = b[:n]
	}
	return string(b)
}
