package fakellm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"
)

// Server is a simulated LLM backend. Create it with New, run it with Serve
// or ListenAndServe, stop it with Close or Shutdown. It is safe for
// concurrent use.
type Server struct {
	cfg Config
	log *slog.Logger
	srv *fasthttp.Server

	models    []*modelState
	byName    map[string]*modelState // served names; for Ollama also "name:latest"
	sem       chan struct{}          // engine slots; nil when unlimited
	faults    faults
	parsers   fastjson.ParserPool
	started   time.Time
	closing   chan struct{}
	closeOnce sync.Once

	connMu sync.Mutex
	conns  map[net.Conn]struct{}

	// counters for Stats
	requests      map[string]*atomic.Int64 // fixed routes, read-only after New
	otherMu       sync.Mutex
	otherRequests map[string]int64
	activeStreams atomic.Int64
	concurrent    atomic.Int64 // inference requests between arrival and finish
	peak          atomic.Int64 // the most concurrent ever seen (ResetPeak)
	completed     atomic.Int64
	cancelled     atomic.Int64
	bodyMu        sync.Mutex
	lastBody      map[string]*[]byte
}

// Stats is a snapshot of what the server has seen, for tests.
type Stats struct {
	// Requests counts received requests by URL path (every path, known or
	// not, every method).
	Requests map[string]int64
	// LastBody is a copy of the last request body received on each path.
	LastBody map[string][]byte
	// ActiveStreams is the number of streaming responses in progress.
	ActiveStreams int64
	// Running is the number of inference requests holding an engine slot;
	// Waiting the number queued for one (see Config.MaxConcurrent).
	Running, Waiting int64
	// Concurrent is the number of inference requests being served (from
	// arrival to their end — a stream's end marker — queued for a slot or
	// not); PeakConcurrent the
	// most there have been at once since New or ResetPeak: what a gateway
	// that must respect max_concurrent may never exceed.
	Concurrent, PeakConcurrent int64
	// Completed counts inference requests that ran to their end; Cancelled
	// those stopped early because the client went away or the server closed.
	Completed, Cancelled int64
	// Errors, Hangs and Drops count injected faults.
	Errors, Hangs, Drops int64
	// PromptTokens and CompletionTokens sum the usage of all requests.
	PromptTokens, CompletionTokens int64
}

// New validates cfg and returns a Server that is not yet listening.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:           cfg,
		log:           cfg.Logger,
		byName:        map[string]*modelState{},
		started:       time.Now(),
		closing:       make(chan struct{}),
		conns:         map[net.Conn]struct{}{},
		requests:      map[string]*atomic.Int64{},
		otherRequests: map[string]int64{},
		lastBody:      map[string]*[]byte{},
	}
	for _, name := range cfg.Models {
		ms := newModelState(name)
		s.models = append(s.models, ms)
		s.byName[name] = ms
	}
	if cfg.Engine == EngineOllama {
		// Ollama's naming rule: a name without a tag means its ":latest",
		// both ways ("x" answers to "x:latest", "x:latest" to "x").
		for _, ms := range s.models {
			alias := ms.name + ":latest"
			if short, ok := strings.CutSuffix(ms.name, ":latest"); ok {
				alias = short
			} else if strings.Contains(ms.name, ":") {
				continue
			}
			if _, taken := s.byName[alias]; !taken && alias != "" {
				s.byName[alias] = ms
			}
		}
	}
	if cfg.MaxConcurrent > 0 {
		s.sem = make(chan struct{}, cfg.MaxConcurrent)
	}
	s.faults.init(cfg)
	for _, p := range s.routes() {
		s.requests[p] = new(atomic.Int64)
	}
	s.srv = &fasthttp.Server{
		Handler:               s.handle,
		Name:                  serverName(cfg.Engine),
		NoDefaultServerHeader: cfg.Engine == EngineOllama,
		NoDefaultContentType:  true,
		ReadBufferSize:        16 << 10,
		MaxRequestBodySize:    64 << 20,
		IdleTimeout:           2 * time.Minute,
		CloseOnShutdown:       true,
		Logger:                fasthttpLogger{s.log},
		ConnState:             s.trackConn,
	}
	return s, nil
}

// Config returns the effective configuration (defaults filled in).
func (s *Server) Config() Config { return s.cfg }

