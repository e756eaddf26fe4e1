package server

import (
	"errors"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/outcome"
	"github.com/mindrouter/mindrouter/core/tokens"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// tokenize answers a tokenize route (/v1/tokenize, Anthropic's
// count_tokens): the translator decodes the body into a canonical request
// (a tokenize route's body may be its dialect's count shape), the gateway
// counts its tokens natively with the generic tokenizer (an estimate:
// core/tokens), and the translator writes the count with the model's
// context window. No backend is called; an unknown model is a 404 as on
// the model routes.
type tokenize struct{ s *Server }

func (tokenize) stage() outcome.Stage { return outcome.StageRespond }

func (t tokenize) run(ctx *fasthttp.RequestCtx, ex *exchange) error {
	if err := ex.pinTranslator(); err != nil {
		return err
	}
	if err := ex.canonical(); err != nil {
		return err
	}
	list := t.s.reg.Models()
	ex.visibleModels(&list) // access.go
	m, ok := findModel(&list, ex.req.Model)
	if !ok {
		return errUnknownModel(ex.req.Model)
	}
	var req canon.ChatRequest
	if err := req.DecodeJSON(ex.canon); err != nil {
		return pluginFailure(err)
	}
	n, err := t.s.tokens.Chat(&req)
	switch {
	case errors.Is(err, tokens.ErrTooLong):
		return apierr.New(canon.ErrRequestTooLarge, "request_too_large",
			"the input is longer than the gateway counts ("+itoa(int64(t.s.cfg.Limits.TokenizeMaxChars))+" bytes of text)")
	case err != nil:
		return apierr.Wrap(canon.ErrInternal, "tokenizer_unavailable", "the gateway's tokenizer failed", err)
	}
	tc := canon.TokenCount{Count: n, MaxModelLen: m.ContextLength, Estimate: true}
	ex.buf = tc.AppendJSON(ex.buf[:0])
	if err := ex.calls.EncodeTokens(ex.ctx, ex.tver, ex.buf, &ex.enc); err != nil {
		return pluginFailure(err)
	}
	ctx.SetContentType(orDefault(ex.enc.ContentType, "application/json"))
	ctx.SetBody(ex.enc.Body)
	return nil
}
