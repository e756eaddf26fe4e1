package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Discoverer probes backends through their adapters.
type Discoverer struct {
	reg     *Registry
	plugins func() []*pluginhost.Plugin // the loaded plugins (host.Plugins)
	log     *slog.Logger
	timeout time.Duration
	done    chan struct{} // closed after the first round
	once    sync.Once
	caches  modelCaches // per-model probe results (modelprobe.go)
	// BeforeRound, when set before Run, runs before each round (the
	// gateway brings the registry in line with the store's backends,
	// which other replicas' admins change).
	BeforeRound func(context.Context)
	// AfterRound, when set before Run, runs after each round and each
	// Probe (the scheduler hands capacity that came back to its waiters).
	AfterRound func()
}

// NewDiscoverer returns a Discoverer for reg's backends.
func NewDiscoverer(reg *Registry, host *pluginhost.Host, timeout time.Duration, log *slog.Logger) *Discoverer {
	return newDiscoverer(reg, host.Plugins, timeout, log)
}

func newDiscoverer(reg *Registry, plugins func() []*pluginhost.Plugin, timeout time.Duration, log *slog.Logger) *Discoverer {
	return &Discoverer{reg: reg, plugins: plugins, log: log.With("component", "discovery"), timeout: timeout, done: make(chan struct{})}
}

// FirstRound is closed once every backend has been probed once.
func (d *Discoverer) FirstRound() <-chan struct{} { return d.done }

// Run probes every backend now and then every interval until ctx ends.
func (d *Discoverer) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		d.Round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Round probes every backend once, concurrently, and polls every node's
// GPU sidecar once (SetNodes). The backends are those registered when it
// starts: one added meanwhile is probed by whoever added it (Probe), one
// removed meanwhile finishes its probe unseen.
func (d *Discoverer) Round(ctx context.Context) {
	if d.BeforeRound != nil {
		d.BeforeRound(ctx)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		d.pollSidecars(ctx)
	}()
	for _, b := range d.reg.Backends() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.probe(ctx, b)
		}()
	}
	wg.Wait()
	d.once.Do(func() { close(d.done) })
	if d.AfterRound != nil {
		d.AfterRound()
	}
}

// ErrUnknownBackend: no registered backend has the name.
var ErrUnknownBackend = errors.New("no such backend")

// Probe probes the backend named name now (a backend just registered or
// changed, an admin's refresh) and returns the problem the probe found,
// if any; then it runs AfterRound, so capacity it found goes to waiters.
func (d *Discoverer) Probe(ctx context.Context, name string) error {
	b := d.reg.Backend(name)
	if b == nil {
		return fmt.Errorf("probe backend %s: %w", name, ErrUnknownBackend)
	}
	d.probe(ctx, b)
	if d.AfterRound != nil {
		d.AfterRound()
	}
	if st := b.Status(); !st.Healthy {
		return fmt.Errorf("probe backend %s: %s", name, st.Err)
	}
	return nil
}

// adapterFor finds the loaded plugin (a module of one adapter or a
// bundle) with an adapter component whose format is engine.
func (d *Discoverer) adapterFor(engine string) *pluginhost.Plugin {
	for _, p := range d.plugins() {
		if _, _, ok := p.Manifest().AdapterFor(engine); ok {
			return p
		}
	}
	return nil
}