// Serve answers requests on ln until Close or Shutdown. It returns nil after
// a Close or Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	s.log.Info("fakellm serving", "addr", ln.Addr().String(), "engine", s.cfg.Engine, "models", s.cfg.Models,
		"ttft", s.cfg.TTFT, "tps", s.cfg.TPS, "max_concurrent", s.cfg.MaxConcurrent)
	err := s.srv.Serve(ln)
	select {
	case <-s.closing:
		return nil
	default:
	}
	return err
}

// ListenAndServe listens on the TCP address addr and calls Serve.
func (s *Server) ListenAndServe(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(ln)
}

// Start listens on addr (use "127.0.0.1:0" for a free port), serves in the
// background and returns the base URL, e.g. "http://127.0.0.1:41234". It is
// the convenient way to run the simulator inside a Go test.
func Start(cfg Config, addr string) (*Server, string, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	go func() {
		if err := s.Serve(ln); err != nil {
			s.log.Error("fakellm serve", "err", err)
		}
	}()
	return s, "http://" + ln.Addr().String(), nil
}

// Shutdown stops accepting connections and waits for in-flight requests and
// streams to finish, until ctx is done; then it aborts what is left as Close
// does.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.ShutdownWithContext(ctx)
	if err != nil {
		s.Close()
		return err
	}
	s.closeOnce.Do(func() { close(s.closing) })
	return nil
}

// Close stops the server at once: it closes the listeners, aborts queued,
// hanging and streaming requests and closes every connection.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.closing) })
	s.connMu.Lock()
	for c := range s.conns {
		_ = c.Close()
	}
	s.connMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = s.srv.ShutdownWithContext(ctx)
}

// serverName is the Server header: uvicorn for vLLM, none for Ollama (gin).
func serverName(engine string) string {
	if engine == EngineVLLM {
		return "uvicorn"
	}
	return ""
}

func (s *Server) trackConn(c net.Conn, state fasthttp.ConnState) {
	switch state {
	case fasthttp.StateNew:
		s.connMu.Lock()
		s.conns[c] = struct{}{}
		s.connMu.Unlock()
	case fasthttp.StateClosed, fasthttp.StateHijacked:
		s.connMu.Lock()
		delete(s.conns, c)
		s.connMu.Unlock()
	}
}

// Stats returns a snapshot of the server's counters.
func (s *Server) Stats() Stats {
	st := Stats{
		Requests:       make(map[string]int64, len(s.requests)),
		LastBody:       map[string][]byte{},
		ActiveStreams:  s.activeStreams.Load(),
		Concurrent:     s.concurrent.Load(),
		PeakConcurrent: s.peak.Load(),
		Completed:      s.completed.Load(),
		Cancelled:      s.cancelled.Load(),
		Errors:         s.faults.errors.Load(),
		Hangs:          s.faults.hangs.Load(),
		Drops:          s.faults.drops.Load(),
	}
	for p, c := range s.requests {
		if n := c.Load(); n > 0 {
			st.Requests[p] = n
		}
	}
	s.otherMu.Lock()
	for p, n := range s.otherRequests {
		st.Requests[p] += n
	}
	s.otherMu.Unlock()
	s.bodyMu.Lock()
	for p, b := range s.lastBody {
		st.LastBody[p] = append([]byte(nil), *b...)
	}
	s.bodyMu.Unlock()
	for _, ms := range s.models {
		st.Running += ms.running.Load()
		st.Waiting += ms.waiting.Load()
		st.PromptTokens += ms.promptTokens.Load()
		st.CompletionTokens += ms.genTokens.Load()
	}
	return st
}

// LastBody returns a copy of the last request body received on path, or nil.
func (s *Server) LastBody(path string) []byte {
	s.bodyMu.Lock()
	defer s.bodyMu.Unlock()
	if b, ok := s.lastBody[path]; ok {
		return append([]byte(nil), *b...)
	}
	return nil
}

func (s *Server) routes() []string {
	if s.cfg.Engine == EngineOllama {
		return []string{"/", "/api/version", "/api/tags", "/api/ps", "/api/show", "/api/chat",
			"/api/generate", "/api/embed", "/api/embeddings"}
	}
	return []string{"/health", "/ping", "/version", "/metrics", "/v1/models", "/v1/chat/completions",
		"/v1/completions", "/v1/embeddings", "/tokenize", "/detokenize", "/v1/rerank", "/rerank",
		"/v2/rerank", "/v1/score", "/score"}
}

