package server

import (
	"bytes"
	"net/netip"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/outcome"
)

// parseProxies reads audit.trusted_proxies (validated with the config).
func parseProxies(list []string) []netip.Prefix {
	var out []netip.Prefix
	for _, a := range list {
		if p, err := netip.ParsePrefix(a); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}

func trusted(proxies []netip.Prefix, a netip.Addr) bool {
	for _, p := range proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// clientAddr is the client's address for the audit: the peer, or, when
// the peer is a trusted proxy, the right-most address of X-Forwarded-For
// that is not a trusted proxy (addresses left of it are the client's own
// claims and cannot be believed). Every X-Forwarded-For line counts, in
// the order received, as one comma-separated list: a proxy may append a
// line of its own (HAProxy's option forwardfor) instead of extending the
// client's, and reading only the first line would believe the client.
func clientAddr(ctx *fasthttp.RequestCtx, proxies []netip.Prefix) netip.Addr {
	peer, _ := netip.AddrFromSlice(ctx.RemoteIP())
	peer = peer.Unmap()
	if len(proxies) == 0 || !trusted(proxies, peer) {
		return peer
	}
	var buf [4][]byte
	lines := buf[:0]
	// All, not PeekAll: PeekAll adds the request's trailers, which a
	// client writes after every proxy's header and so could forge the
	// right-most hop.
	for k, v := range ctx.Request.Header.All() {
		if bytes.EqualFold(k, xffHeader) {
			lines = append(lines, v)
		}
	}
	last := peer
	for i := len(lines) - 1; i >= 0; i-- {
		xff := lines[i]
		for len(xff) > 0 {
			j := bytes.LastIndexByte(xff, ',')
			part := bytes.TrimSpace(xff[j+1:])
			xff = xff[:max(j, 0)]
			a, err := netip.ParseAddr(string(part))
			if err != nil {
				return peer // a malformed hop: trust nothing beyond the proxy
			}
			a = a.Unmap()
			if !trusted(proxies, a) {
				return a
			}
			last = a
			if j < 0 {
				break
			}
		}
	}
	return last // only proxies: the left-most hop
}

var xffHeader = []byte("X-Forwarded-For")

// noteClient keeps what the audit needs from the request's headers (the
// exchange outlives a stream's RequestCtx).
func (ex *exchange) noteClient(ctx *fasthttp.RequestCtx) {
	ex.ip = clientAddr(ctx, ex.s.proxies)
	ex.ua = append(ex.ua[:0], ctx.UserAgent()...)
	if len(ex.ua) > 512 {
		ex.ua = ex.ua[:512]
	}
}

// keepResponse keeps the start of a streamed response for the audit, up
// to audit.max_content_bytes.
func (ex *exchange) keepResponse(p []byte) {
	room := ex.s.keep - len(ex.resp)
	if room <= 0 {
		ex.out.ResponseCut = true
		return
	}
	if len(p) > room {
		p = p[:room]
		ex.out.ResponseCut = true
	}
	ex.resp = append(ex.resp, p...)
}

// observeBackend feeds a successful request's figures to its backend's
// telemetry (latency, time to first byte, tokens per second, model
// loaded), which the scheduler's scores read.
func (ex *exchange) observeBackend() {
	b, o := ex.backend, &ex.out
	if b == nil || o.Status != fasthttp.StatusOK || ex.clientGone {
		return
	}
	if o.Stream {
		b.ObserveTTFB(o.Stages[outcome.StageBackend])
		b.ObserveTokens(o.Usage.Completion, o.Stages[outcome.StageRespond])
	} else {
		b.ObserveLatency(o.Stages[outcome.StageBackend])
		b.ObserveTokens(o.Usage.Completion, o.Stages[outcome.StageBackend])
	}
	if ex.req.Model != "" {
		b.MarkLoaded(ex.req.Model)
	}
}

// fillKnown fills the Outcome's client, placement and decision: what is
// known once the request is admitted (finish and noteStarted). Called at
// both, it converts the client's address and agent and writes the
// decision's JSON once (again only after another admission: a retry).
func (ex *exchange) fillKnown() {
	o := &ex.out
	if o.ClientIP == "" && ex.ip.IsValid() {
		o.ClientIP = ex.ip.String()
	}
	if o.UserAgent == "" && len(ex.ua) > 0 {
		o.UserAgent = string(ex.ua)
	}
	o.UserID = ex.principal.UserID
	if ex.backend != nil {
		o.Node, o.GPUs = ex.backend.Placement()
	}
	if ex.sreq.Decision != nil && ex.decision.Chosen != "" {
		if !ex.decDone {
			ex.decW.Reset()
			ex.decision.WriteJSON(&ex.decW)
			ex.decDone = true
		}
		o.Decision = ex.decW.B // the observers copy it
		o.FairnessDelay = time.Duration(ex.decision.FairnessWait) * time.Microsecond
	}
}

// energy estimates the GPU energy of a request: the power its backend's
// GPUs drew at the last sidecar reading, over the time the backend worked
// on it (until the response headers, or the whole stream), split evenly
// among the requests the backend had in flight. A rough figure, for
// comparing users and models, not a meter: the reading is up to a
// discovery interval old and requests do not load a GPU equally.
func energy(b *backend.Backend, o *outcome.Outcome) float64 {
	g := b.GPU()
	if g == nil || !g.HasPower || g.PowerW <= 0 {
		return 0
	}
	busy := o.Stages[outcome.StageBackend]
	if o.Stream {
		busy += o.Stages[outcome.StageRespond]
	}
	share := float64(b.InFlight() + 1) // this request's slot is already released
	return g.PowerW * busy.Seconds() / share
}

// fillAudit completes the Outcome for the observers (finish).
func (ex *exchange) fillAudit(ctx *fasthttp.RequestCtx) {
	o := &ex.out
	ex.fillKnown()
	if ex.backend != nil {
		o.EnergyJ = energy(ex.backend, o)
	}
	keep := ex.s.keep
	// The admin API's bodies are never kept: a new key is in one.
	if keep <= 0 || o.Kind == "admin" {
		return
	}
	// Whole bodies: the recorder takes base64 images out (stored once, by
	// reference) before it cuts the rest at audit.max_content_bytes, so
	// an image larger than that is kept, not cut; it bounds what it holds.
	o.Request = ex.body
	if ctx != nil && len(ex.resp) == 0 { // not a stream: the whole body is at hand
		o.Response = ctx.Response.Body()
	} else {
		o.Response = ex.resp
	}
}
