package gateway

import (
	"slices"
	"time"

	"github.com/mindrouter/mindrouter/core/admin"
	"github.com/mindrouter/mindrouter/core/backend"
)

// clusterView is the registry's live state for GET /api/admin/cluster.
type clusterView struct{ reg *backend.Registry }

func (v clusterView) Cluster() admin.ClusterView {
	var out admin.ClusterView
	for _, b := range v.reg.Backends() {
		cb := admin.ClusterBackend{Name: b.Name, Engine: b.Engine, State: b.State(), Breaker: b.BreakerState(),
			InFlight: b.InFlight(), MaxConcurrent: b.Capacity(), Waiting: b.Waiting(), Models: []string{}, LoadedModels: []string{}}
		if st := b.Status(); st != nil {
			cb.Healthy, cb.Error, cb.CheckedAt = st.Healthy, st.Err, st.Checked
			for name, m := range st.Models {
				cb.Models = append(cb.Models, name)
				if m.Loaded {
					cb.LoadedModels = append(cb.LoadedModels, name)
				}
			}
			slices.Sort(cb.Models)
			slices.Sort(cb.LoadedModels)
		}
		t := b.Telemetry()
		cb.LatencyMs, cb.TTFBMs, cb.TokensPerSec = ms(t.Latency), ms(t.TTFB), t.TokensPerSec
		cb.Node, cb.GPUs = b.Placement()
		out.Backends = append(out.Backends, cb)
	}
	polled := map[string]*backend.NodeReading{}
	for _, nr := range v.reg.NodeReadings() {
		polled[nr.Node] = nr
	}
	for _, n := range v.reg.Nodes() {
		cn := admin.ClusterNode{Name: n.Name, GPUs: []admin.ClusterGPU{}}
		if nr := polled[n.Name]; nr != nil {
			at := nr.Polled.UTC()
			cn.PolledAt, cn.Error = &at, nr.Err
			if nr.Info != nil {
				cn.Driver = nr.Info.DriverVersion
				for _, g := range nr.Info.GPUs {
					cn.GPUs = append(cn.GPUs, admin.ClusterGPU{Index: g.Index, Name: g.Name, UtilPct: fi(g.UtilizationGPU),
						MemUsed: fu(g.MemoryUsedBytes), MemTotal: fu(g.MemoryTotalBytes), TempC: fi(g.TemperatureGPU),
						PowerW: g.PowerDrawWatts, PowerLimitW: g.PowerLimitWatts, Error: g.Error})
				}
			}
		}
		out.Nodes = append(out.Nodes, cn)
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fi(p *int) *float64 {
	if p == nil {
		return nil
	}
	v := float64(*p)
	return &v
}

func fu(p *uint64) *float64 {
	if p == nil {
		return nil
	}
	v := float64(*p)
	return &v
}
