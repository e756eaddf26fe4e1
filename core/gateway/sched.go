package gateway

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/sched"
	"github.com/mindrouter/mindrouter/core/score"
	"github.com/mindrouter/mindrouter/core/store"
)

// newScheduler builds the scheduler scheduler.policy names; kick, when not
// nil, hands capacity that came back (a backend healthy again) to waiters
// after each discovery round. With the fair policy and scheduler.fleet on
// (config.FleetOn: redis.addr set, fleet not "off") and rdb, the
// gateway's Redis client, the backends' slots and users' service are
// shared with the other replicas (sched.Fleet); fleet is the component
// that runs that sharing: it starts after Redis is up and closes, giving
// this replica's idle slots back, after the listener drained.
func newScheduler(cfg *config.Config, reg *backend.Registry, record bool, rdb *redis.Client, replica string,
	log *slog.Logger) (adm sched.Admitter, kick func(), fleet Component) {
	fleet = &fleetComponent{}
	if cfg.Scheduler.Policy == "least_loaded" {
		if cfg.FleetOn() {
			// The fleet's slot leases and bids are the fair policy's.
			log.Warn("scheduler.policy least_loaded schedules each replica alone: a backend's max_concurrent holds per replica, not across the fleet (use policy fair, or scheduler.fleet: off to silence this)")
		}
		return sched.NewLeastLoaded(reg, cfg.Timeouts.QueueWait.D()), nil, fleet
	}
	o := sched.FairOptions{Registry: reg, Placer: score.New(scoreWeights(cfg.Scheduler.Weights)),
		MaxWait: cfg.Timeouts.QueueWait.D(), Quantum: cfg.Scheduler.Quantum, BurstCredit: cfg.Scheduler.BurstCredit,
		BurstRefill: cfg.Scheduler.BurstRefill.D(), StarvationAfter: cfg.Scheduler.StarvationAfter.D(), Record: record}
	if cfg.FleetOn() && rdb != nil {
		o.Fleet = sched.NewFleet(sched.FleetOptions{Redis: rdb, Replica: replica, SlotLease: cfg.Scheduler.SlotLease.D(), Log: log})
		fleet = &fleetComponent{fl: o.Fleet}
	}
	f := sched.NewFair(o)
	return f, f.Kick, fleet
}

// fleetComponent runs a sched.Fleet (nothing when fl is nil).
type fleetComponent struct {
	fl     *sched.Fleet
	cancel context.CancelCauseFunc
	done   chan struct{}
}

func (c *fleetComponent) Name() string { return "scheduler-fleet" }

func (c *fleetComponent) Start(ctx context.Context) error {
	if c.fl == nil {
		return nil
	}
	// Run outlives Start's ctx: it stops when the gateway closes.
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	c.cancel, c.done = cancel, make(chan struct{})
	go func() { defer close(c.done); c.fl.Run(rctx) }()
	return nil
}

// Health is nil: with Redis down the fleet degrades to per-replica
// shares and keeps serving.
func (c *fleetComponent) Health(context.Context) error { return nil }

func (c *fleetComponent) Close(ctx context.Context) error {
	if c.cancel == nil {
		return nil
	}
	c.cancel(nil)
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop the scheduler fleet: %w", ctx.Err())
	}
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
