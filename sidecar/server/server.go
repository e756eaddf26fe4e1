// Package server serves the sidecar's HTTP API: GET /health, GET /gpu-info
// and GET /metrics, all behind the X-Sidecar-Key header.
//
// It does not import go-nvml; readings come from a Source (in production
// collect.Collector), so the handlers can be tested with any fake.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/mindrouter/mindrouter/sidecar/wire"
)

// DefaultCacheTTL is how long one GPU reading is reused for concurrent
// requests.
const DefaultCacheTTL = 250 * time.Millisecond

// Source provides the readings the handlers serve.
type Source interface {
	Health(ctx context.Context) (*wire.Health, error)
	GPUInfo(ctx context.Context) (*wire.GPUInfo, error)
}

// Config configures a Server.
type Config struct {
	Source   Source
	Key      Secret
	Version  string        // sidecar_version in error answers and metrics
	CacheTTL time.Duration // zero means DefaultCacheTTL; negative disables reuse
	Logger   *slog.Logger  // default: discard
	Now      func() time.Time
}

// Server is the sidecar's http.Handler.
type Server struct {
	src     Source
	key     Secret
	version string
	log     *slog.Logger
	info    *cache[*wire.GPUInfo]
	mux     *http.ServeMux
}

// New checks cfg and returns the handler.
func New(cfg Config) (*Server, error) {
	if cfg.Source == nil {
		return nil, errors.New("new sidecar server: no source")
	}
	if !cfg.Key.IsSet() {
		return nil, ErrEmptySecret
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.CacheTTL == 0 {
		cfg.CacheTTL = DefaultCacheTTL
	}
	s := &Server{
		src:     cfg.Source,
		key:     cfg.Key,
		version: cfg.Version,
		log:     cfg.Logger,
		info:    newCache(cfg.CacheTTL, cfg.Now, cfg.Source.GPUInfo),
		mux:     http.NewServeMux(),
	}
	s.mux.HandleFunc("/health", getOnly(s.handleHealth))
	s.mux.HandleFunc("/gpu-info", getOnly(s.handleGPUInfo))
	s.mux.HandleFunc("/metrics", getOnly(s.handleMetrics))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint; try /health, /gpu-info or /metrics")
	})
	return s, nil
}

// ServeHTTP checks the key, then routes. Unauthenticated callers learn
// nothing, not even which paths exist.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	defer func() {
		if p := recover(); p != nil {
			s.log.ErrorContext(r.Context(), "panic in handler", "path", r.URL.Path, "panic", p)
			if !rec.wrote {
				writeError(rec, http.StatusInternalServerError, "internal error")
			}
		}
		s.log.DebugContext(r.Context(), "request", "method", r.Method, "path", r.URL.Path,
			"status", rec.status, "remote", r.RemoteAddr, "duration", time.Since(start).String())
	}()
	if !s.key.Matches(r.Header.Get(wire.HeaderKey)) {
		s.log.WarnContext(r.Context(), "rejected request without a valid key",
			"path", r.URL.Path, "remote", r.RemoteAddr, "key_present", r.Header.Get(wire.HeaderKey) != "")
		writeError(rec, http.StatusUnauthorized, "missing or invalid "+wire.HeaderKey+" header")
		return
	}
	rec.Header().Set("Cache-Control", "no-store")
	s.mux.ServeHTTP(rec, r)
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	h, err := s.src.Health(r.Context())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, h)
}

func (s *Server) handleGPUInfo(w http.ResponseWriter, r *http.Request) {
	info, err := s.info.get(r.Context())
	if err != nil {
		if r.Context().Err() != nil {
			return // client went away
		}
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	info, err := s.info.get(r.Context())
	if err != nil && r.Context().Err() != nil {
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(renderMetrics(s.version, info, err))
}

// getOnly answers 405 in JSON for anything but GET and HEAD.
func getOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed")
			return
		}
		h(w, r)
	}
}

func writeError(w http.ResponseWriter, code int, reason string) {
	writeJSON(w, code, wire.ErrorResponse{Status: wire.StatusError, Reason: reason})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b = []byte(`{"status":"error","reason":"encode answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (r *statusRecorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}
