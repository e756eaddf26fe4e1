package server

import (
	"context"
	"encoding/hex"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/frame"
	"github.com/mindrouter/mindrouter/core/jsonscan"
	"github.com/mindrouter/mindrouter/core/outcome"
	"github.com/mindrouter/mindrouter/core/plugcall"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/core/sched"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// exchange is the per-request working set, pooled so that steady-state
// requests reuse every buffer. It belongs to one request at a time: the
// handler, then (for a stream) the relay, which returns it.
type exchange struct {
	s     *Server
	id    string // "chatcmpl-<32 hex>", also X-Request-ID
	num   uint64 // numeric id for plugin log correlation
	start time.Time
	route route

	// ctx is the request's context: its deadline is timeouts.request; it is
	// cancelled when the client goes away while the gateway waits
	// (watch.go) and when the request ends.
	ctx    context.Context
	cancel context.CancelFunc
	watch  watcher

	principal auth.Principal
	turn      Turn       // a Responses request's record of its answer (keeper.go)
	ip        netip.Addr // the client, for the audit (client.go)
	ua, resp  []byte     // user agent; a stream's first bytes (audit)
	ticket    Ticket     // the limiter's hold, nil when none
	estIn     int64      // the input-token estimate of the budget reservation
	// maxOutput caps the request's output tokens to what its token
	// budget reservation covers (0: no cap); sent as abi.MetaMaxOutput.
	maxOutput int
	out       outcome.Outcome

	calls   plugcall.Calls
	req     plugcall.Request
	breqOut plugcall.BackendRequest
	dec     plugcall.Decoded
	enc     plugcall.Encoded
	hdr     plugcall.Header
	scan    jsonscan.Result

	body      []byte // the client's request body
	bodyHeld  int64  // bytes counted against limits.max_buffered_body_bytes
	canon     []byte // canonical request JSON
	buf, meta []byte

	// routed: the routing fields came from the native scan; decoded: the
	// translator's request_decode ran; fused: this attempt's adapter is in
	// the translator's module and the fused ops serve the request.
	routed, decoded, fused bool
	adNDJSON               bool // the adapter's backend streams NDJSON
	// embedEnc is an embedding request's vector encoding, as the
	// translator named it, for the response encode (embed.go).
	embedEnc string
	// unary is the op set of an embedding, rerank or score request
	// (unary.go), set by its decode stage.
	unary *plugcall.Unary

	sreq       sched.Request
	decision   sched.Decision // the scheduler's, when the audit records it
	decW       jsonw.W        // its JSON for the observers (reused)
	lease      sched.Lease
	backend    *backend.Backend
	tver, aver *pluginhost.Version
	breq       *fasthttp.Request
	bresp      *fasthttp.Response

	// streaming
	split          frame.Splitter
	sse, ndjson    frame.Splitter
	rbuf           []byte // stream reads; allocated by the first stream (streamReadBuf)
	list           []byte
	emitFn         func([]byte)
	tstate, astate []byte
	tFirst, aFirst bool
	backendDone    bool
	clientGone     bool
	werr           error  // the client write that ended a stream
	uri            []byte // the backend request's URL
}

func newExchange() *exchange {
	ex := &exchange{
		breq:  new(fasthttp.Request),
		bresp: new(fasthttp.Response),
	}
	ex.emitFn = ex.emit
	ex.watch.ex = ex
	return ex
}

// begin readies a pooled exchange for a new request.
func (ex *exchange) begin(s *Server, rc *fasthttp.RequestCtx) {
	if ex.sse == nil || ex.s != s {
		ex.sse = frame.NewSSE(s.cfg.Limits.MaxStreamEventBytes)
		ex.ndjson = frame.NewNDJSON(s.cfg.Limits.MaxStreamEventBytes)
	}
	ex.s = s
	ex.start = time.Now()
	var raw [16]byte
	a, b := rand.Uint64(), rand.Uint64()
	// Big-endian, so the id's first 16 hex digits are num as the plugin
	// host logs it (req_id in plugin log lines).
	for i := 0; i < 8; i++ {
		raw[i], raw[8+i] = byte(a>>(56-8*i)), byte(b>>(56-8*i))
	}
	var id [9 + 32]byte
	copy(id[:], "chatcmpl-")
	hex.Encode(id[9:], raw[:])
	ex.id = string(id[:])
	ex.num = a
	// The deadline bounds everything up to the answer (a stream's relay
	// runs outside it); the watcher cancels earlier if the client leaves.
	ex.ctx, ex.cancel = context.WithDeadline(s.baseCtx, ex.start.Add(s.cfg.Timeouts.Request.D()))
	ex.watch.reset(rc)
	ex.route = route{}
	ex.principal = auth.Principal{}
	ex.ticket, ex.estIn, ex.maxOutput, ex.turn = nil, 0, 0, nil
	ex.ip, ex.ua, ex.resp = netip.Addr{}, ex.ua[:0], ex.resp[:0]
	ex.out.Reset()
	ex.out.RequestID, ex.out.Start, ex.out.Status = ex.id, ex.start, 200
	ex.req = plugcall.Request{}
	ex.routed, ex.decoded, ex.fused, ex.adNDJSON = false, false, false, false
	ex.embedEnc, ex.unary = "", nil
	ex.body, ex.bodyHeld = ex.body[:0], 0
	ex.sreq.Model, ex.sreq.User, ex.sreq.Group, ex.sreq.Weight, ex.sreq.EstTokens = "", "", "", 0, 0
	ex.sreq.Exclude = ex.sreq.Exclude[:0]
	ex.sreq.Needs = sched.Needs{}
	ex.sreq.Decision = nil
	if s.recordDecisions {
		ex.decision.Record = true
		ex.decision.Reset()
		ex.sreq.Decision = &ex.decision
	}
	ex.lease, ex.backend = nil, nil
	ex.tver, ex.aver = nil, nil
	ex.split = nil
	ex.tstate, ex.astate = ex.tstate[:0], ex.astate[:0]
	ex.tFirst, ex.aFirst = true, true
	ex.backendDone, ex.clientGone = false, false
}

func (ex *exchange) setRoute(rt *route) {
	ex.route = *rt
	ex.out.Route, ex.out.Kind, ex.out.Dialect = rt.r.Name, string(rt.kind), rt.dialect
	ex.calls.Reset(ex.num, rt.r.Name, string(rt.kind))
}

// release returns what the exchange holds and puts it back in the pool.
func (ex *exchange) release() {
	ex.releaseHeld()
	ex.breq.Reset()
	ex.bresp.Reset()
	s := ex.s
	if cap(ex.body) > 1<<20 {
		ex.body = nil // a rare huge body is not kept in the pool
	}
	s.exchanges.Put(ex)
}

// releaseHeld returns the backend slot, the pinned plugin versions, the
// body budget and the limiter's hold, and cancels the request's context.
func (ex *exchange) releaseHeld() {
	ex.watch.stop()
	if ex.lease != nil {
		ex.lease.Release()
		ex.lease = nil
	}
	if ex.aver != nil {
		if ex.aver != ex.tver { // a fused request uses one pin for both
			ex.aver.Release()
		}
		ex.aver = nil
	}
	if ex.tver != nil {
		ex.tver.Release()
		ex.tver = nil
	}
	if ex.bodyHeld > 0 {
		ex.s.buffered.Add(-ex.bodyHeld)
		ex.bodyHeld = 0
	}
	if ex.ticket != nil {
		ex.ticket.Done(ex.usedTokens())
		ex.ticket = nil
	}
	if ex.cancel != nil {
		ex.cancel()
		ex.cancel = nil
	}
}

func (ex *exchange) emit(ev []byte) { ex.list = abi.AppendItem(ex.list, ev) }

// header is the identity the translator repeats in the response.
func (ex *exchange) header() *plugcall.Header {
	ex.hdr = plugcall.Header{ID: ex.id, Model: ex.req.Model, Created: ex.start.Unix(), IncludeUsage: ex.req.IncludeUsage}
	return &ex.hdr
}

func itoa(v int64) string {
	var b [20]byte
	i := len(b)
	neg := v < 0
	if neg {
		v = -v
	}
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