func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	defer func() {
		if err := recover(); err != nil {
			s.log.Error("fakellm: handler panic", "path", string(ctx.Path()), "err", err, "stack", string(debug.Stack()))
			ctx.ResetBody()
			ctx.SetStatusCode(fasthttp.StatusInternalServerError)
		}
	}()
	path := ctx.Path()
	if c, ok := s.requests[string(path)]; ok {
		c.Add(1)
	} else {
		s.otherMu.Lock()
		s.otherRequests[string(path)]++
		s.otherMu.Unlock()
	}
	if body := ctx.Request.Body(); len(body) > 0 {
		s.bodyMu.Lock()
		lb, ok := s.lastBody[string(path)] // no allocation for known paths
		if !ok {
			lb = new([]byte)
			s.lastBody[string(path)] = lb
		}
		*lb = append((*lb)[:0], body...)
		s.bodyMu.Unlock()
	}
	if s.log.Enabled(context.Background(), slog.LevelDebug) {
		s.log.Debug("request", "method", string(ctx.Method()), "path", string(path), "bytes", len(ctx.Request.Body()))
	}
	if s.cfg.Engine == EngineOllama {
		s.handleOllama(ctx)
	} else {
		s.handleVLLM(ctx)
	}
}

// --- models -----------------------------------------------------------------

type modelState struct {
	name     string
	thinking bool

	running, waiting         atomic.Int64
	promptTokens, genTokens  atomic.Int64
	finishStop, finishLength atomic.Int64
	finishAbort              atomic.Int64
	ttft, e2e                *histogram
	lastUsed                 atomic.Int64 // unix nanos, for Ollama's /api/ps
	numCtx                   atomic.Int64
}

func newModelState(name string) *modelState {
	ms := &modelState{
		name:     name,
		thinking: isThinkingModel(name),
		ttft:     newHistogram(ttftBuckets),
		e2e:      newHistogram(e2eBuckets),
	}
	ms.numCtx.Store(DefaultOllamaNumCtx)
	return ms
}

// lookupModel resolves a requested model name; "" means the first model.
func (s *Server) lookupModel(name string) *modelState {
	if name == "" {
		return s.models[0]
	}
	return s.byName[name]
}

// --- request lifecycle ------------------------------------------------------

// call is one in-flight inference request: it holds the engine slot, paces
// tokens and notices when the client goes away.
type call struct {
	s       *Server
	ms      *modelState
	arrived time.Time
	watch   *connWatch
	timer   *time.Timer
	holding bool
	counted bool // in Server.concurrent

	slotAt    time.Time // when the slot was acquired
	firstTok  time.Time
	cancelled bool
}

// needsWatch reports whether requests may wait, so that client disconnects
// must be noticed while nothing is being written.
func (s *Server) needsWatch() bool {
	return s.cfg.TTFT > 0 || s.cfg.TPS > 0 || s.sem != nil
}

