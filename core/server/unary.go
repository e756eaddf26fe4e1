package server

import (
	"errors"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/logredact"
	"github.com/mindrouter/mindrouter/core/outcome"
	"github.com/mindrouter/mindrouter/core/plugcall"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Unary requests — embeddings, rerank and score (routes of those kinds,
// ABI 2.2) — run the chat chain's shape with their kind's op set
// (plugcall.Unary): unaryDecode, the same admission, attempt (with
// encodeUnary, never streamed, retried as chat), then unaryRespond. They
// are never fused: even when the translator and the adapter are in one
// bundle, each op is its own call naming its component. An embedding
// client's vector encoding, which the canonical response does not carry,
// is kept on the exchange between the request decode and the response
// encode (abi.MetaEncodingFormat).

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

// encodeUnary writes the backend's request through b's adapter. An
// adapter that cannot do it is the client's 400: the model it asked for is
// served by an engine without, say, embeddings.
func (ex *exchange) encodeUnary(b *backend.Backend) error {
	if err := ex.pinEmbedAdapter(b); err != nil {
		return err
	}
	if err := ex.calls.EncodeUnaryRequest(ex.ctx, ex.unary, ex.aver, ex.canon, &ex.breqOut); err != nil {
		return unaryEncodeError(ex.unary, ex.req.Model, err)
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

// pinEmbedAdapter pins b's adapter for this attempt (the translator's own
// pin when both are in one module) and finds its component, as encode
// does for chat.
func (ex *exchange) pinEmbedAdapter(b *backend.Backend) error {
	ad := b.Adapter()
	if ad == nil { // its adapter was unloaded by a reload since admission
		return noAdapter(b)
	}
	if ex.aver != nil && ex.aver != ex.tver {
		ex.aver.Release()
	}
	ex.aver = nil
	if ad == ex.route.plugin {
		ex.aver = ex.tver
	} else {
		ex.aver = ad.Pin()
	}
	if ex.aver == nil {
		return noAdapter(b)
	}
	idx, _, ok := ex.aver.Manifest().AdapterFor(b.Engine)
	if !ok {
		return noAdapter(b)
	}
	ex.calls.A = idx
	ex.fused = false
	return nil
}

func noAdapter(b *backend.Backend) error {
	return apierr.New(canon.ErrOverloaded, "backend_unavailable", "no adapter is loaded for the backend "+b.Name)
}

// unaryRespond translates the backend's response: adapter decode, then
// translator encode (in the encoding an embedding client asked for).
type unaryRespond struct{}

func (unaryRespond) stage() outcome.Stage { return outcome.StageRespond }

func (unaryRespond) run(ctx *fasthttp.RequestCtx, ex *exchange) error {
	ex.watch.stop()
	ex.lease.Release() // the backend answered: its slot is free now
	if code := ex.bresp.StatusCode(); code != fasthttp.StatusOK {
		return ex.backendError(code, ex.bresp.Body())
	}
	if err := ex.calls.DecodeUnaryResponse(ex.ctx, ex.unary, ex.aver, ex.bresp.Body(), &ex.dec); err != nil {
		return pluginFailure(err)
	}
	if err := ex.calls.EncodeUnaryResponse(ex.ctx, ex.unary, ex.tver, ex.header(), ex.embedEnc, ex.dec.Canonical, &ex.enc); err != nil {
		return pluginFailure(err)
	}
	ex.out.Usage = ex.dec.Usage
	ctx.SetContentType(orDefault(ex.enc.ContentType, "application/json"))
	ctx.SetBody(ex.enc.Body)
	ex.out.BytesOut = int64(len(ex.enc.Body))
	return nil
}
