package admin

import (
	"sort"
	"time"
)

// Cluster is this gateway's live view of its backends and GPU nodes (the
// gateway's registry is one); Options.Cluster.
type Cluster interface {
	Cluster() ClusterView
}

// ClusterView is GET /api/admin/cluster: what discovery and the sidecars
// found last, and each backend's slots now, on this replica.
type ClusterView struct {
	Backends []ClusterBackend `json:"backends"`
	Nodes    []ClusterNode    `json:"nodes"`
}

// ClusterBackend is one backend's live state.
type ClusterBackend struct {
	Name          string    `json:"name"`
	Engine        string    `json:"engine"`
	State         string    `json:"state"` // enabled, draining, disabled
	Healthy       bool      `json:"healthy"`
	Error         string    `json:"error,omitempty"` // the last probe's problem
	CheckedAt     time.Time `json:"checked_at"`
	Breaker       string    `json:"breaker"` // closed, open, half-open
	InFlight      int64     `json:"in_flight"`
	MaxConcurrent int       `json:"max_concurrent"`
	Waiting       int64     `json:"waiting"`
	Models        []string  `json:"models"`        // what it serves
	LoadedModels  []string  `json:"loaded_models"` // in GPU memory now
	LatencyMs     float64   `json:"latency_ms"`    // moving averages; 0: none yet
	TTFBMs        float64   `json:"ttfb_ms"`
	TokensPerSec  float64   `json:"tokens_per_sec"`
	Node          string    `json:"node,omitempty"`
	GPUs          string    `json:"gpus,omitempty"` // its GPU indices on the node; "" all
}

// ClusterNode is one node's last sidecar reading.
type ClusterNode struct {
	Name     string       `json:"name"`
	PolledAt *time.Time   `json:"polled_at"` // nil: not polled yet
	Error    string       `json:"error,omitempty"`
	Driver   string       `json:"driver_version,omitempty"`
	GPUs     []ClusterGPU `json:"gpus"`
}

// ClusterGPU is one GPU's last reading; nil figures were not reported.
type ClusterGPU struct {
	Index       int      `json:"index"`
	Name        string   `json:"name"`
	UtilPct     *float64 `json:"utilization_pct"`
	MemUsed     *float64 `json:"memory_used_bytes"`
	MemTotal    *float64 `json:"memory_total_bytes"`
	TempC       *float64 `json:"temperature_c"`
	PowerW      *float64 `json:"power_w"`
	PowerLimitW *float64 `json:"power_limit_w"`
	Error       string   `json:"error,omitempty"`
}

// cluster answers GET /api/admin/cluster (admin or audit scope).
func (h *Handler) cluster(c *call) (any, error) {
	v := ClusterView{Backends: []ClusterBackend{}, Nodes: []ClusterNode{}}
	if h.clusterView == nil {
		return v, nil
	}
	v = h.clusterView.Cluster()
	if v.Backends == nil {
		v.Backends = []ClusterBackend{}
	}
	if v.Nodes == nil {
		v.Nodes = []ClusterNode{}
	}
	sort.Slice(v.Backends, func(i, j int) bool { return v.Backends[i].Name < v.Backends[j].Name })
	sort.Slice(v.Nodes, func(i, j int) bool { return v.Nodes[i].Name < v.Nodes[j].Name })
	return v, nil
}
