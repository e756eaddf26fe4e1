package server

import (
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mindrouter/mindrouter/core/backend"
)

// latency buckets in seconds, for the request duration histogram.
var buckets = [...]float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

type routeKey struct {
	route  string
	status int
}

type histogram struct {
	counts [len(buckets) + 1]atomic.Uint64
	sumNs  atomic.Uint64
}

// metrics are the gateway's own counters; each update is a read-locked map
// lookup (keys stop changing after warm-up) and atomic adds, without
// allocating.
type metrics struct {
	mu          sync.RWMutex
	requests    map[routeKey]*atomic.Uint64
	latency     map[string]*histogram
	streams     atomic.Int64
	chunks      atomic.Uint64
	disconnects atomic.Uint64
	connRefused atomic.Uint64
}

func newMetrics() *metrics {
	return &metrics{requests: map[routeKey]*atomic.Uint64{}, latency: map[string]*histogram{}}
}

func (m *metrics) observe(route string, status int, d time.Duration) {
	if route == "" {
		route = "none"
	}
	key := routeKey{route, status}
	m.mu.RLock()
	c, hist := m.requests[key], m.latency[route]
	m.mu.RUnlock()
	if c == nil || hist == nil {
		m.mu.Lock()
		if c = m.requests[key]; c == nil {
			c = new(atomic.Uint64)
			m.requests[key] = c
		}
		if hist = m.latency[route]; hist == nil {
			hist = new(histogram)
			m.latency[route] = hist
		}
		m.mu.Unlock()
	}
	c.Add(1)
	sec := d.Seconds()
	i := 0
	for i < len(buckets) && sec > buckets[i] {
		i++
	}
	hist.counts[i].Add(1)
	hist.sumNs.Add(uint64(d))
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
	fmt.Fprintln(w, "# HELP mindrouter_request_duration_seconds Time from request to the end of the response (streams: to the last byte).")
	fmt.Fprintln(w, "# TYPE mindrouter_request_duration_seconds histogram")
	routes := make([]string, 0, len(m.latency))
	for r := range m.latency {
		routes = append(routes, r)
	}
	sort.Strings(routes)
	for _, r := range routes {
		hist := m.latency[r]
		var cum uint64
		for i, b := range buckets {
			cum += hist.counts[i].Load()
			fmt.Fprintf(w, "mindrouter_request_duration_seconds_bucket{route=%q,le=\"%g\"} %d\n", r, b, cum)
		}
		cum += hist.counts[len(buckets)].Load()
		fmt.Fprintf(w, "mindrouter_request_duration_seconds_bucket{route=%q,le=\"+Inf\"} %d\n", r, cum)
		fmt.Fprintf(w, "mindrouter_request_duration_seconds_sum{route=%q} %g\n", r, float64(hist.sumNs.Load())/1e9)
		fmt.Fprintf(w, "mindrouter_request_duration_seconds_count{route=%q} %d\n", r, cum)
	}
	fmt.Fprintln(w, "# TYPE mindrouter_streams_active gauge")
	fmt.Fprintf(w, "mindrouter_streams_active %d\n", m.streams.Load())
	fmt.Fprintln(w, "# TYPE mindrouter_stream_writes_total counter")
	fmt.Fprintf(w, "mindrouter_stream_writes_total %d\n", m.chunks.Load())
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
	fmt.Fprintln(w, "# TYPE mindrouter_backend_healthy gauge")
	for _, b := range reg.Backends() {
		v := 0
		if b.Status().Healthy {
			v = 1
		}
		fmt.Fprintf(w, "mindrouter_backend_healthy{backend=%q} %d\n", b.Name, v)
	}
}
