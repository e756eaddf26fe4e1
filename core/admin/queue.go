package admin

import (
	"sort"

	"github.com/mindrouter/mindrouter/core/sched"
)

// Queue is the fair scheduler's view of who waits and who was served on
// this gateway; *sched.Fair is one.
type Queue interface {
	Snapshot() sched.QueueSnapshot
}

// The shapes of GET /api/admin/queue: the reference's {queue, fair_share,
// backend_queues}, with who waits and each group's share added.

type queueView struct {
	Queue         queueTotals      `json:"queue"`
	FairShare     fairShareView    `json:"fair_share"`
	BackendQueues map[string]int64 `json:"backend_queues"` // backend → requests in flight
	Backends      []backendSlots   `json:"backends"`
	Scheduler     string           `json:"scheduler"` // "fair", or "least_loaded" (no queue view)
	Timestamp     int64            `json:"timestamp"`
}

type queueTotals struct {
	Total   int              `json:"total"`
	ByModel map[string]int   `json:"by_model"`
	Models  []modelQueueView `json:"models"`
}

type modelQueueView struct {
	Model             string        `json:"model"`
	Waiting           int           `json:"waiting"`
	Users             int           `json:"users"`
	OldestWaitSeconds float64       `json:"oldest_wait_seconds"`
	Requests          []waitingView `json:"requests"`
}

type waitingView struct {
	User          string  `json:"user"`
	Group         string  `json:"group"`
	Weight        float64 `json:"weight"`
	WaitedSeconds float64 `json:"waited_seconds"`
	Position      int     `json:"position"`
	EstTokens     int     `json:"est_tokens"`
}

type fairShareView struct {
	TotalUsers    int         `json:"total_users"`
	WindowSeconds float64     `json:"window_seconds"`
	Groups        []groupFair `json:"groups"`
}

type groupFair struct {
	Group        string  `json:"group"`
	ActiveUsers  int     `json:"active_users"`
	Weight       float64 `json:"weight"`
	Waiting      int     `json:"waiting"`
	ServedTokens float64 `json:"served_tokens"`
	Share        float64 `json:"share"`
	Entitlement  float64 `json:"entitlement"`
}

type backendSlots struct {
	Name          string `json:"name"`
	InFlight      int64  `json:"in_flight"`
	MaxConcurrent int    `json:"max_concurrent"`
	Waiting       int64  `json:"waiting"`
	State         string `json:"state"`
}

// queue answers GET /api/admin/queue (admin or audit scope): this
// gateway's queue. Each replica schedules its own waiters, so a fleet's
// queue is the union of every replica's answer.
func (h *Handler) queue(c *call) (any, error) {
	v := queueView{Scheduler: "least_loaded", Timestamp: h.now().Unix(), BackendQueues: map[string]int64{},
		Queue:     queueTotals{ByModel: map[string]int{}, Models: []modelQueueView{}},
		FairShare: fairShareView{Groups: []groupFair{}}, Backends: []backendSlots{}}
	if h.queueView == nil {
		return v, nil
	}
	s := h.queueView.Snapshot()
	v.Scheduler, v.FairShare.WindowSeconds = "fair", s.Window.Seconds()
	for _, m := range s.Models {
		mv := modelQueueView{Model: m.Model, Waiting: m.Waiting, Users: m.Users, OldestWaitSeconds: m.OldestWait.Seconds(),
			Requests: make([]waitingView, 0, len(m.Requests))}
		for _, r := range m.Requests {
			mv.Requests = append(mv.Requests, waitingView{User: r.User, Group: r.Group, Weight: r.Weight,
				WaitedSeconds: r.Waited.Seconds(), Position: r.Position, EstTokens: r.EstTokens})
		}
		v.Queue.Total += m.Waiting
		v.Queue.ByModel[m.Model] = m.Waiting
		v.Queue.Models = append(v.Queue.Models, mv)
	}
	for _, g := range s.Groups {
		v.FairShare.TotalUsers += g.Users
		v.FairShare.Groups = append(v.FairShare.Groups, groupFair{Group: g.Group, ActiveUsers: g.Users, Weight: g.Weight,
			Waiting: g.Waiting, ServedTokens: g.Served, Share: g.Share, Entitlement: g.Entitlement})
	}
	for _, b := range s.Backends {
		v.BackendQueues[b.Backend] = b.InFlight
		v.Backends = append(v.Backends, backendSlots{Name: b.Backend, InFlight: b.InFlight, MaxConcurrent: b.MaxConcurrent,
			Waiting: b.Waiting, State: b.State})
	}
	sort.Slice(v.Backends, func(i, j int) bool { return v.Backends[i].Name < v.Backends[j].Name })
	return v, nil
}
