// Package backend is the registry of inference servers: their HTTP clients,
// concurrency slots, and what discovery learned about them (health, models,
// load). Discovery runs each adapter plugin's manifest probes and merges
// what the adapter decodes; routing reads an immutable snapshot.
package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Backend is one inference endpoint. Safe for concurrent use.
type Backend struct {
	Name   string
	Engine string
	base   string // scheme://host:port, no trailing slash
	models []string

	// client serves complete responses; stream serves streamed ones (its
	// body is read incrementally and its read timeout is the idle timeout).
	client *fasthttp.HostClient
	stream *fasthttp.HostClient

	slots    chan struct{}
	inflight atomic.Int64
	waiting  atomic.Int64 // requests waiting for a slot
	adapter  atomic.Pointer[pluginhost.Plugin]
	status   atomic.Pointer[Status]
	place    atomic.Pointer[placement] // its node and GPUs (SetNodes)
	state    atomic.Uint32             // an admin's choice: stateEnabled, stateDisabled, stateDraining
	priority atomic.Int64              // an admin's preference (SetPriority)
	tel      telemetry                 // latency and throughput EMAs (telemetry.go)
	gpu      atomic.Pointer[GPUStats]  // its GPUs' figures from the sidecar; nil: unknown (sidecar.go)
	brk      breaker                   // live requests' circuit breaker (breaker.go)
	cfg      config.Backend            // what it was built from (Registry.Put compares)
	removed  atomic.Bool               // out of the registry: no new requests (Registry.Remove, Put)
}

// Admin states of a backend. A disabled or draining backend gets no new
// requests; those in flight finish.
const (
	stateEnabled uint32 = iota
	stateDisabled
	stateDraining
)

var stateNames = [...]string{"enabled", "disabled", "draining"}

// SetState sets the admin state: "enabled", "disabled" or "draining".
func (b *Backend) SetState(s string) error {
	for i, n := range stateNames {
		if n == s {
			b.state.Store(uint32(i))
			return nil
		}
	}
	return fmt.Errorf("backend %s: unknown state %q", b.Name, s)
}

// State is the admin state's name.
func (b *Backend) State() string { return stateNames[b.state.Load()] }

// SetPriority sets the admin priority (store.Backend.Priority): among
// backends that can serve a request, scoring prefers higher priorities.
func (b *Backend) SetPriority(p int) { b.priority.Store(int64(p)) }

// Priority is the admin priority (0 unless set).
func (b *Backend) Priority() int { return int(b.priority.Load()) }

// Status is what the last discovery round found. Immutable once published.
type Status struct {
	Healthy  bool
	Err      string
	Checked  time.Time
	Models   map[string]canon.DiscoveredModel
	Version  string
	HasLoad  bool
	Running  float64
	Waiting  float64
	KVCache  float64
	Probed   bool // at least one probe round finished
	Adapter  string
	Failures int // consecutive failed rounds

	aliases map[string]string // "name" → "name:latest" (Ollama backends); set by publish
}

func newBackend(bc config.Backend, t config.Timeouts) (*Backend, error) {
	u, err := url.Parse(bc.URL)
	if err != nil {
		return nil, fmt.Errorf("backend %s: parse url: %w", bc.Name, err)
	}
	tls := u.Scheme == "https"
	addr := u.Host
	if u.Port() == "" {
		if tls {
			addr += ":443"
		} else {
			addr += ":80"
		}
	}
	idle := bc.IdleConnTimeout.D()
	if idle <= 0 {
		idle = DefaultIdleConnTimeout
	}
	mk := func(stream bool) *fasthttp.HostClient {
		hc := &fasthttp.HostClient{
			Addr:                          addr,
			IsTLS:                         tls,
			Name:                          "mindrouter",
			MaxConns:                      bc.MaxConcurrent + 8,
			MaxIdleConnDuration:           idle,
			MaxIdemponentCallAttempts:     2,
			DisableHeaderNamesNormalizing: false,
			NoDefaultUserAgentHeader:      true,
			StreamResponseBody:            stream,
			MaxResponseBodySize:           64 << 20,
			Dial: func(a string) (net.Conn, error) {
				return fasthttp.DialTimeout(a, t.Connect.D())
			},
		}
		hc.RetryIfErr = retryStale(hc)
		hc.Transport = ctxTransport{} // DoContext's cancellation; fasthttp's own otherwise
		if stream {
			hc.ReadTimeout = t.StreamIdle.D()
		}
		return hc
	}
	b := &Backend{
		Name:   bc.Name,
		Engine: bc.Engine,
		base:   u.Scheme + "://" + u.Host + trimSlash(u.Path),
		models: bc.Models,
		client: mk(false),
		stream: mk(true),
		slots:  make(chan struct{}, bc.MaxConcurrent),
		cfg:    bc,
	}
	b.cfg.Models = slices.Clone(bc.Models)
	b.brk.name = bc.Name
	b.status.Store(&Status{Models: map[string]canon.DiscoveredModel{}})
	return b, nil
}

