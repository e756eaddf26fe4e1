package server

import (
	"bytes"
	"context"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/outcome"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Keeper keeps what stateful routes store on their users' behalf: the
// OpenAI Responses and Conversations state (core/responses). Translation
// stays in the plugins; the keeper only reads and writes the wire shapes
// it stores, so any translator serving a responses-kind route gets the
// same state.
type Keeper interface {
	// Serves reports whether the keeper answers method and path itself
	// (GET /v1/responses/{id}, /v1/conversations/...), with no plugin
	// and no backend. It is false for the translator routes
	// (POST /v1/responses, POST /v1/responses/input_tokens).
	Serves(method, path []byte) bool
	// Serve answers one of those routes for an authenticated principal
	// holding the inference scope: status, headers and body, errors in
	// the OpenAI error shape. body is the request body, read and bounded.
	Serve(ctx *fasthttp.RequestCtx, p *auth.Principal, body []byte)
	// Begin runs on a responses-kind route after the body is read and
	// before anything else reads it. It returns the body to translate
	// (the stored history spliced in front of the input, or body as it
	// is) and a Turn that records the answer; a nil Turn records nothing
	// (store: false, nothing to append to). An *apierr.Error is the
	// client's (404 for an unknown or foreign previous_response_id).
	// requestID is the exchange's id ("chatcmpl-<32 hex>"); the
	// translator names the response "resp_<the same 32 hex>". The body
	// stays unchanged until the Turn's End: a Turn may keep slices of it.
	Begin(ctx context.Context, p *auth.Principal, requestID string, body []byte) ([]byte, Turn, error)
}

// Turn records one exchange's answer.
type Turn interface {
	// Write is given the bytes sent to the client for a 200 answer, in
	// order, each before it is written to the client: the whole body of
	// a non-streamed answer, or each write of a stream. A Turn that sees
	// the terminal event stores the response there, so a client that
	// chains from it at once finds it.
	Write(p []byte)
	// End is called once, when the exchange finishes, with the status
	// the client got (200 for a stream that ran to its end, 499 when the
	// client left). It stores what Write did not, and must not block for
	// long: it runs on the request's goroutine.
	End(status int)
}

// keep is the responses-kind stage that hands the body to the Keeper:
// the stored history spliced in, and a Turn to record the answer. With
// no Keeper the route is stateless (the translator refuses
// previous_response_id and conversation).
type keep struct{ k Keeper }

func (keep) stage() outcome.Stage { return outcome.StageRead }

func (k keep) run(_ *fasthttp.RequestCtx, ex *exchange) error {
	if k.k == nil {
		return nil
	}
	ex.noteKept()
	body, turn, err := k.k.Begin(ex.ctx, &ex.principal, ex.id, ex.body)
	if err != nil {
		return err
	}
	if len(body) > ex.s.cfg.Limits.MaxBodyBytes {
		if turn != nil {
			turn.End(fasthttp.StatusRequestEntityTooLarge)
		}
		return apierr.New(canon.ErrInvalidRequest, "context_length_exceeded",
			"the stored history with this input is over the gateway's request size limit; start a new conversation").
			WithStatus(fasthttp.StatusRequestEntityTooLarge)
	}
	if d := int64(len(body) - len(ex.body)); d > 0 {
		ex.s.buffered.Add(d) // the history counts against the bodies held
		ex.bodyHeld += d
	}
	ex.body, ex.turn = body, turn
	return nil
}

// noteKept tells the translator ops the state ids the keeper is about to
// take out of the body (abi.MetaKeptPrefix), so the answer repeats them.
// Only a body naming one is parsed for them.
func (ex *exchange) noteKept() {
	b := ex.body
	if !bytes.Contains(b, []byte(`"previous_response_id"`)) && !bytes.Contains(b, []byte(`"conversation"`)) {
		return
	}
	var p fastjson.Parser
	v, err := p.ParseBytes(b)
	if err != nil || v.Type() != fastjson.TypeObject {
		return // Begin answers it
	}
	m := ex.calls.Extra
	if id := v.GetStringBytes("previous_response_id"); len(id) > 0 {
		m = abi.AppendMetaBytes(m, abi.MetaKeptPrefix+"previous_response_id", id)
	}
	cv := v.Get("conversation")
	if cv != nil && cv.Type() == fastjson.TypeObject {
		cv = cv.Get("id")
	}
	if cv != nil && cv.Type() == fastjson.TypeString {
		if id, _ := cv.StringBytes(); len(id) > 0 {
			m = abi.AppendMetaBytes(m, abi.MetaKeptPrefix+"conversation", id)
		}
	}
	ex.calls.Extra = m
}
