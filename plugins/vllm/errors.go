package vllm

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/valyala/fastjson"
)

// maxTextError bounds how much of a non-JSON error body (a proxy's HTML
// page, a traceback) becomes the message.
const maxTextError = 512

// DecodeError turns a vLLM error response into a canonical error. It reads
// {"error":{"message","type","param","code"}} (vLLM ≥ 0.10),
// {"object":"error","message",...} (older) and FastAPI's {"detail":...};
// any other body yields only a status message. The backend's structured
// message is kept (bounded); the gateway adds context.
func (a *Adapter) DecodeError(c *sdk.Call, status int, body []byte, e *canon.Error) error {
	e.Status, e.Type = mapStatus(status)
	body = bytes.TrimSpace(body)
	parsed := false
	if len(body) > 0 && body[0] == '{' {
		if v, err := a.p.ParseBytes(body); err == nil && v.Type() == fastjson.TypeObject {
			parsed = true
			obj := v
			if ev := v.Get("error"); ev != nil {
				switch ev.Type() {
				case fastjson.TypeObject:
					obj = ev
				case fastjson.TypeString:
					e.Message = str(ev)
				}
			}
			if e.Message == "" {
				e.Message = str(obj.Get("message"))
			}
			if e.Message == "" {
				e.Message = detail(v.Get("detail"))
			}
			// vLLM's code is the HTTP status as a number, which Status
			// already carries; a string code is machine-readable detail.
			e.Code = str(obj.Get("code"))
			e.Param = str(obj.Get("param"))
		}
	}
	// An unstructured body (a proxy's HTML page, a stack trace) may name
	// internal hosts and paths: it never becomes a client-visible message
	// (the gateway logs it). A structured one is bounded.
	if parsed && len(e.Message) > maxTextError {
		e.Message = clip([]byte(e.Message), maxTextError)
	}
	if e.Message == "" {
		e.Message = "backend returned HTTP status " + strconv.Itoa(status)
	}
	if e.Code == "" {
		lower := strings.ToLower(e.Message)
		switch {
		case e.Type == canon.ErrNotFound && strings.Contains(lower, "model") && strings.Contains(lower, "does not exist"):
			e.Code = "model_not_found"
		case e.Type == canon.ErrInvalidRequest && (strings.Contains(lower, "maximum context length") ||
			strings.Contains(lower, "maximum model length")):
			e.Code = "context_length_exceeded"
		}
	}
	return nil
}

// mapStatus maps a backend HTTP status to the status and type the client
// gets; the mapping is the SDK's, shared with the other adapters.
func mapStatus(status int) (int, canon.ErrorType) { return sdk.ErrorStatus(status) }

// detail reads FastAPI's "detail": a string, or a list of validation errors
// whose first "msg" is used.
func detail(v *fastjson.Value) string {
	if v == nil {
		return ""
	}
	switch v.Type() {
	case fastjson.TypeString:
		return str(v)
	case fastjson.TypeArray:
		arr, _ := v.Array()
		if len(arr) > 0 {
			return str(arr[0].Get("msg"))
		}
	}
	return ""
}

// clip returns at most n bytes of b as a string, cut on a rune boundary.
func clip(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	i := n
	for i > 0 && !utf8.RuneStart(b[i]) {
		i--
	}
	return string(b[:i]) + "…"
}
