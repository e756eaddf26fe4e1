package server

import (
	"context"
	"encoding/hex"
	"math/rand/v2"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/fetchguard"
	"github.com/mindrouter/mindrouter/core/frame"
	"github.com/mindrouter/mindrouter/core/jsonscan"
	"github.com/mindrouter/mindrouter/core/outcome"
	"github.com/mindrouter/mindrouter/core/plugcall"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/core/sched"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
	"github.com/mindrouter/mindrouter/sdk/shape"
)

// exchange is the per-request working set, pooled so that steady-state
// requests reuse every buffer. It belongs to one request at a time: the
// handler, then (for a stream) the relay, which returns it.
//
// It is the request's identity, context and Outcome, the plugin calls'
// scratch, and three parts, each filled by one phase and reset by its own
// reset in begin: inbound (what the client sent and who it is: the stages
// up to decode and the limits), upstream (the backend side: admission,
// the attempts, the pinned plugins and the translation they chose) and
// stream (a streamed answer's relay). The parts are embedded, so their
// fields read as the exchange's (ex.body, ex.lease, ex.split).
type exchange struct {
	s     *Server
	id    string // "chatcmpl-<32 hex>", also X-Request-ID
	num   uint64 // numeric id for plugin log correlation
	start time.Time
	route route

	// ctx is the request's context: its deadline is timeouts.request; it is
	// cancelled when the client goes away while the gateway waits
	// (watch.go) and when the request ends. It is rc (reqctx.go), armed
	// at its deadline by dlTimer.
	ctx     context.Context
	rc      atomic.Pointer[reqCtx]
	dlTimer *time.Timer
	watch   watcher

	out outcome.Outcome

	// The plugin calls and their results, shared by the phases (each
	// call's result is read before the next call overwrites it).
	calls plugcall.Calls
	dec   plugcall.Decoded
	enc   plugcall.Encoded
	hdr   plugcall.Header
	buf   []byte // scratch: the model name, a models list, an error's encoding

	inbound  // the client's request (stages up to decode, limits)
	upstream // the backend side (admission, attempts)
	stream   // a streamed answer (relay)
}

// inbound is what the client sent and who it is: filled by the stages
// from authenticate to decode and the limits.
type inbound struct {
	principal auth.Principal
	ticket    Ticket     // the limiter's hold, nil when none
	turn      Turn       // a Responses request's record of its answer (keeper.go)
	ip        netip.Addr // the client, for the audit (client.go)
	ua        []byte     // user agent (audit)
	estIn     int64      // the input-token estimate of the budget reservation
	// maxOutput caps the request's output tokens to what its token
	// budget reservation covers (0: no cap); sent as abi.MetaMaxOutput.
	maxOutput int
	// key is a copy of the request's key and recheckAt when a stream
	// checks it again (recheck.go; zero: never).
	key       []byte
	recheckAt time.Time

	body     []byte // the client's request body
	bodyHeld int64  // bytes counted against limits.max_buffered_body_bytes
	scan     jsonscan.Result

	// req is the request's routing fields (model, stream, include_usage,
	// max_tokens), from the native scan (routed) or the translator's
	// decode (decoded, with canon: the canonical request JSON).
	req   plugcall.Request
	canon []byte
	// routed: the routing fields came from the native scan. decoded: the
	// translator's request decode ran; canon is valid. fusable: the
	// translator's module holds adapters too (a bundle), so a routed
	// request's decode is deferred to the fused call (decode, canonical).
	routed, decoded, fusable bool
	// unary is the op set of an embedding, rerank or score request
	// (unary.go), set by its decode stage; embedEnc is an embedding
	// request's vector encoding, as the translator named it, for the
	// response encode.
	unary    *plugcall.Unary
	embedEnc string
}

func (in *inbound) reset() {
	in.principal = auth.Principal{}
	in.ticket, in.turn = nil, nil
	in.ip, in.ua = netip.Addr{}, in.ua[:0]
	in.estIn, in.maxOutput = 0, 0
	in.forgetKey()
	in.body, in.bodyHeld = in.body[:0], 0
	in.req = plugcall.Request{}
	in.canon = in.canon[:0]
	in.routed, in.decoded, in.fusable = false, false, false
	in.unary, in.embedEnc = nil, ""
}

// upstream is the backend side of the request: filled by admission and
// the attempts. The translator's pin (tver) is taken at decode and held
// for the whole request; the adapter's (aver) per attempt.
type upstream struct {
	sreq     sched.Request
	decision sched.Decision // the scheduler's, when the audit records it
	decW     jsonw.W        // its JSON for the observers (reused)
	// decDone: decW holds the current admission's decision (fillKnown
	// writes it once: at noteStarted, then again only after another
	// admission); cleared by every Admit.
	decDone bool
	lease   sched.Lease
	backend *backend.Backend
	brk     backend.Ticket // the current attempt's claim on its backend's breaker

	tver, aver *pluginhost.Version
	// tr is the attempt's translation (translation.go), chosen with its
	// adapter; hints are its request's (context window, output cap,
	// capabilities).
	tr       translation
	hints    plugcall.Hints
	adNDJSON bool // the adapter's backend streams NDJSON

	// imgHeld is what the request's fetched images hold of
	// images.max_buffered_bytes (images.go); nil when it fetched none.
	imgHeld *fetchguard.Budget

	breqOut plugcall.BackendRequest
	uri     []byte // the backend request's URL
	breq    *fasthttp.Request
	bresp   *fasthttp.Response

	// counter is the adapter as core/tokencount asks it for an exact
	// count (context.go); kept here so that asking does not allocate.
	counter exactCounter
}

