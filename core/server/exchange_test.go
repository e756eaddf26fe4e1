package server

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/config"
)

func TestExchange_RequestID(t *testing.T) {
	s := &Server{cfg: config.Default(), baseCtx: context.Background()}
	s.exchanges.New = func() any { return newExchange() }
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		ex := newExchange()
		ex.begin(s, nil)
		if len(ex.id) != len("chatcmpl-")+32 || !strings.HasPrefix(ex.id, "chatcmpl-") || seen[ex.id] {
			t.Fatalf("id %q", ex.id)
		}
		seen[ex.id] = true
		// Plugin log lines name the request by these 16 digits.
		if want := fmt.Sprintf("%016x", ex.num); ex.id[9:25] != want {
			t.Fatalf("id %s does not start with num %s", ex.id, want)
		}
	}
}

func TestItoa(t *testing.T) {
	for _, v := range []int64{0, 7, -12, 1796011064} {
		if got := itoa(v); got != fmt.Sprint(v) {
			t.Errorf("itoa(%d) = %s", v, got)
		}
	}
}

func TestRecoverPanic(t *testing.T) {
	s := &Server{cfg: config.Default(), log: slog.New(slog.DiscardHandler), met: newMetrics(), baseCtx: context.Background()}
	s.exchanges.New = func() any { return newExchange() }
	ex := newExchange()
	ex.begin(s, nil)
	var ctx fasthttp.RequestCtx
	func() {
		defer s.recoverPanic(&ctx, ex)
		panic("a bug")
	}()
	if ctx.Response.StatusCode() != 500 || !strings.Contains(string(ctx.Response.Body()), ex.id) {
		t.Fatalf("status %d body %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
}
