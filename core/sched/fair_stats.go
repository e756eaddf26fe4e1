package sched

import (
	"sort"
	"time"
)

// QueueStat is one model's queue, for GET /api/admin/queue, /status and
// the queue gauges.
type QueueStat struct {
	Model   string `json:"model"`
	Waiting int    `json:"waiting"`
	// Users is the number of users with requests waiting.
	Users int `json:"users"`
	// OldestWait is how long the oldest waiting request has waited.
	OldestWait time.Duration `json:"oldest_wait_ns"`
	// Round is the model's DRR round (it only grows).
	Round float64 `json:"round"`
}

// UserQueueStat is one user's fair-share state for one model.
type UserQueueStat struct {
	Model   string  `json:"model"`
	User    string  `json:"user"`
	Waiting int     `json:"waiting"`
	Weight  float64 `json:"weight"`
	Deficit float64 `json:"deficit"`
}

// Queues returns the models with waiting requests, by model name. It
// walks every waiting flow: for admin pages and scrapes, not the hot path.
func (f *Fair) Queues() []QueueStat {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clock.Now()
	out := make([]QueueStat, 0, len(f.active))
	for _, mq := range f.active {
		st := QueueStat{Model: mq.model, Waiting: mq.n, Users: len(mq.heap), Round: mq.round}
		for _, fl := range mq.heap {
			st.OldestWait = max(st.OldestWait, now.Sub(fl.fifo.head.enq))
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Model < out[j].Model })
	return out
}

// WaitingUsers returns, for every model with waiting requests, each
// waiting user's state, by model then user.
func (f *Fair) WaitingUsers() []UserQueueStat {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []UserQueueStat
	for _, mq := range f.active {
		for _, fl := range mq.heap {
			out = append(out, UserQueueStat{Model: mq.model, User: fl.user, Waiting: fl.fifo.n,
				Weight: fl.weight, Deficit: fl.deficit(f.quantum)})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Model != out[j].Model {
			return out[i].Model < out[j].Model
		}
		return out[i].User < out[j].User
	})
	return out
}
