package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// testKey is the key fakeAuth accepts with the inference scope.
const (
	testKey     = "mr2_test_inference_key_0001"
	testNoScope = "mr2_test_admin_only_key_0002"
)

// fakeAuth knows a fixed set of keys.
type fakeAuth map[string]auth.Principal

func (f fakeAuth) Authenticate(_ context.Context, key []byte) (auth.Principal, error) {
	if len(key) == 0 {
		return auth.Principal{}, auth.ErrNoKey
	}
	p, ok := f[string(key)]
	if !ok {
		return auth.Principal{}, auth.ErrBadKey
	}
	return p, nil
}

func defaultAuth() fakeAuth {
	return fakeAuth{
		testKey:     {KeyID: "mr2_test…", User: "alice", Group: "lab", Scopes: auth.ScopeInference},
		testNoScope: {KeyID: "mr2_admi…", User: "bob", Group: "ops", Scopes: auth.ScopeAdmin},
	}
}

// newTestServer builds a Server through New with an empty plugin host and
// registry, a discard logger, fakeAuth, and the route index of plugins
// (native translators) installed as the host's current snapshot. edit, when
// not nil, changes the configuration before New reads it.
func newTestServer(t testing.TB, edit func(*config.Config), plugins ...*pluginhost.Plugin) *Server {
	t.Helper()
	cfg := config.Default()
	if edit != nil {
		edit(cfg)
	}
	host, err := pluginhost.New(context.Background(), &pluginhost.Config{ABI: abi.VersionMajor}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Close(context.Background()) })
	reg, err := backend.NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := New(context.Background(), Options{Config: cfg, Host: host, Registry: reg, Auth: defaultAuth(),
		Logger: slog.New(slog.DiscardHandler)})
	s.routes.cur.Store(buildIndex(plugins, host.Generation()))
	return s
}

// newEx returns an exchange begun on s (rc may be nil).
func newEx(s *Server, rc *fasthttp.RequestCtx) *exchange {
	ex := newExchange()
	ex.begin(s, rc)
	return ex
}

// fakeTranslator renders errors in its own shape so a test can tell the
// translator's rendering from the native fallback.
type fakeTranslator struct {
	sdk.Unimplemented
	status string // error_encode's status override ("" for none)
}

func (f fakeTranslator) EncodeError(_ *sdk.Call, e *canon.Error, out *sdk.Output) error {
	b, _ := json.Marshal(map[string]any{"fake_error": e.Message, "code": e.Code, "status": e.Status})
	out.Body = append(out.Body[:0], b...)
	out.SetMeta(abi.MetaContentType, "application/x-fake")
	if f.status != "" {
		out.SetMeta(abi.MetaStatus, f.status)
	}
	return nil
}

// translator returns a native translator plugin serving routes.
func translator(t testing.TB, name string, tr sdk.Translator, routes ...sdk.Route) *pluginhost.Plugin {
	t.Helper()
	p := pluginhost.NewNativePlugin(name, func() *sdk.Plugin {
		return sdk.NewTranslator(sdk.Manifest{Name: name, Version: "1", Format: name, Routes: routes}, tr)
	})
	v := p.Pin()
	if v == nil {
		t.Fatalf("native translator %s: %v", name, p.LastError())
	}
	v.Release()
	return p
}

// wantErr fails unless err is an *apierr.Error with status and code.
func wantErr(t testing.TB, err error, status int, code string) *apierr.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %d %s", status, code)
	}
	e := apierr.Public(err)
	if e.Status != status || e.Code != code {
		t.Fatalf("error %d %s (%v), want %d %s", e.Status, e.Code, err, status, code)
	}
	return e
}

// errorBody decodes the native OpenAI-shaped error body.
func errorBody(t testing.TB, b []byte) (msg, typ, code string) {
	t.Helper()
	var v struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("error body %q: %v", b, err)
	}
	if v.Error.Code != nil {
		code = *v.Error.Code
	}
	return v.Error.Message, v.Error.Type, code
}
