package server

import (
	"encoding/hex"
	"math/rand/v2"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/frame"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// exchange is the per-request working set, pooled so that steady-state
// requests reuse every buffer. It belongs to one request at a time: the
// handler, then (for a stream) the relay goroutine, which returns it.
type exchange struct {
	s     *Server
	id    string // "chatcmpl-<32 hex>", also X-Request-ID
	num   uint64 // numeric id for plugin log correlation
	start time.Time
	route route

	tres, ares   pluginhost.Result
	canon        []byte // canonical request JSON
	buf, meta    []byte
	model        string
	includeUsage bool
	stream       bool

	backend    *backend.Backend
	slot       bool
	tver, aver *pluginhost.Version
	breq       *fasthttp.Request
	bresp      *fasthttp.Response

	// streaming
	split          frame.Splitter
	sse, ndjson    frame.Splitter
	rbuf           []byte
	list           []byte
	emitFn         func([]byte)
	tstate, astate []byte
	tFirst, aFirst bool
	backendDone    bool
	clientGone     bool
	chunks         int

	status int
	errMsg string
}

func newExchange() *exchange {
	ex := &exchange{
		breq:   new(fasthttp.Request),
		bresp:  new(fasthttp.Response),
		rbuf:   make([]byte, 32<<10),
		sse:    frame.NewSSE(1 << 20),
		ndjson: frame.NewNDJSON(1 << 20),
	}
	ex.emitFn = ex.emit
	return ex
}

// begin readies a pooled exchange for a new request.
func (ex *exchange) begin(s *Server) {
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
	ex.route = route{}
	ex.model, ex.includeUsage, ex.stream = "", false, false
	ex.backend, ex.slot = nil, false
	ex.tver, ex.aver = nil, nil
	ex.split = nil
	ex.tstate, ex.astate = ex.tstate[:0], ex.astate[:0]
	ex.tFirst, ex.aFirst = true, true
	ex.backendDone, ex.clientGone = false, false
	ex.chunks = 0
	ex.status, ex.errMsg = 200, ""
}

// release returns what the exchange holds and puts it back in the pool.
func (ex *exchange) release() {
	ex.releaseHeld()
	ex.breq.Reset()
	ex.bresp.Reset()
	s := ex.s
	ex.s = nil
	s.exchanges.Put(ex)
}

// releaseHeld returns the backend slot and the pinned plugin versions.
func (ex *exchange) releaseHeld() {
	if ex.slot {
		ex.backend.Release()
		ex.slot = false
	}
	if ex.tver != nil {
		ex.tver.Release()
		ex.tver = nil
	}
	if ex.aver != nil {
		ex.aver.Release()
		ex.aver = nil
	}
}

func (ex *exchange) emit(ev []byte) { ex.list = abi.AppendItem(ex.list, ev) }

// responseMeta is the metadata a translator needs to write a response.
func (ex *exchange) responseMeta() []byte {
	m := abi.AppendMeta(ex.meta[:0], "route", ex.route.r.Name)
	m = abi.AppendMeta(m, "id", ex.id)
	m = abi.AppendMeta(m, "model", ex.model)
	m = abi.AppendMeta(m, "created", itoa(ex.start.Unix()))
	if ex.includeUsage {
		m = abi.AppendMeta(m, "include_usage", "1")
	}
	ex.meta = m
	return m
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
