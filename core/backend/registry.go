package backend

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Registry holds every backend. Safe for concurrent use.
//
// The set of backends changes at run time (Put, Remove: an admin
// registering, updating or deleting one) by publishing a new immutable
// snapshot: Backends returns the current one, and a caller iterating it
// sees a consistent set however the registry changes meanwhile. A backend
// that leaves the set is marked removed (Routable is false from then on)
// and its requests in flight finish on it: their leases release its own
// slots. Writers are serialised by mu; readers take no lock.
type Registry struct {
	snap     atomic.Pointer[regSnap]
	sidecars atomic.Pointer[sidecarSet] // the GPU nodes (SetNodes); nil: none

	mu       sync.Mutex // serialises Put, Remove, SetNodes and SetBreakerLogger
	timeouts config.Timeouts
	brkSet   BreakerSettings
	brkLog   *slog.Logger
}

// regSnap is one immutable set of backends.
type regSnap struct {
	list   []*Backend // configuration order, then in order of addition
	byName map[string]*Backend
}

// NewRegistry builds the backends of cfg, with cfg's timeouts and
// circuit-breaker settings (which backends added later get too).
func NewRegistry(cfg *config.Config) (*Registry, error) {
	r := &Registry{timeouts: cfg.Timeouts, brkSet: BreakerFromConfig(cfg.Breaker)}
	sn := &regSnap{byName: map[string]*Backend{}}
	for _, bc := range cfg.Backends {
		if sn.byName[bc.Name] != nil {
			return nil, fmt.Errorf("backend %s: %w", bc.Name, ErrDuplicateBackend)
		}
		b, err := r.build(bc)
		if err != nil {
			return nil, err
		}
		sn.list = append(sn.list, b)
		sn.byName[b.Name] = b
	}
	r.snap.Store(sn)
	return r, nil
}

// ErrDuplicateBackend: two backends share a name.
var ErrDuplicateBackend = errors.New("a backend of that name exists")

func (r *Registry) build(bc config.Backend) (*Backend, error) {
	b, err := newBackend(bc, r.timeouts)
	if err != nil {
		return nil, err
	}
	b.brk.configure(r.brkSet)
	b.brk.log = r.brkLog
	return b, nil
}

// Backends returns every backend, in configuration order then in order of
// addition. The slice is a snapshot shared with other callers: read it,
// never modify it.
func (r *Registry) Backends() []*Backend { return r.snap.Load().list }

// Backend returns the backend named name, or nil.
func (r *Registry) Backend(name string) *Backend { return r.snap.Load().byName[name] }

// Put adds the backend bc describes, or updates the one of that name. A
// change of what the backend's clients and slots are built from (URL,
// engine, max_concurrent, models, idle_conn_timeout) replaces it with a
// new Backend in the same place of the list: the old one is marked
// removed and its requests in flight finish on it; the new one keeps the
// admin state and priority, and, when the URL and engine are unchanged,
// what discovery last found (so it routes at once) — else it is
// unroutable until probed. Put reports the backend now registered and
// whether it is new (added or replaced: the caller probes it).
func (r *Registry) Put(bc config.Backend) (b *Backend, changed bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.snap.Load()
	old := cur.byName[bc.Name]
	if old != nil && sameClients(&old.cfg, &bc) {
		return old, false, nil
	}
	nb, err := r.build(bc)
	if err != nil {
		return nil, false, err
	}
	next := &regSnap{list: slices.Clone(cur.list), byName: make(map[string]*Backend, len(cur.list)+1)}
	if old == nil {
		next.list = append(next.list, nb)
	} else {
		nb.state.Store(old.state.Load())
		nb.priority.Store(old.priority.Load())
		nb.place.Store(old.place.Load())
		nb.gpu.Store(old.gpu.Load())
		if old.cfg.URL == bc.URL && old.Engine == bc.Engine {
			nb.adapter.Store(old.adapter.Load())
			nb.publish(old.status.Load())
		}
		next.list[slices.Index(next.list, old)] = nb
	}
	for _, x := range next.list {
		next.byName[x.Name] = x
	}
	r.snap.Store(next)
	if old != nil {
		old.removed.Store(true)
		r.replacePlacement(old, nb)
	}
	return nb, true, nil
}

// sameClients reports whether a and b build the same clients and slots.
func sameClients(a, b *config.Backend) bool {
	return a.URL == b.URL && a.Engine == b.Engine && a.MaxConcurrent == b.MaxConcurrent &&
		a.IdleConnTimeout == b.IdleConnTimeout && slices.Equal(a.Models, b.Models)
}

// replacePlacement moves old's place on its GPU node to nb (nil: off every
// node), so sidecar polls publish to the registered backend. Called with
// r.mu held.
func (r *Registry) replacePlacement(old, nb *Backend) {
	if r.sidecars.Load() == nil {
		return
	}
	nodes := r.Nodes()
	if nb == nil {
		for _, n := range nodes {
			delete(n.Backends, old.Name)
		}
	}
	_ = r.setNodesLocked(nodes) // the same nodes, rechecked: cannot fail on a name now absent
}