func trimSlash(p string) string {
	for len(p) > 0 && p[len(p)-1] == '/' {
		p = p[:len(p)-1]
	}
	return p
}

// URL joins the backend's base URL and path.
func (b *Backend) URL(path string) string { return b.base + path }

// AppendURL appends URL(path) to dst (the request path: no allocation).
func (b *Backend) AppendURL(dst []byte, path string) []byte {
	return append(append(dst, b.base...), path...)
}

// Status returns the latest discovery snapshot.
func (b *Backend) Status() *Status { return b.status.Load() }

// SetStatus publishes st (which must not change afterwards) and the
// adapter serving the backend's engine (nil for none), as a discovery
// round does. Discovery owns both in the gateway; this is for tests of
// packages that route over a Registry, and for other discovery sources.
func (b *Backend) SetStatus(st *Status, adapter *pluginhost.Plugin) {
	if st.Models == nil {
		st.Models = map[string]canon.DiscoveredModel{}
	}
	b.adapter.Store(adapter)
	b.publish(st)
}

// publish makes st the backend's status, with its model aliases and, on
// an Ollama backend, its models' windows bounded by max_num_ctx.
func (b *Backend) publish(st *Status) {
	if b.Engine == EngineOllama {
		st.Models = boundContext(st.Models, b.MaxNumCtx())
		st.aliases = latestAliases(st.Models)
	}
	b.status.Store(st)
}

// DefaultMaxNumCtx bounds an Ollama backend's context windows when its
// config sets no max_num_ctx: Ollama allocates the KV cache for the whole
// num_ctx the gateway sends, and a model's trained context (128k for
// Llama 3.x) would take far more GPU memory than its weights. It is what
// the reference implementation injects, min(trained context, 32768), and
// holds a coding agent's prompt (Claude Code's is about 10k tokens).
const DefaultMaxNumCtx = 32768

// MaxNumCtx is the largest num_ctx the gateway sends an Ollama backend,
// and so the largest context window it uses for its models.
func (b *Backend) MaxNumCtx() int {
	if b.cfg.MaxNumCtx > 0 {
		return b.cfg.MaxNumCtx
	}
	return DefaultMaxNumCtx
}

// boundContext returns models with every ContextLength at most limit: the
// window becomes each request's num_ctx (the adapter sends the hint), and
// the context check and output cap work from the same figure. models is
// copied before a change, since a published map is shared read only (a
// round that failed republishes the last one).
func boundContext(models map[string]canon.DiscoveredModel, limit int) map[string]canon.DiscoveredModel {
	out, copied := models, false
	for name, m := range models {
		if m.ContextLength <= limit {
			continue
		}
		if !copied {
			out, copied = maps.Clone(models), true
		}
		m.ContextLength = limit
		out[name] = m
	}
	return out
}

// EngineOllama is the engine name of Ollama backends, whose own naming
// rule the gateway follows: a model without a tag is its ":latest".
const EngineOllama = "ollama"

// latestTag is the tag Ollama implies when a name has none.
const latestTag = ":latest"

// latestAliases maps "name" to "name:latest" for every model listed with
// the implied tag, unless "name" is itself listed: Ollama serves
// "name:latest" to a request for "name", so the gateway routes it too.
func latestAliases(models map[string]canon.DiscoveredModel) map[string]string {
	var a map[string]string
	for name := range models {
		short, ok := strings.CutSuffix(name, latestTag)
		if !ok || short == "" || strings.HasSuffix(short, "/") {
			continue
		}
		if _, listed := models[short]; listed {
			continue
		}
		if a == nil {
			a = map[string]string{}
		}
		a[short] = name
	}
	return a
}

// Adapter returns the adapter plugin serving this backend's engine, or nil
// when none is loaded.
func (b *Backend) Adapter() *pluginhost.Plugin { return b.adapter.Load() }

// InFlight is the number of requests holding a slot.
func (b *Backend) InFlight() int64 { return b.inflight.Load() }

// Waiting is the number of requests waiting for a slot.
func (b *Backend) Waiting() int64 { return b.waiting.Load() }

// Capacity is max_concurrent.
func (b *Backend) Capacity() int { return cap(b.slots) }

// Routable reports whether requests may go to b now: an admin has not
// disabled or drained it, the last discovery round found it healthy, an
// adapter plugin serves its engine and its circuit breaker lets requests
// through (closed, or half-open with its one probe not yet sent).
func (b *Backend) Routable() bool {
	return b.state.Load() == stateEnabled && !b.removed.Load() && b.status.Load().Healthy && b.adapter.Load() != nil &&
		b.brk.allow()
}

// Removed reports whether b left the registry (deleted or replaced by an
// update): its requests in flight finish, and it gets no new ones.
func (b *Backend) Removed() bool { return b.removed.Load() }