func (up *upstream) reset(recordDecisions bool) {
	r := &up.sreq
	r.Model, r.User, r.Group, r.Weight, r.EstTokens = "", "", "", 0, 0
	r.Exclude = r.Exclude[:0]
	r.Needs = sched.Needs{}
	r.Decision = nil
	if recordDecisions {
		up.decision.Record = true
		up.decision.Reset()
		r.Decision = &up.decision
	}
	up.lease, up.backend, up.brk = nil, nil, backend.Ticket{}
	up.decDone = false
	up.imgHeld = nil
	up.tver, up.aver = nil, nil
	up.tr, up.hints, up.adNDJSON = nil, plugcall.Hints{}, false
	up.counter = exactCounter{}
}

// stream is a streamed answer's relay state: the framing, the plugins'
// stream states and the buffers (relay.go, retry.go's firstEvent).
type stream struct {
	split          frame.Splitter
	sse, ndjson    frame.Splitter // built per Server (begin)
	rbuf           []byte         // stream reads; allocated by the first stream (streamReadBuf)
	list           []byte         // framed events of one read
	emitFn         func([]byte)   // ex.emit, bound once
	meta           []byte         // the stream calls' meta (calls.StreamMeta)
	tstate, astate []byte
	tFirst, aFirst bool
	// The stream shape the last fused call left (shape.go): its parse,
	// the bytes it is cloned into, the output it writes, and how many
	// events it translated.
	shape       shape.Shape
	shapeBuf    []byte
	shapeOut    []byte
	shaped      int
	backendDone bool
	clientGone  bool
	werr        error     // the client write that ended a stream
	resp        []byte    // a stream's first bytes (audit)
	wdl         time.Time // the client write deadline extendWrite last set
	// outEst sums the adapter's estimates of the output decoded
	// (plugcall.Decoded.OutputTokens): the usage of an answer that ends
	// without the backend's (estimateUsage).
	outEst int64
}

func (st *stream) reset() {
	st.split = nil
	st.list = st.list[:0]
	st.tstate, st.astate = st.tstate[:0], st.astate[:0]
	st.tFirst, st.aFirst = true, true
	st.shape.Reset()
	st.shaped = 0
	st.backendDone, st.clientGone = false, false
	st.werr = nil
	st.resp = st.resp[:0]
	st.wdl = time.Time{}
	st.outEst = 0
}

// requestID is a request's id ("chatcmpl-<32 hex>", also X-Request-ID)
// and the number the plugin host logs it by.
func requestID(start time.Time) (string, uint64) {
	var raw [16]byte
	// Time-ordered: the first half is the start in milliseconds and a
	// per-process sequence (unique within a replica), the second half
	// random (unique across replicas). Audit rows then arrive in index
	// order: random ids spread every insert over the embedded sink's
	// request_id index (about 20 µs a row more, bench/RESULTS.md).
	a := uint64(start.UnixMilli())<<20 | idSeq.Add(1)&(1<<20-1)
	b := rand.Uint64()
	// Big-endian, so the id's first 16 hex digits are num as the plugin
	// host logs it (req_id in plugin log lines).
	for i := 0; i < 8; i++ {
		raw[i], raw[8+i] = byte(a>>(56-8*i)), byte(b>>(56-8*i))
	}
	var id [9 + 32]byte
	copy(id[:], "chatcmpl-")
	hex.Encode(id[9:], raw[:])
	return string(id[:]), a
}

// idSeq numbers this process's requests (the low bits of an id's first half).
var idSeq atomic.Uint64

func newExchange() *exchange {
	ex := &exchange{}
	ex.breq, ex.bresp = new(fasthttp.Request), new(fasthttp.Response)
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
	ex.id, ex.num = requestID(ex.start)
	// The deadline bounds everything up to the answer (a stream's relay
	// runs outside it); the watcher cancels earlier if the client leaves.
	d := s.cfg.Timeouts.Request.D()
	c := newReqCtx(s.requestValues(), ex.start.Add(d))
	ex.ctx = c
	ex.rc.Store(c)
	s.live.add(c)
	ex.armDeadline(d)
	ex.watch.reset(rc)
	ex.route = route{}
	ex.out.Reset()
	ex.out.RequestID, ex.out.Start, ex.out.Status = ex.id, ex.start, 200
	ex.inbound.reset()
	ex.upstream.reset(s.recordDecisions)
	ex.stream.reset()
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
		if ex.aver != ex.tver { // an adapter in the translator's module shares its pin
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
	if ex.imgHeld != nil {
		ex.imgHeld.Release()
		ex.imgHeld = nil
	}
	if ex.ticket != nil {
		ex.ticket.Done(ex.usedTokens())
		ex.ticket = nil
	}
	if c := ex.rc.Load(); c != nil {
		ex.dlTimer.Stop()
		ex.s.live.remove(c)
		c.cancel(context.Canceled)
		ex.rc.Store(nil)
	}
}

// cancel ends the request's context (the client went away: watch.go).
func (ex *exchange) cancel() {
	if c := ex.rc.Load(); c != nil {
		c.cancel(context.Canceled)
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
