package server

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// recKeeper serves GET /v1/state/... and rewrites responses bodies.
type recKeeper struct {
	mu      sync.Mutex
	served  []string // "user body" per Serve
	begun   []string // the bodies Begin was given
	ended   []int
	refuse  bool
	rewrite string
}

func (k *recKeeper) Serves(method, path []byte) bool {
	return string(method) == "GET" && strings.HasPrefix(string(path), "/v1/state/")
}

func (k *recKeeper) Serve(ctx *fasthttp.RequestCtx, p *auth.Principal, body []byte) {
	k.mu.Lock()
	k.served = append(k.served, p.User+" "+string(body))
	k.mu.Unlock()
	ctx.SetContentType("application/json")
	ctx.SetBodyString(`{"ok":true}`)
}

func (k *recKeeper) Begin(_ context.Context, p *auth.Principal, id string, body []byte) ([]byte, Turn, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.begun = append(k.begun, string(body))
	if k.refuse {
		return nil, nil, apierr.New(canon.ErrNotFound, "not_found", "Previous response with id 'resp_x' not found.")
	}
	if !strings.HasPrefix(id, "chatcmpl-") || p.User != "alice" {
		return nil, nil, apierr.New(canon.ErrInvalidRequest, "bad", "unexpected id or principal")
	}
	return []byte(k.rewrite), k, nil
}

func (k *recKeeper) Write([]byte) {}

// modelTranslator decodes just the model, so the request gets as far as
// admission.
type modelTranslator struct{ fakeTranslator }

func (modelTranslator) DecodeRequest(_ *sdk.Call, body []byte, req *canon.ChatRequest) error {
	var b struct{ Model string }
	if err := json.Unmarshal(body, &b); err != nil {
		return sdk.BadInput(err.Error())
	}
	req.Model = b.Model
	return nil
}

func (k *recKeeper) End(status int) {
	k.mu.Lock()
	k.ended = append(k.ended, status)
	k.mu.Unlock()
}

// The Keeper's own routes need a key and get its answer; a responses
// route's body is the Keeper's rewrite from there on, and its Turn ends
// with the status the client got; a Keeper's refusal is rendered by the
// route's translator.
func TestKeeper_Routes(t *testing.T) {
	k := &recKeeper{rewrite: `{"model":"from-history","input":"hi"}`}
	s := newTestServer(t, nil, translator(t, "openai", modelTranslator{},
		sdk.Route{Name: "responses", Kind: sdk.EndpointResponses, Method: "POST", Path: "/v1/responses",
			Routing: &sdk.Routing{Model: "model", Stream: "stream"}}))
	s.keeper = k
	s.chains = s.buildChains()

	ctx := handleReq(s, "GET", "/v1/state/resp_1")
	if ctx.Response.StatusCode() != 401 || len(k.served) != 0 {
		t.Fatalf("no key:\n%s", ctx.Response.String())
	}
	if !strings.Contains(string(ctx.Response.Body()), `"error":{`) {
		t.Errorf("not OpenAI's error shape: %s", ctx.Response.Body())
	}
	ctx = handleReq(s, "GET", "/v1/state/resp_1", "Authorization", "Bearer "+testKey)
	if ctx.Response.StatusCode() != 200 || string(ctx.Response.Body()) != `{"ok":true}` || len(k.served) != 1 || k.served[0] != "alice " {
		t.Fatalf("kept route: %v\n%s", k.served, ctx.Response.String())
	}

	post := func() *fasthttp.RequestCtx {
		ctx := new(fasthttp.RequestCtx)
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetRequestURI("/v1/responses")
		ctx.Request.Header.Set("Authorization", "Bearer "+testKey)
		ctx.Request.Header.SetContentType("application/json")
		b := `{"model":"m","input":"hi","previous_response_id":"resp_1"}`
		ctx.Request.SetBodyStream(strings.NewReader(b), len(b))
		s.Handle(ctx)
		return ctx
	}
	ctx = post()
	// No backend serves the rewritten body's model: the 404 names it.
	if ctx.Response.StatusCode() != 404 || !strings.Contains(string(ctx.Response.Body()), "from-history") {
		t.Fatalf("rewritten body not used:\n%s", ctx.Response.String())
	}
	if len(k.begun) != 1 || !strings.Contains(k.begun[0], "previous_response_id") || len(k.ended) != 1 || k.ended[0] != 404 {
		t.Fatalf("begun %q ended %v", k.begun, k.ended)
	}

	k.refuse = true
	ctx = post()
	if ctx.Response.StatusCode() != 404 || string(ctx.Response.Header.ContentType()) != "application/x-fake" ||
		!strings.Contains(string(ctx.Response.Body()), "resp_x") {
		t.Fatalf("refusal:\n%s", ctx.Response.String())
	}
	if len(k.ended) != 1 {
		t.Errorf("a refused Begin has no Turn to end: %v", k.ended)
	}
}
