package server

import (
	"errors"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/logredact"
	"github.com/mindrouter/mindrouter/core/outcome"
	"github.com/mindrouter/mindrouter/core/plugcall"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Unary requests — embeddings, rerank and score (routes of those kinds,
// ABI 2.2) — run the chat chain's shape with their kind's op set
// (plugcall.Unary): unaryDecode, the same admission, attempt and respond,
// whose translation is then unaryTranslation (translation.go: never
// streamed, never fused, retried as chat). An embedding client's vector
// encoding, which the canonical response does not carry, is kept on the
// exchange between the request decode and the response encode
// (abi.MetaEncodingFormat).

// unaryDecode runs the translator's request decode: client body →
// canonical request, with the model to route on.
type unaryDecode struct{ u *plugcall.Unary }

func (unaryDecode) stage() outcome.Stage { return outcome.StageDecode }

func (d unaryDecode) run(_ *fasthttp.RequestCtx, ex *exchange) error {
	if err := ex.pinTranslator(); err != nil {
		return err
	}
	ex.unary = d.u
	var r plugcall.EmbedRequest
	if err := ex.calls.DecodeUnaryRequest(ex.ctx, d.u, ex.tver, ex.body, &r); err != nil {
		return clientInput(err)
	}
	ex.decoded = true
	ex.canon = append(ex.canon[:0], r.Canonical...)
	ex.embedEnc = r.EncodingFormat
	// Admission and the response header read the chat request's fields.
	ex.req = plugcall.Request{Model: r.Model}
	ex.out.Model, ex.out.Stream = logredact.Truncate(r.Model, maxModelName), false
	if r.Model == "" {
		return apierr.New(canon.ErrInvalidRequest, "invalid_request", "model is required")
	}
	if len(r.Model) > maxModelName || hasControl(r.Model) {
		return apierr.New(canon.ErrInvalidRequest, "invalid_model", "model: must be at most 256 bytes without control characters")
	}
	return nil
}

// unaryEncodeError is the client's view of a failed request encode (apart,
// so the success path allocates nothing for errors.As).
func unaryEncodeError(u *plugcall.Unary, model string, err error) error {
	var se *pluginhost.StatusError
	if errors.As(err, &se) && se.Status == abi.StatusUnsupported {
		return apierr.Wrap(canon.ErrInvalidRequest, u.Code,
			"model "+logredact.Truncate(model, maxModelName)+"'s backend cannot "+u.What, err)
	}
	return clientInput(err)
}