func (d *Discoverer) probe(ctx context.Context, b *Backend) {
	prev := b.status.Load()
	next := &Status{Models: map[string]canon.DiscoveredModel{}, Checked: time.Now(), Probed: true, Healthy: true}
	ad := d.adapterFor(b.Engine)
	b.adapter.Store(ad)
	if ad == nil {
		next.Healthy, next.Err = false, fmt.Sprintf("no adapter plugin for engine %q", b.Engine)
		d.publish(b, prev, next)
		return
	}
	v := ad.Pin()
	if v == nil {
		next.Healthy, next.Err = false, fmt.Sprintf("adapter plugin for engine %q was unloaded", b.Engine)
		d.publish(b, prev, next)
		return
	}
	defer v.Release()
	idx, am, ok := v.Manifest().AdapterFor(b.Engine)
	if !ok { // a reload between adapterFor and Pin changed the module
		next.Healthy, next.Err = false, fmt.Sprintf("no adapter plugin for engine %q", b.Engine)
		d.publish(b, prev, next)
		return
	}
	next.Adapter = am.Name
	var res pluginhost.Result
	var disc canon.Discovery
	var meta []byte
	var perModel []sdk.Probe
	for _, p := range am.Probes {
		if p.PerModel { // run per model below, once the models are known
			perModel = append(perModel, p)
			continue
		}
		status, body, err := d.fetch(b, p)
		if err != nil {
			next.Healthy, next.Err = false, fmt.Sprintf("probe %s: %v", p.Name, err)
			break
		}
		meta = abi.AppendMeta(abi.AppendMeta(meta[:0], abi.MetaProbe, p.Name), abi.MetaStatus, strconv.Itoa(status))
		if err := v.Call(ctx, abi.OpProbeDecode, pluginhost.CallInput{Adapter: idx, Meta: meta, Payload: body}, &res); err != nil {
			next.Healthy, next.Err = false, fmt.Sprintf("probe %s: adapter: %v", p.Name, err)
			break
		}
		if err := disc.DecodeJSON(res.Payload); err != nil {
			next.Healthy, next.Err = false, fmt.Sprintf("probe %s: decode discovery: %v", p.Name, err)
			break
		}
		merge(next, &disc, status)
	}
	if len(b.models) > 0 {
		filtered := map[string]canon.DiscoveredModel{}
		for _, name := range b.models {
			m, ok := next.Models[name]
			if !ok {
				m = canon.DiscoveredModel{Name: name}
			}
			filtered[name] = m
		}
		next.Models = filtered
	}
	if next.Healthy && len(perModel) > 0 {
		d.probeModels(ctx, b, v, idx, perModel, next)
	}
	if !next.Healthy {
		next.Failures = prev.Failures + 1
		// Keep the last known model list so a blip reads as "unavailable"
		// (503) rather than "no such model" (404).
		if len(next.Models) == 0 {
			next.Models = prev.Models
		}
	}
	d.publish(b, prev, next)
}

func merge(st *Status, disc *canon.Discovery, status int) {
	if disc.Healthy != nil && !*disc.Healthy {
		st.Healthy = false
		if st.Err == "" {
			st.Err = fmt.Sprintf("health probe answered %d", status)
		}
	}
	for _, m := range disc.Models {
		cur, ok := st.Models[m.Name]
		if !ok {
			st.Models[m.Name] = m
			continue
		}
		cur.Loaded = cur.Loaded || m.Loaded
		if m.ContextLength > 0 {
			cur.ContextLength = m.ContextLength
		}
		if m.SizeBytes > 0 && cur.SizeBytes == 0 {
			cur.SizeBytes = m.SizeBytes
		}
		st.Models[m.Name] = cur
	}
	if disc.Version != "" {
		st.Version = disc.Version
	}
	if disc.HasLoad {
		st.HasLoad, st.Running, st.Waiting, st.KVCache = true, disc.Running, disc.Waiting, disc.KVCacheUsage
	}
}

func (d *Discoverer) publish(b *Backend, prev, next *Status) {
	b.publish(next)
	if prev.Healthy != next.Healthy || !prev.Probed {
		// A backend going (or starting) unhealthy is an operator's
		// concern: WARN; coming up is INFO.
		lvl := slog.LevelInfo
		if !next.Healthy {
			lvl = slog.LevelWarn
		}
		d.log.LogAttrs(context.Background(), lvl, "backend status",
			slog.String("backend", b.Name), slog.Bool("healthy", next.Healthy),
			slog.Int("models", len(next.Models)), slog.String("error", next.Err))
	}
}

var errProbeStatus = errors.New("unexpected status")

func (d *Discoverer) fetch(b *Backend, p sdk.Probe) (int, []byte, error) {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(b.URL(p.Path))
	method := p.Method
	if method == "" {
		method = fasthttp.MethodGet
	}
	req.Header.SetMethod(method)
	if p.Body != "" {
		req.Header.SetContentType("application/json")
		req.SetBodyString(p.Body)
	}
	// A probe that meets a pooled connection the backend closed while idle
	// is retried once on a fresh connection by the client (retryStale), so
	// a stale connection never counts as a failed probe.
	if err := b.client.DoTimeout(req, resp, d.timeout); err != nil {
		return 0, nil, err
	}
	status := resp.StatusCode()
	if status >= 500 && p.Name != "health" {
		return status, nil, fmt.Errorf("%w %d", errProbeStatus, status)
	}
	return status, append([]byte(nil), resp.Body()...), nil
}
