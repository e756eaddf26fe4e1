package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/plugcall"
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

// begin resets each part (inbound, upstream, stream) of a pooled
// exchange: nothing of the last request is left but buffers' capacity.
func TestExchange_BeginResetsParts(t *testing.T) {
	s := &Server{cfg: config.Default(), baseCtx: context.Background()}
	ex := newExchange()
	ex.begin(s, nil)
	ex.principal.User, ex.estIn, ex.maxOutput, ex.bodyHeld = "u", 5, 7, 9
	ex.body, ex.ua, ex.canon = append(ex.body, 'x'), append(ex.ua, 'x'), append(ex.canon, '{')
	ex.req.Model, ex.routed, ex.decoded, ex.fusable = "m", true, true, true
	ex.unary, ex.embedEnc = &plugcall.Embed, "base64"
	ex.sreq.Model, ex.sreq.Exclude, ex.sreq.EstTokens = "m", append(ex.sreq.Exclude, nil), 3
	ex.tr, ex.hints, ex.adNDJSON = fusedPath, plugcall.Hints{ContextLength: 9}, true
	ex.split, ex.tFirst, ex.aFirst, ex.backendDone, ex.clientGone, ex.werr = ex.sse, false, false, true, true, io.EOF
	ex.tstate, ex.astate, ex.list, ex.resp = append(ex.tstate, 't'), append(ex.astate, 'a'), append(ex.list, 'l'), append(ex.resp, 'r')
	ex.cancel()
	ex.begin(s, nil)
	in, up, st := &ex.inbound, &ex.upstream, &ex.stream
	if in.principal.User != "" || in.estIn != 0 || in.maxOutput != 0 || in.bodyHeld != 0 || len(in.body)+len(in.ua)+len(in.canon) != 0 ||
		in.req.Model != "" || in.routed || in.decoded || in.fusable || in.unary != nil || in.embedEnc != "" {
		t.Errorf("inbound kept %+v", *in)
	}
	if up.sreq.Model != "" || len(up.sreq.Exclude) != 0 || up.sreq.EstTokens != 0 || up.tr != nil || up.hints.ContextLength != 0 || up.adNDJSON {
		t.Errorf("upstream kept model %q exclude %d tr %T hints %+v", up.sreq.Model, len(up.sreq.Exclude), up.tr, up.hints)
	}
	if st.split != nil || !st.tFirst || !st.aFirst || st.backendDone || st.clientGone || st.werr != nil ||
		len(st.tstate)+len(st.astate)+len(st.list)+len(st.resp) != 0 {
		t.Errorf("stream kept %+v", *st)
	}
	ex.cancel()
}

// Request ids sort by start time and never repeat within a process, and
// keep their shape (clients and the audit parse "chatcmpl-<32 hex>").
func TestRequestID_TimeOrderedAndUnique(t *testing.T) {
	start := time.Now()
	seen := map[string]bool{}
	prev := ""
	for i := range 5000 {
		id, num := requestID(start.Add(time.Duration(i/1000) * time.Millisecond))
		if len(id) != 41 || id[:9] != "chatcmpl-" {
			t.Fatalf("id %q", id)
		}
		if seen[id] {
			t.Fatalf("id %s repeated", id)
		}
		seen[id] = true
		if fmt.Sprintf("%016x", num) != id[9:25] {
			t.Fatalf("num %x is not the id's first half %s", num, id)
		}
		if i%1000 == 0 && prev != "" && id[:25] <= prev[:25] {
			t.Fatalf("id %s of a later millisecond sorts before %s", id, prev)
		}
		prev = id
	}
}