// Remove takes the backend named name out of the registry and reports
// whether it was there. Requests in flight on it finish; it gets no new
// ones (Routable is false), and discovery stops probing it.
func (r *Registry) Remove(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.snap.Load()
	old := cur.byName[name]
	if old == nil {
		return false
	}
	next := &regSnap{list: make([]*Backend, 0, len(cur.list)-1), byName: make(map[string]*Backend, len(cur.list))}
	for _, x := range cur.list {
		if x != old {
			next.list = append(next.list, x)
			next.byName[x.Name] = x
		}
	}
	r.snap.Store(next)
	old.removed.Store(true)
	r.replacePlacement(old, nil)
	return true
}

// Pick chooses the backend for model: among healthy backends that serve
// it, the one with the lowest in-flight share of its capacity. (Scoring by
// GPU load, loaded models and latency arrives with the scheduler.)
func (r *Registry) Pick(model string) (*Backend, error) {
	var best *Backend
	var bestLoad float64
	known := false
	for _, b := range r.Backends() {
		st := b.status.Load()
		if !st.Serves(model) {
			continue
		}
		known = true
		if !st.Healthy || b.adapter.Load() == nil || b.state.Load() != stateEnabled {
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

// Models lists the models that some routable backend (healthy, with an
// adapter loaded) serves, sorted, with the largest known context length.
// A dead backend's models leave the list, although Pick keeps answering
// 503 rather than 404 for them.
func (r *Registry) Models() canon.ModelList {
	seen := map[string]*canon.Model{}
	for _, b := range r.Backends() {
		if !b.Routable() {
			continue
		}
		for name, m := range b.status.Load().Models {
			e, ok := seen[name]
			if !ok {
				e = &canon.Model{ID: name, OwnedBy: "mindrouter"}
				seen[name] = e
			}
			mergeDiscovered(e, &m)
			e.Backends = append(e.Backends, b.Name)
		}
	}
	// "name:latest" answers to "name" too: when both are listed (say a
	// vLLM backend serves "name" and an Ollama one "name:latest"), the
	// model is listed once, as "name".
	for name, m := range seen {
		if short, ok := strings.CutSuffix(name, latestTag); ok {
			if e, dup := seen[short]; dup {
				e.ContextLength = max(e.ContextLength, m.ContextLength)
				e.Backends = mergeNames(e.Backends, m.Backends)
				e.Capabilities = mergeNames(e.Capabilities, m.Capabilities)
				e.Loaded = e.Loaded || m.Loaded
				e.SizeBytes = max(e.SizeBytes, m.SizeBytes)
				if e.Family == "" {
					e.Family = m.Family
				}
				delete(seen, name)
			}
		}
	}
	list := canon.ModelList{Models: make([]canon.Model, 0, len(seen))}
	for _, m := range seen {
		slices.Sort(m.Backends)
		slices.Sort(m.Capabilities)
		list.Models = append(list.Models, *m)
	}
	sort.Slice(list.Models, func(i, j int) bool { return list.Models[i].ID < list.Models[j].ID })
	return list
}

// mergeDiscovered folds what one backend discovered about a model into
// the gateway's entry: the largest context and size, any backend having it
// loaded, the first family, the union of capabilities.
func mergeDiscovered(e *canon.Model, m *canon.DiscoveredModel) {
	e.ContextLength = max(e.ContextLength, m.ContextLength)
	e.SizeBytes = max(e.SizeBytes, m.SizeBytes)
	e.Loaded = e.Loaded || m.Loaded
	if e.Family == "" {
		e.Family = m.Family
	}
	e.Capabilities = mergeNames(e.Capabilities, m.Capabilities)
}

// mergeNames appends to a the names of b it lacks.
func mergeNames(a, b []string) []string {
	for _, n := range b {
		if !slices.Contains(a, n) {
			a = append(a, n)
		}
	}
	return a
}

// Serving reports whether at least one routable backend (healthy, with an
// adapter loaded) serves at least one model: whether the gateway can
// answer any chat request now. It does not allocate.
func (r *Registry) Serving() bool {
	for _, b := range r.Backends() {
		if b.Routable() && len(b.status.Load().Models) > 0 {
			return true
		}
	}
	return false
}

// CheckEngines reports every backend whose configured engine is not among
// formats, the formats of the loaded adapter plugins; nil when each has
// one. The gateway calls it once plugins are loaded (and after a reload).
func (r *Registry) CheckEngines(formats map[string]bool) error {
	var errs []error
	for _, b := range r.Backends() {
		if !formats[b.Engine] {
			errs = append(errs, fmt.Errorf("backend %q: engine %q has no loaded adapter plugin (adapter formats: %s)",
				b.Name, b.Engine, formatList(formats)))
		}
	}
	return errors.Join(errs...)
}

func formatList(formats map[string]bool) string {
	var l []string
	for f, ok := range formats {
		if ok {
			l = append(l, f)
		}
	}
	if len(l) == 0 {
		return "none"
	}
	sort.Strings(l)
	return strings.Join(l, ", ")
}
