package gemini

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// EncodeError writes Google's error shape,
// {"error":{"code":404,"message":"...","status":"NOT_FOUND"}}; ending an
// open stream, as the stream's framing has it (an SSE event, or the JSON
// array's last element and its "]").
func (t *Translator) EncodeError(c *sdk.Call, e *canon.Error, out *sdk.Output) error {
	b := out.Body[:0]
	stream := c.Meta(abi.MetaStream) == "1"
	route := c.Meta(abi.MetaRoute)
	switch {
	case stream && route == routeStreamSSE:
		b = append(b, "data: "...)
	case stream && route == routeStreamJSON:
		b = append(b, ",\r\n"...)
	}
	var w jsonw.W
	w.B = b
	w.Obj()
	w.Key("error")
	w.Obj()
	w.Key("code")
	w.Int(int64(e.Status))
	w.Key("message")
	w.Str(e.Message)
	w.Key("status")
	w.Str(rpcStatus(e))
	w.EndObj()
	w.EndObj()
	switch {
	case stream && route == routeStreamSSE:
		w.B = append(w.B, "\n\n"...)
	case stream && route == routeStreamJSON:
		w.B = append(w.B, ']')
	}
	out.Body = w.B
	return nil
}

// rpcStatus is the google.rpc.Code name Google's APIs pair with an HTTP
// status.
func rpcStatus(e *canon.Error) string {
	switch e.Type {
	case canon.ErrInvalidRequest, canon.ErrRequestTooLarge:
		if e.Code == "model_not_found" {
			return "NOT_FOUND"
		}
		return "INVALID_ARGUMENT"
	case canon.ErrAuthentication:
		return "UNAUTHENTICATED"
	case canon.ErrPermission:
		return "PERMISSION_DENIED"
	case canon.ErrNotFound:
		return "NOT_FOUND"
	case canon.ErrRateLimit:
		return "RESOURCE_EXHAUSTED"
	case canon.ErrOverloaded, canon.ErrBackend:
		return "UNAVAILABLE"
	case canon.ErrTimeout:
		return "DEADLINE_EXCEEDED"
	}
	return "INTERNAL"
}

var validator fastjson.Parser

func validJSON(s string) bool {
	_, err := validator.Parse(s)
	return err == nil
}
