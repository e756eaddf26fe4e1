package server

import (
	"errors"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/plugcall"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// translation is how one attempt's request and answer cross between the
// client's dialect and the backend's engine. It is chosen once per
// attempt, when the backend's adapter is pinned (translationFor), and
// the attempt, respond and the stream relay only call it:
//
//   - fusedTranslation: the adapter is in the translator's module and the
//     request is still in its client form (its decode deferred: decode):
//     one fused call per direction, the module decoding and encoding.
//   - canonicalTranslation: translator decode → canonical → adapter
//     encode, and adapter decode → canonical → translator encode back.
//   - unaryTranslation: an embedding, rerank or score request's op set
//     (unary.go), canonical both ways, never streamed.
//
// The implementations hold no state of their own (the exchange holds
// it): choosing one allocates nothing.
type translation interface {
	// request writes the backend request (ex.breqOut) through the pinned
	// adapter (ex.aver, ex.calls.A) with ex.hints. Its error is the
	// client's answer.
	request(ex *exchange) error
	// response translates a whole 200 answer: ex.dec gets the usage and
	// finish reason, ex.enc the client's body.
	response(ex *exchange, body []byte) error
	// streamBatch translates one batch of framed backend events (ex.list;
	// end: the stream's last call) into client bytes. send is false when
	// the batch makes no client chunk. With an error, out is what the
	// batch's first events still made (the fused path's shaped events).
	streamBatch(ex *exchange, end bool) (out []byte, send bool, err error)
	// streamState is the translator's stream state, with which it ends a
	// broken stream in step (EncodeStreamError).
	streamState(ex *exchange) []byte
}

// translationFor chooses the attempt's translation, with backend b's
// adapter pinned: unary for an embedding, rerank or score request; for a
// chat request, fused when the adapter is in the translator's module
// (one pin for both) and the request's decode was deferred, else
// canonical. A chat request's hints are worked out first: near its
// model's context window the request is counted (contextCap), which
// makes it canonical, so it takes the canonical path.
func (ex *exchange) translationFor(b *backend.Backend) (translation, error) {
	if ex.unary != nil {
		return unaryTranslation{ex.unary}, nil
	}
	if err := ex.chatHints(b); err != nil {
		return nil, err
	}
	if ex.aver == ex.tver && !ex.decoded {
		return fusedPath, nil
	}
	return canonicalPath, nil
}

// The chat translations, as interface values made once.
var (
	fusedPath     translation = fusedTranslation{}
	canonicalPath translation = canonicalTranslation{}
)

// chatHints sets ex.hints for a chat request on b: its model's context
// window and capabilities there, the operator's thinking default for it,
// and the output cap (the budget's and the context's). The hints but the
// cap are set first: a count request (contextCap) is built with them.
func (ex *exchange) chatHints(b *backend.Backend) error {
	m := b.Status().Models[ex.req.Model] // one lookup for both hints
	ex.hints = plugcall.Hints{ContextLength: m.ContextLength, Caps: m.Capabilities, ThinkDefault: thinkHint(ex.s.models.ThinkingDefault(ex.req.Model))}
	ctxCap, err := ex.contextCap(b, m.ContextLength)
	if err != nil {
		return err
	}
	ex.hints.MaxOutput = outputCap(ex.maxOutput, ctxCap)
	return nil
}

// thinkHint is a thinking_default as abi.MetaThinkDefault says it: "off"
// or "on", "" (no meta) for the model's own.
func thinkHint(setting string) string {
	if setting == config.ThinkingModel {
		return ""
	}
	return setting
}

// canonical makes the canonical request valid (ex.canon, ex.req): a no-op
// once the request is decoded; for one whose decode the decode stage
// deferred to a fused call, the translator's request decode runs now.
// Whatever needs the canonical request calls it.
func (ex *exchange) canonical() error {
	if ex.decoded {
		return nil
	}
	return ex.decodeRequest()
}

// stepFlags are a stream call's flags: first for its component's first
// call, end for the stream's last.
func stepFlags(first, end bool) uint32 {
	var f uint32
	if first {
		f |= abi.FlagFirst
	}
	if end {
		f |= abi.FlagEnd
	}
	return f
}

// fusedTranslation serves a request with the fused ops of a module that
// holds both the translator (calls.T) and the adapter (calls.A): one call
// per direction, over the client's own body.
type fusedTranslation struct{}

func (fusedTranslation) request(ex *exchange) error {
	err := ex.withImages(func() error {
		return ex.calls.FusedRequest(ex.ctx, ex.tver, ex.body, ex.hints, &ex.req, &ex.breqOut)
	})
	if err != nil {
		return err
	}
	ex.out.Stream = ex.req.Stream // the module's reading of the body
	return nil
}

func (fusedTranslation) response(ex *exchange, body []byte) error {
	return ex.calls.FusedResponse(ex.ctx, ex.tver, ex.header(), body, &ex.dec, &ex.enc)
}

// A stream's plugin calls run under the gateway's context, not the
// request's: the request deadline bounds the wait for an answer, and an
// answering stream lasts as long as the backend keeps sending (bounded by
// timeouts.stream_idle between reads).
func (fusedTranslation) streamBatch(ex *exchange, end bool) ([]byte, bool, error) {
	// The leading events the last call's shape matches need no call
	// (shape.go); the rest, if any, go to the module.
	list, pre := ex.list, []byte(nil)
	if !end && ex.shape.Valid() {
		if pre, list = ex.applyShape(list); len(list) == 0 {
			return pre, len(pre) > 0, nil
		}
	}
	// One call: the module decodes and encodes, keeping both states in
	// astate.
	out, err := ex.calls.FusedStream(ex.s.streamCtx, ex.tver, stepFlags(ex.aFirst, end), ex.meta, &ex.astate, list, &ex.dec)
	if err != nil {
		return pre, len(pre) > 0, err // what the shape translated still goes out
	}
	ex.aFirst = false
	ex.noteDecoded()
	ex.keepShape(ex.dec.Shape)
	if len(pre) > 0 {
		ex.shapeOut = append(pre, out...)
		out = ex.shapeOut
	}
	return out, len(out) > 0 || end, nil
}

func (fusedTranslation) streamState(ex *exchange) []byte { return sdk.FusedTranslatorState(ex.astate) }

// canonicalTranslation crosses through canonical JSON: the translator's
// request decode (canonical), the adapter's encode; the adapter's
// response decode, the translator's encode.
type canonicalTranslation struct{}

// An adapter refusing a well-formed canonical request says the engine
// cannot do what the client asked (logprobs on Ollama, say): the client's
// 400, as on the fused path (withImages).
func (canonicalTranslation) request(ex *exchange) error {
	if err := ex.canonical(); err != nil {
		return err
	}
	return ex.withImages(func() error {
		return ex.calls.EncodeRequest(ex.ctx, ex.aver, ex.canon, ex.hints, &ex.breqOut)
	})
}

func (canonicalTranslation) response(ex *exchange, body []byte) error {
	if err := ex.calls.DecodeResponse(ex.ctx, ex.aver, body, &ex.dec); err != nil {
		return err
	}
	return ex.calls.EncodeResponse(ex.ctx, ex.tver, ex.header(), ex.dec.Canonical, &ex.enc)
}

func (canonicalTranslation) streamBatch(ex *exchange, end bool) ([]byte, bool, error) {
	if err := ex.calls.DecodeStream(ex.s.streamCtx, ex.aver, stepFlags(ex.aFirst, end), &ex.astate, ex.list, &ex.dec); err != nil {
		return nil, false, err
	}
	ex.aFirst = false
	ex.noteDecoded()
	if len(ex.dec.Canonical) == 0 && !end {
		return nil, false, nil // no canonical chunk yet: no translator call
	}
	out, err := ex.calls.EncodeStream(ex.s.streamCtx, ex.tver, stepFlags(ex.tFirst, end), ex.meta, &ex.tstate, ex.dec.Canonical)
	if err != nil {
		return nil, false, err
	}
	ex.tFirst = false
	return out, true, nil
}

func (canonicalTranslation) streamState(ex *exchange) []byte { return ex.tstate }

// unaryTranslation serves an embedding, rerank or score request with its
// kind's op set (plugcall.Unary), canonical both ways. It is never fused:
// even when the translator and the adapter are in one bundle, each op is
// its own call naming its component.
type unaryTranslation struct{ u *plugcall.Unary }

// An adapter that cannot do it is the client's 400: the model it asked
// for is served by an engine without, say, embeddings.
func (t unaryTranslation) request(ex *exchange) error {
	if err := ex.calls.EncodeUnaryRequest(ex.ctx, t.u, ex.aver, ex.canon, &ex.breqOut); err != nil {
		return unaryEncodeError(t.u, ex.req.Model, err)
	}
	return nil
}

// response encodes in the vector encoding an embedding client asked for.
func (t unaryTranslation) response(ex *exchange, body []byte) error {
	if err := ex.calls.DecodeUnaryResponse(ex.ctx, t.u, ex.aver, body, &ex.dec); err != nil {
		return err
	}
	return ex.calls.EncodeUnaryResponse(ex.ctx, t.u, ex.tver, ex.header(), ex.embedEnc, ex.dec.Canonical, &ex.enc)
}

var errUnaryStream = errors.New("server: embedding, rerank and score answers are not streamed")

func (unaryTranslation) streamBatch(*exchange, bool) ([]byte, bool, error) {
	return nil, false, errUnaryStream
}

func (unaryTranslation) streamState(ex *exchange) []byte { return ex.tstate }
