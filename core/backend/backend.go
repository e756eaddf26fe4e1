// Package backend is the registry of inference servers: their HTTP clients,
// concurrency slots, and what discovery learned about them (health, models,
// load). Discovery runs each adapter plugin's manifest probes and merges
// what the adapter decodes; routing reads an immutable snapshot.
package backend

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/apierr"
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
	adapter  atomic.Pointer[pluginhost.Plugin]
	status   atomic.Pointer[Status]
}

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
	mk := func(stream bool) *fasthttp.HostClient {
		hc := &fasthttp.HostClient{
			Addr:                          addr,
			IsTLS:                         tls,
			Name:                          "mindrouter",
			MaxConns:                      bc.MaxConcurrent + 8,
			MaxIdleConnDuration:           90 * time.Second,
			DisableHeaderNamesNormalizing: false,
			NoDefaultUserAgentHeader:      true,
			StreamResponseBody:            stream,
			MaxResponseBodySize:           64 << 20,
			Dial: func(a string) (net.Conn, error) {
				return fasthttp.DialTimeout(a, t.Connect.D())
			},
		}
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
	}
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

// Status returns the latest discovery snapshot.
func (b *Backend) Status() *Status { return b.status.Load() }

// Adapter returns the adapter plugin serving this backend's engine, or nil
// when none is loaded.
func (b *Backend) Adapter() *pluginhost.Plugin { return b.adapter.Load() }

// InFlight is the number of requests holding a slot.
func (b *Backend) InFlight() int64 { return b.inflight.Load() }

// Capacity is max_concurrent.
func (b *Backend) Capacity() int { return cap(b.slots) }

// ErrQueueTimeout reports that no slot freed up within the queue wait.
var ErrQueueTimeout = errors.New("backend: no free slot before the queue deadline")

// Acquire takes a concurrency slot, waiting at most wait. The common case,
// a free slot, costs one channel send and no timer.
func (b *Backend) Acquire(wait time.Duration) error {
	select {
	case b.slots <- struct{}{}:
		b.inflight.Add(1)
		return nil
	default:
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case b.slots <- struct{}{}:
		b.inflight.Add(1)
		return nil
	case <-t.C:
		return ErrQueueTimeout
	}
}

// Release returns a slot taken by Acquire.
func (b *Backend) Release() {
	b.inflight.Add(-1)
	<-b.slots
}

// Do sends req and reads the whole response, within timeout.
func (b *Backend) Do(req *fasthttp.Request, resp *fasthttp.Response, timeout time.Duration) error {
	return b.client.DoTimeout(req, resp, timeout)
}

// DoStream sends req and returns once the response headers are read; the
// caller reads resp.BodyStream() and must call resp.CloseBodyStream.
func (b *Backend) DoStream(req *fasthttp.Request, resp *fasthttp.Response) error {
	return b.stream.Do(req, resp)
}

// serves reports whether the backend currently offers model.
func (s *Status) serves(model string) bool {
	_, ok := s.Models[model]
	return ok
}

// Registry holds every backend. Safe for concurrent use.
type Registry struct {
	backends []*Backend
	byName   map[string]*Backend
}

// NewRegistry builds the backends of cfg.
func NewRegistry(cfg *config.Config) (*Registry, error) {
	r := &Registry{byName: map[string]*Backend{}}
	for _, bc := range cfg.Backends {
		b, err := newBackend(bc, cfg.Timeouts)
		if err != nil {
			return nil, err
		}
		r.backends = append(r.backends, b)
		r.byName[b.Name] = b
	}
	return r, nil
}

// Backends returns every backend in configuration order.
func (r *Registry) Backends() []*Backend { return r.backends }

// Pick chooses the backend for model: among healthy backends that serve
// it, the one with the lowest in-flight share of its capacity. (Scoring by
// GPU load, loaded models and latency arrives with the scheduler.)
func (r *Registry) Pick(model string) (*Backend, error) {
	var best *Backend
	var bestLoad float64
	known := false
	for _, b := range r.backends {
		st := b.status.Load()
		if !st.serves(model) {
			continue
		}
		known = true
		if !st.Healthy || b.adapter.Load() == nil {
			continue
		}
		load := float64(b.inflight.Load()) / float64(cap(b.slots))
		if best == nil || load < bestLoad {
			best, bestLoad = b, load
		}
	}
	if best != nil {
		return best, nil
	}
	if known {
		return nil, apierr.New(canon.ErrOverloaded, "backend_unavailable",
			fmt.Sprintf("no healthy backend is serving model %q right now", model))
	}
	return nil, apierr.New(canon.ErrNotFound, "model_not_found",
		fmt.Sprintf("the model %q does not exist or is not served by any backend", model))
}

// Models lists every model some backend serves, sorted, with the largest
// known context length.
func (r *Registry) Models() canon.ModelList {
	seen := map[string]*canon.Model{}
	for _, b := range r.backends {
		st := b.status.Load()
		for name, m := range st.Models {
			e, ok := seen[name]
			if !ok {
				e = &canon.Model{ID: name, OwnedBy: "mindrouter"}
				seen[name] = e
			}
			if m.ContextLength > e.ContextLength {
				e.ContextLength = m.ContextLength
			}
		}
	}
	list := canon.ModelList{Models: make([]canon.Model, 0, len(seen))}
	for _, m := range seen {
		list.Models = append(list.Models, *m)
	}
	sort.Slice(list.Models, func(i, j int) bool { return list.Models[i].ID < list.Models[j].ID })
	return list
}