func (s *Server) newCall(ctx *fasthttp.RequestCtx, ms *modelState) *call {
	c := &call{s: s, ms: ms, arrived: time.Now()}
	if s.needsWatch() {
		c.watch = watchConn(ctx.Conn())
	}
	ms.lastUsed.Store(c.arrived.UnixNano())
	n := s.concurrent.Add(1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	c.counted = true
	return c
}

// ResetPeak restarts Stats.PeakConcurrent from the requests being served
// now (a test measures the peak of one phase).
func (s *Server) ResetPeak() { s.peak.Store(s.concurrent.Load()) }

func (c *call) gone() <-chan struct{} {
	if c.watch == nil {
		return nil
	}
	return c.watch.gone
}

// acquire waits for an engine slot. It returns false if the client went away
// or the server closed first.
func (c *call) acquire() bool {
	s := c.s
	if s.sem != nil {
		select {
		case s.sem <- struct{}{}:
		default:
			c.ms.waiting.Add(1)
			select {
			case s.sem <- struct{}{}:
				c.ms.waiting.Add(-1)
			case <-c.gone():
				c.ms.waiting.Add(-1)
				c.cancelled = true
				return false
			case <-s.closing:
				c.ms.waiting.Add(-1)
				c.cancelled = true
				return false
			}
		}
	}
	c.holding = true
	c.ms.running.Add(1)
	c.slotAt = time.Now()
	return true
}

// tokenTime is when token i (0-based) is due.
func (c *call) tokenTime(i int) time.Time {
	t := c.slotAt.Add(c.s.cfg.TTFT)
	if c.s.cfg.TPS > 0 && i > 0 {
		t = t.Add(time.Duration(float64(i) / c.s.cfg.TPS * float64(time.Second)))
	}
	return t
}

// paceSlack: a token (after the first) due less than this far ahead goes
// out at once instead of after a sleep. A timer costs tens of microseconds
// and wakes as late, so at a high TPS one sleep per token paced the stream
// by its timers (16 tokens at TPS 1e6: about 1 ms a request instead of
// 16 µs). Due times count from the slot (tokenTime), not from the previous
// token, so a token sent early moves no later one: the stream keeps TPS on
// average and no token is more than paceSlack early. The first token keeps
// TTFT exactly.
const paceSlack = 250 * time.Microsecond

// waitToken sleeps until token i is due (within paceSlack for i > 0). It
// returns false if the client went away or the server closed.
func (c *call) waitToken(i int) bool {
	if c.s.cfg.TTFT == 0 && c.s.cfg.TPS == 0 {
		return true
	}
	d := time.Until(c.tokenTime(i))
	if d <= 0 || i > 0 && d < paceSlack {
		return true
	}
	if c.timer == nil {
		c.timer = time.NewTimer(d)
	} else {
		c.timer.Reset(d)
	}
	select {
	case <-c.timer.C:
		return true
	case <-c.gone():
	case <-c.s.closing:
	}
	c.cancelled = true
	return false
}

// tokenEmitted records now as the time of the first token.
func (c *call) tokenEmitted() { c.tokenEmittedAt(time.Now()) }

// tokenEmittedAt records t as the time of the first token.
func (c *call) tokenEmittedAt(t time.Time) {
	if c.firstTok.IsZero() {
		c.firstTok = t
		c.ms.ttft.observe(t.Sub(c.arrived))
	}
}

// uncount takes the call out of Stats.Concurrent before its stream's end
// marker is written: a client reading the marker may send its next request
// at once, and that one must not find this call still counted (its
// goroutine has yet to return to finish), or a gateway that keeps
// max_concurrent exactly would be seen exceeding it by one. finish then
// does not count it out again.
func (c *call) uncount() {
	if c.counted {
		c.counted = false
		c.s.concurrent.Add(-1)
	}
}

// finish releases the slot and records metrics. reason is the engine's
// finish reason ("stop", "length"; ignored when the call was cancelled).
func (c *call) finish(promptTokens, completionTokens int, reason string) {
	if c.counted {
		c.counted = false
		c.s.concurrent.Add(-1)
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.watch != nil {
		c.watch.stop()
		c.watch = nil
	}
	if c.holding {
		c.holding = false
		c.ms.running.Add(-1)
		if c.s.sem != nil {
			<-c.s.sem
		}
	}
	c.ms.promptTokens.Add(int64(promptTokens))
	c.ms.genTokens.Add(int64(completionTokens))
	if c.cancelled {
		c.s.cancelled.Add(1)
		c.ms.finishAbort.Add(1)
		return
	}
	c.s.completed.Add(1)
	switch reason {
	case "":
	case "length":
		c.ms.finishLength.Add(1)
		c.ms.e2e.observe(time.Since(c.arrived))
	default:
		c.ms.finishStop.Add(1)
		c.ms.e2e.observe(time.Since(c.arrived))
	}
}

// connWatch notices a client disconnect while the server is not writing: it
// blocks in a one-byte read of the connection, which returns when the peer
// closes it. HTTP/1.1 clients send nothing more until the response is
// complete, so the read never steals a request byte; stop must be called
// before the response ends so the server gets the connection back. (A client
// that half-closes its side after sending the request looks gone.)
type connWatch struct {
	conn     net.Conn
	gone     chan struct{}
	done     chan struct{}
	stopping atomic.Bool
}

func watchConn(conn net.Conn) *connWatch {
	w := &connWatch{conn: conn, gone: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *connWatch) run() {
	defer close(w.done)
	var b [1]byte
	_, err := w.conn.Read(b[:])
	if w.stopping.Load() {
		return
	}
	var ne net.Error
	if err != nil && errors.As(err, &ne) && ne.Timeout() {
		return // a deadline someone else set; stop watching
	}
	close(w.gone)
}

func (w *connWatch) stop() {
	w.stopping.Store(true)
	_ = w.conn.SetReadDeadline(time.Unix(1, 0))
	<-w.done
	_ = w.conn.SetReadDeadline(time.Time{})
}

// fasthttpLogger routes fasthttp's messages to slog.
type fasthttpLogger struct{ l *slog.Logger }

func (l fasthttpLogger) Printf(format string, args ...any) {
	l.l.Debug("fasthttp", "msg", fmt.Sprintf(format, args...))
}
