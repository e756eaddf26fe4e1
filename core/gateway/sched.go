package gateway

import (
	"context"
	"fmt"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/sched"
	"github.com/mindrouter/mindrouter/core/score"
	"github.com/mindrouter/mindrouter/core/store"
)

// newAdmitter builds the scheduler scheduler.policy names; kick, when not
// nil, hands capacity that came back (a backend healthy again) to waiters
// after each discovery round.
func newAdmitter(cfg *config.Config, reg *backend.Registry, record bool) (adm sched.Admitter, kick func()) {
	if cfg.Scheduler.Policy == "least_loaded" {
		return sched.NewLeastLoaded(reg, cfg.Timeouts.QueueWait.D()), nil
	}
	f := sched.NewFair(sched.FairOptions{Registry: reg, Placer: score.New(scoreWeights(cfg.Scheduler.Weights)),
		MaxWait: cfg.Timeouts.QueueWait.D(), Quantum: cfg.Scheduler.Quantum, BurstCredit: cfg.Scheduler.BurstCredit,
		BurstRefill: cfg.Scheduler.BurstRefill.D(), StarvationAfter: cfg.Scheduler.StarvationAfter.D(), Record: record})
	return f, f.Kick
}

// scoreWeights applies scheduler.weights (validated names) over the
// scorer's defaults.
func scoreWeights(m map[string]float64) score.Weights {
	w := score.DefaultWeights()
	for k, v := range m {
		switch k {
		case "loaded":
			w.Loaded = v
		case "gpu_util":
			w.GPUUtil = v
		case "queue_depth":
			w.QueueDepth = v
		case "latency":
			w.Latency = v
		case "throughput":
			w.Throughput = v
		case "priority":
			w.Priority = v
		case "kv_cache":
			w.KVCache = v
		case "waiting":
			w.Waiting = v
		}
	}
	return w
}

// applyStore gives the registry's backends what the store holds about
// them: an admin's state (disabled or draining survive a restart), the
// priority, and the GPU nodes with their sidecars and each backend's GPUs.
func applyStore(ctx context.Context, st store.Store, reg *backend.Registry) error {
	all, err := st.Backends(ctx)
	if err != nil {
		return fmt.Errorf("read backends from the store: %w", err)
	}
	nodes, err := st.Nodes(ctx)
	if err != nil {
		return fmt.Errorf("read nodes from the store: %w", err)
	}
	byID := map[int64]*backend.Node{}
	var list []backend.Node
	for _, n := range nodes {
		if n.Status == "disabled" || n.SidecarURL == "" {
			continue
		}
		list = append(list, backend.Node{Name: n.Name, URL: n.SidecarURL, Key: n.SidecarKey, Backends: map[string][]int{}})
	}
	for i := range list {
		for _, n := range nodes {
			if n.Name == list[i].Name {
				byID[n.ID] = &list[i]
			}
		}
	}
	for _, b := range all {
		rb := reg.Backend(b.Name)
		if rb == nil {
			continue
		}
		if b.Status != "" {
			if err := rb.SetState(b.Status); err != nil {
				return err
			}
		}
		rb.SetPriority(b.Priority)
		if b.NodeID != nil {
			if n := byID[*b.NodeID]; n != nil {
				n.Backends[b.Name] = b.GPUIndices
			}
		}
	}
	if len(list) > 0 {
		if err := reg.SetNodes(list); err != nil {
			return fmt.Errorf("GPU nodes from the store: %w", err)
		}
	}
	return nil
}
