package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mindrouter/mindrouter/sidecar/wire"
)

// Node is a GPU host whose sidecar reports its GPUs (store.Node, plus which
// of its GPUs each backend runs on: store.Backend's node and gpu_indices).
type Node struct {
	Name string
	URL  string // the sidecar's base URL, e.g. http://gpu-1:8007
	Key  string // the sidecar's shared secret; never logged
	// Backends maps the name of each backend running on the node to the
	// indices of the GPUs it uses; an empty list means all of the node's
	// GPUs (as in the reference implementation).
	Backends map[string][]int
}

// String describes the node without its key.
func (n Node) String() string { return "node " + n.Name + " (" + n.URL + ")" }

// LogValue logs the node without its key.
func (n Node) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", n.Name), slog.String("url", n.URL))
}

// GPUStats is what a backend's node sidecar last reported about the
// backend's GPUs. Immutable once published. A figure is known only when
// every one of those GPUs reported it: a partial sum would understate.
type GPUStats struct {
	Node   string
	Polled time.Time // when the gateway received the reading
	GPUs   int       // how many GPUs the figures cover (≥ 1)

	HasUtil bool
	Util    float64 // mean SM utilisation, 0..1

	HasMem                     bool
	MemTotal, MemUsed, MemFree uint64 // bytes, summed over the GPUs

	HasPower bool
	PowerW   float64 // power draw, summed
}

// GPU returns the latest figures of the backend's GPUs, or nil when they
// are unknown: the backend is on no node, its node's sidecar failed its
// last poll, or it reported none of the backend's GPUs.
func (b *Backend) GPU() *GPUStats { return b.gpu.Load() }

// SetGPU publishes st (which must not change afterwards; nil: unknown) as
// the backend's GPU figures, as a sidecar poll does. Polls own them in the
// gateway; this is for tests of packages that score backends.
func (b *Backend) SetGPU(st *GPUStats) { b.gpu.Store(st) }

// sidecarSet is the polling state of the nodes given to SetNodes.
type sidecarSet struct {
	nodes []*nodePoller
}

type nodePoller struct {
	node     Node
	client   *wire.Client
	backends []gpuUser
	state    atomic.Uint32 // sidecarUnknown, sidecarOK, sidecarFailing: log on change
	last     atomic.Pointer[NodeReading]
}

// NodeReading is a node sidecar's last answer: every GPU as reported
// (Info nil when the poll failed, Err saying why). Immutable once
// published.
type NodeReading struct {
	Node   string
	Polled time.Time
	Info   *wire.GPUInfo
	Err    string
}

// NodeReadings returns the last reading of every node given to SetNodes
// that was polled since (the telemetry history samples them each round).
func (r *Registry) NodeReadings() []*NodeReading {
	set := r.sidecars.Load()
	if set == nil {
		return nil
	}
	out := make([]*NodeReading, 0, len(set.nodes))
	for _, p := range set.nodes {
		if nr := p.last.Load(); nr != nil {
			out = append(out, nr)
		}
	}
	return out
}

// gpuUser is a backend on a node and the GPUs it uses (nil: all).
type gpuUser struct {
	b    *Backend
	gpus []int
}

const (
	sidecarUnknown uint32 = iota
	sidecarOK
	sidecarFailing
)

// SetNodes replaces the GPU nodes whose sidecars discovery polls, once per
// round and node. It checks every node first and changes nothing if one
// is wrong (no name or URL, a duplicate name, an unknown backend, a
// backend on two nodes, a negative GPU index). A backend on no node any
// more loses its figures at once; the others keep theirs until the next
// poll.
func (r *Registry) SetNodes(nodes []Node) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.setNodesLocked(nodes)
}

func (r *Registry) setNodesLocked(nodes []Node) error {
	snap := r.snap.Load()
	set := &sidecarSet{}
	prev := map[string]*nodePoller{}
	if old := r.sidecars.Load(); old != nil {
		for _, q := range old.nodes {
			prev[q.node.Name] = q
		}
	}
	var errs []error
	names := map[string]bool{}
	placed := map[string]string{} // backend → node
	type placed2 struct {
		b *Backend
		p *placement
	}
	var places []placed2 // applied once every node checked out
	for _, n := range nodes {
		if n.Name == "" || n.URL == "" {
			errs = append(errs, fmt.Errorf("set nodes: %v: a node needs a name and a sidecar url", n))
			continue
		}
		if names[n.Name] {
			errs = append(errs, fmt.Errorf("set nodes: node %q is listed twice", n.Name))
			continue
		}
		names[n.Name] = true
		p := &nodePoller{node: n}
		if q := prev[n.Name]; q != nil && q.node.URL == n.URL && q.node.Key == n.Key {
			// The same sidecar (SetNodes runs at every store sync): keep its
			// client, and its state so that a change only is logged.
			p.client = q.client
			p.state.Store(q.state.Load())
			p.last.Store(q.last.Load())
		} else {
			p.client = wire.NewClient(n.URL, n.Key)
		}
		p.node.Backends = make(map[string][]int, len(n.Backends))
		for name, gpus := range n.Backends {
			b := snap.byName[name]
			switch {
			case b == nil:
				errs = append(errs, fmt.Errorf("set nodes: node %q: unknown backend %q", n.Name, name))
				continue
			case placed[name] != "":
				errs = append(errs, fmt.Errorf("set nodes: backend %q is on two nodes, %q and %q", name, placed[name], n.Name))
				continue
			case slices.ContainsFunc(gpus, func(i int) bool { return i < 0 }):
				errs = append(errs, fmt.Errorf("set nodes: node %q: backend %q: negative gpu index in %v", n.Name, name, gpus))
				continue
			}
			placed[name] = n.Name
			gpus = slices.Compact(slices.Sorted(slices.Values(gpus)))
			places = append(places, placed2{b, &placement{node: n.Name, gpus: joinInts(gpus)}})
			p.node.Backends[name] = gpus
			p.backends = append(p.backends, gpuUser{b: b, gpus: gpus})
		}
		// Configuration order, so polls publish in a stable order.
		slices.SortFunc(p.backends, func(x, y gpuUser) int { return snap.index(x.b) - snap.index(y.b) })
		set.nodes = append(set.nodes, p)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	r.sidecars.Store(set)
	for _, x := range places {
		x.b.place.Store(x.p)
	}
	for _, b := range snap.list {
		if placed[b.Name] == "" {
			b.place.Store(nil)
			b.gpu.Store(nil)
		}
	}
	return nil
}

// Nodes returns the nodes given to SetNodes (each Backends map is a copy).
func (r *Registry) Nodes() []Node {
	set := r.sidecars.Load()
	if set == nil || len(set.nodes) == 0 {
		return nil
	}
	out := make([]Node, len(set.nodes))
	for i, p := range set.nodes {
		out[i] = p.node
		out[i].Backends = make(map[string][]int, len(p.node.Backends))
		for name, gpus := range p.node.Backends {
			out[i].Backends[name] = slices.Clone(gpus)
		}
	}
	return out
}

func (s *regSnap) index(b *Backend) int { return slices.Index(s.list, b) }

// pollSidecars asks every node's sidecar for its GPUs once, concurrently,
// and publishes each backend's figures; a node whose poll fails leaves its
// backends' figures unknown. Each call is bounded by the probe timeout.
func (d *Discoverer) pollSidecars(ctx context.Context) {
	set := d.reg.sidecars.Load()
	if set == nil {
		return
	}
	var wg sync.WaitGroup
	for _, p := range set.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.pollNode(ctx, p)
		}()
	}
	wg.Wait()
}

