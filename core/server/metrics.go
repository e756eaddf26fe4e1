package server

import (
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/outcome"
)

// latency buckets in seconds, for the request duration histogram.
var buckets = [...]float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

type routeKey struct {
	route  string
	status int
}

// metrics are the gateway's own counters; each update is a read-locked map
// lookup (keys stop changing after warm-up) and atomic adds, without
// allocating.
type metrics struct {
	mu          sync.RWMutex
	requests    map[routeKey]*atomic.Uint64
	latency     histVec // by route
	streams     atomic.Int64
	chunks      atomic.Uint64
	shaped      atomic.Uint64 // stream events the host translated by a plugin's shape
	answered    atomic.Uint64 // answers the host translated by a plugin's response shape
	disconnects atomic.Uint64
	connRefused atomic.Uint64
	st          *stageMetrics
}

func newMetrics() *metrics {
	return &metrics{requests: map[routeKey]*atomic.Uint64{}, latency: newHistVec(buckets[:]), st: newStageMetrics()}
}

// observeOutcome records a finished request: its route and status, and
// its stages, backend, first token and tokens.
func (m *metrics) observeOutcome(o *outcome.Outcome, reg *backend.Registry) {
	m.observe(o.Route, o.Status, o.Duration)
	m.st.observe(o, reg)
}

func (m *metrics) observe(route string, status int, d time.Duration) {
	if route == "" {
		route = "none"
	}
	key := routeKey{route, status}
	m.mu.RLock()
	c := m.requests[key]
	m.mu.RUnlock()
	if c == nil {
		m.mu.Lock()
		if c = m.requests[key]; c == nil {
			c = new(atomic.Uint64)
			m.requests[key] = c
		}
		m.mu.Unlock()
	}
	c.Add(1)
	m.latency.get(route).observe(d)
}

func (m *metrics) write(w io.Writer, reg *backend.Registry, buffered int64) {
	fmt.Fprintln(w, "# HELP mindrouter_requests_total Requests answered, by route and HTTP status.")
	fmt.Fprintln(w, "# TYPE mindrouter_requests_total counter")
	m.mu.RLock()
	defer m.mu.RUnlock()
	keys := make([]routeKey, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].route != keys[j].route {
			return keys[i].route < keys[j].route
		}
		return keys[i].status < keys[j].status
	})
	for _, k := range keys {
		fmt.Fprintf(w, "mindrouter_requests_total{route=%q,code=\"%d\"} %d\n", k.route, k.status, m.requests[k].Load())
	}
	m.latency.write(w, "mindrouter_request_duration_seconds", "route",
		"Time from request to the end of the response (streams: to the last byte).")
	m.st.write(w)
	fmt.Fprintln(w, "# TYPE mindrouter_streams_active gauge")
	fmt.Fprintf(w, "mindrouter_streams_active %d\n", m.streams.Load())
	fmt.Fprintln(w, "# TYPE mindrouter_stream_writes_total counter")
	fmt.Fprintf(w, "mindrouter_stream_writes_total %d\n", m.chunks.Load())
	fmt.Fprintln(w, "# HELP mindrouter_stream_shaped_events_total Backend stream events translated by a plugin's stream shape, without a plugin call.")
	fmt.Fprintln(w, "# TYPE mindrouter_stream_shaped_events_total counter")
	fmt.Fprintf(w, "mindrouter_stream_shaped_events_total %d\n", m.shaped.Load())
	fmt.Fprintln(w, "# HELP mindrouter_response_shaped_total Backend answers (not streamed) translated by a plugin's response shape, without a plugin call.")
	fmt.Fprintln(w, "# TYPE mindrouter_response_shaped_total counter")
	fmt.Fprintf(w, "mindrouter_response_shaped_total %d\n", m.answered.Load())
	fmt.Fprintln(w, "# TYPE mindrouter_client_disconnects_total counter")
	fmt.Fprintf(w, "mindrouter_client_disconnects_total %d\n", m.disconnects.Load())
	fmt.Fprintln(w, "# HELP mindrouter_request_body_bytes_buffered Request body bytes held in memory by all requests.")
	fmt.Fprintln(w, "# TYPE mindrouter_request_body_bytes_buffered gauge")
	fmt.Fprintf(w, "mindrouter_request_body_bytes_buffered %d\n", buffered)
	fmt.Fprintln(w, "# HELP mindrouter_connections_refused_total Client connections refused over limits.max_connections.")
	fmt.Fprintln(w, "# TYPE mindrouter_connections_refused_total counter")
	fmt.Fprintf(w, "mindrouter_connections_refused_total %d\n", m.connRefused.Load())
	fmt.Fprintln(w, "# HELP mindrouter_backend_in_flight Requests holding a backend slot.")
	fmt.Fprintln(w, "# TYPE mindrouter_backend_in_flight gauge")
	for _, b := range reg.Backends() {
		fmt.Fprintf(w, "mindrouter_backend_in_flight{backend=%q} %d\n", b.Name, b.InFlight())
	}
	fmt.Fprintln(w, "# HELP mindrouter_backend_waiting Requests waiting for a slot on the backend (policy least_loaded; the fair policy queues per model: mindrouter_queue_waiting).")
	fmt.Fprintln(w, "# TYPE mindrouter_backend_waiting gauge")
	for _, b := range reg.Backends() {
		fmt.Fprintf(w, "mindrouter_backend_waiting{backend=%q} %d\n", b.Name, b.Waiting())
	}
	fmt.Fprintln(w, "# TYPE mindrouter_backend_healthy gauge")
	for _, b := range reg.Backends() {
		v := 0
		if b.Status().Healthy {
			v = 1
		}
		fmt.Fprintf(w, "mindrouter_backend_healthy{backend=%q} %d\n", b.Name, v)
	}
}