// LoadShare is the in-flight share of capacity, in-flight / max_concurrent.
func (b *Backend) LoadShare() float64 {
	return float64(b.inflight.Load()) / float64(cap(b.slots))
}

// ErrQueueTimeout reports that no slot freed up within the queue wait.
var ErrQueueTimeout = errors.New("backend: no free slot before the queue deadline")

// TryAcquire takes a concurrency slot if one is free, without waiting.
// Release returns it.
func (b *Backend) TryAcquire() bool {
	select {
	case b.slots <- struct{}{}:
		b.inflight.Add(1)
		return true
	default:
		return false
	}
}

// Acquire takes a concurrency slot, waiting at most wait. The common case,
// a free slot, costs one channel send and no timer.
func (b *Backend) Acquire(wait time.Duration) error {
	return b.AcquireContext(context.Background(), wait)
}

// AcquireContext takes a concurrency slot, waiting at most wait and no
// longer than ctx lives. It returns nil (Release returns the slot),
// ErrQueueTimeout, or ctx.Err(); on error it holds nothing. The common
// case, a free slot, costs one channel send, no timer and no allocation.
func (b *Backend) AcquireContext(ctx context.Context, wait time.Duration) error {
	if b.TryAcquire() {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if wait <= 0 {
		return ErrQueueTimeout
	}
	b.waiting.Add(1)
	defer b.waiting.Add(-1)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case b.slots <- struct{}{}:
		b.inflight.Add(1)
		return nil
	case <-t.C:
		return ErrQueueTimeout
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Release returns a slot taken by Acquire, AcquireContext or TryAcquire.
func (b *Backend) Release() {
	b.inflight.Add(-1)
	<-b.slots
}

// DefaultIdleConnTimeout is the pooled-connection idle limit of a backend
// whose configuration names none (config.Parse applies the same default).
const DefaultIdleConnTimeout = 4 * time.Second

// Do sends req and reads the whole response, within timeout. A request
// that fails on a connection the backend had already closed is retried
// once on a fresh connection (see retryStale).
func (b *Backend) Do(req *fasthttp.Request, resp *fasthttp.Response, timeout time.Duration) error {
	return b.client.DoTimeout(req, resp, timeout)
}

// DoStream sends req and returns once the response headers are read; the
// caller reads resp.BodyStream() and must call resp.CloseBodyStream. Stale
// connections are retried as by Do.
func (b *Backend) DoStream(req *fasthttp.Request, resp *fasthttp.Response) error {
	return b.stream.Do(req, resp)
}

// retryStale is hc's RetryIfErr. A pooled keep-alive connection may have
// been closed by the backend while idle (uvicorn, under vLLM, closes after
// 5 s; a restarted backend drops them all); the request then fails before
// any response byte arrives. Such a request, POST included, is retried
// exactly once, after dropping every idle connection so the retry dials a
// fresh one rather than taking the next dead connection from the pool
// (only a connection released concurrently by a request that just used
// it can be picked up instead, and that one is live). Never retried: a
// timeout, an error after response bytes arrived (the backend may be
// generating), a dial error (fasthttp does not offer those for retry), a
// request with a body stream (fasthttp cannot replay it).
func retryStale(hc *fasthttp.HostClient) fasthttp.RetryIfErrFunc {
	return func(_ *fasthttp.Request, attempts int, err error) (resetTimeout, retry bool) {
		if attempts != 1 || !staleConnErr(err) {
			return false, false
		}
		hc.CloseIdleConnections()
		return false, true
	}
}

// staleConnErr reports whether err, from one fasthttp round trip, means
// the connection failed before the backend sent any response byte.
func staleConnErr(err error) bool {
	var te interface{ Timeout() bool }
	if err == nil || errors.As(err, &te) && te.Timeout() {
		return false
	}
	// fasthttp reports every non-timeout failure to read the first byte of
	// the response head (EOF, connection reset) as exactly io.EOF; a failure
	// after bytes arrived comes wrapped ("error when reading response
	// headers: ...", body errors) and is not retried.
	if err == io.EOF || err == fasthttp.ErrConnectionClosed {
		return true
	}
	// The request is written in full before anything is read, so a write
	// error (broken pipe, reset) means no response byte can have arrived.
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "write"
}

// Serves reports whether the backend currently offers model (as far as
// the last successful discovery knows), under its own name or, on an
// Ollama backend, without its ":latest" tag.
func (s *Status) Serves(model string) bool {
	if _, ok := s.Models[model]; ok {
		return true
	}
	_, ok := s.aliases[model]
	return ok
}

// Model returns what discovery knows about model, found as Serves finds
// it (an Ollama backend's "name:latest" answers to "name").
func (s *Status) Model(model string) (canon.DiscoveredModel, bool) {
	if m, ok := s.Models[model]; ok {
		return m, true
	}
	if full, ok := s.aliases[model]; ok {
		m, ok := s.Models[full]
		return m, ok
	}
	return canon.DiscoveredModel{}, false
}