func (d *Discoverer) pollNode(ctx context.Context, p *nodePoller) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	info, err := p.client.GPUInfo(ctx)
	now := time.Now()
	if err != nil {
		p.last.Store(&NodeReading{Node: p.node.Name, Polled: now, Err: err.Error()})
		for _, u := range p.backends {
			u.b.gpu.Store(nil)
		}
		if p.state.Swap(sidecarFailing) != sidecarFailing {
			d.log.LogAttrs(ctx, slog.LevelWarn, "sidecar poll failed; its backends' GPU figures are unknown",
				slog.Any("node", p.node), slog.String("error", err.Error()))
		}
		return
	}
	p.last.Store(&NodeReading{Node: p.node.Name, Polled: now, Info: info})
	missing := 0
	for _, u := range p.backends {
		st := gpuStats(p.node.Name, now, info, u.gpus)
		if st == nil {
			missing++
		}
		u.b.gpu.Store(st)
	}
	if p.state.Swap(sidecarOK) != sidecarOK {
		d.log.LogAttrs(ctx, slog.LevelInfo, "sidecar polled",
			slog.Any("node", p.node), slog.Int("gpus", len(info.GPUs)),
			slog.Int("backends", len(p.backends)), slog.Int("backends_without_gpus", missing))
	}
}

// gpuStats combines the readings of the GPUs with the given indices (all
// of the node's when none are given); nil when the reading has none of
// them or every one of them failed as a whole.
func gpuStats(node string, at time.Time, info *wire.GPUInfo, indices []int) *GPUStats {
	st := &GPUStats{Node: node, Polled: at, HasUtil: true, HasMem: true, HasPower: true}
	var util float64
	for i := range info.GPUs {
		g := &info.GPUs[i]
		if len(indices) > 0 && !slices.Contains(indices, g.Index) {
			continue
		}
		if g.Error != "" && g.UtilizationGPU == nil && g.MemoryTotalBytes == nil {
			continue // lost: nothing was read
		}
		st.GPUs++
		if g.UtilizationGPU != nil {
			util += float64(*g.UtilizationGPU) / 100
		} else {
			st.HasUtil = false
		}
		if g.MemoryTotalBytes != nil && g.MemoryUsedBytes != nil && g.MemoryFreeBytes != nil {
			st.MemTotal += *g.MemoryTotalBytes
			st.MemUsed += *g.MemoryUsedBytes
			st.MemFree += *g.MemoryFreeBytes
		} else {
			st.HasMem = false
		}
		if g.PowerDrawWatts != nil {
			st.PowerW += *g.PowerDrawWatts
		} else {
			st.HasPower = false
		}
	}
	// A GPU the backend claims but the sidecar did not report (a wrong
	// index, a lost device) makes every figure partial.
	if st.GPUs == 0 || len(indices) > 0 && st.GPUs < len(indices) {
		if st.GPUs == 0 {
			return nil
		}
		st.HasUtil, st.HasMem, st.HasPower = false, false, false
	}
	if st.HasUtil {
		st.Util = min(max(util/float64(st.GPUs), 0), 1)
	} else {
		st.Util = 0
	}
	if !st.HasMem {
		st.MemTotal, st.MemUsed, st.MemFree = 0, 0, 0
	}
	if !st.HasPower {
		st.PowerW = 0
	}
	return st
}

// placement is where a backend runs, for the audit.
type placement struct{ node, gpus string }

// Placement names the backend's node and its GPU indices ("0,1"; "" for
// all of the node's GPUs), as SetNodes gave them; "", "" when on no node.
func (b *Backend) Placement() (node, gpus string) {
	if p := b.place.Load(); p != nil {
		return p.node, p.gpus
	}
	return "", ""
}

func joinInts(v []int) string {
	var b []byte
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(x), 10)
	}
	return string(b)
}
