package sched

import (
	"math"
	"sort"
	"time"
)

// ServiceWindow is how far back a Fair's record of service (QueueSnapshot
// Groups) looks: service decays with this time constant, and a user not
// served or seen waiting for this long no longer counts toward its
// group's entitlement.
const ServiceWindow = 60 * time.Second

// QueueSnapshot is who waits and who has been served, for GET
// /api/admin/queue: a copy taken under the Fair's lock, safe to keep.
type QueueSnapshot struct {
	At time.Time
	// Models are the models with waiting requests, by name.
	Models []ModelSnapshot
	// Groups are the groups served or waiting within ServiceWindow, by
	// name: their recent share of service against their entitlement.
	Groups []GroupShare
	// Backends are every backend's slots, by name.
	Backends []BackendSlots
	// Window is ServiceWindow.
	Window time.Duration
}

// ModelSnapshot is one model's queue.
type ModelSnapshot struct {
	Model      string
	Waiting    int
	Users      int
	OldestWait time.Duration
	// Requests are the waiting requests, longest waiting first.
	Requests []WaitingRequest
}

// WaitingRequest is one queued request.
type WaitingRequest struct {
	User, Group string
	Weight      float64
	Waited      time.Duration
	// Position is its place in the model's queue when it arrived
	// (1: nobody ahead), as the audit records it.
	Position  int
	EstTokens int
}

// GroupShare is one group's recent service. Served is the estimated
// tokens admitted for its users, decayed with ServiceWindow as time
// constant; Share is Served over every group's; Entitlement is the share
// its users' weights give it among the users active in the window (the
// share weighted fair queueing converges to while all of them contend).
type GroupShare struct {
	Group       string
	Users       int     // users active in the window
	Weight      float64 // their weights' sum
	Waiting     int     // requests waiting now
	Served      float64
	Share       float64
	Entitlement float64
}

// BackendSlots is one backend's concurrency.
type BackendSlots struct {
	Backend       string
	InFlight      int64
	MaxConcurrent int
	Waiting       int64 // waiting on the backend itself (least_loaded)
	State         string
}

// serviceLog is a Fair's record of recent service per group and of the
// users active in each. Guarded by Fair.mu; updated once per admission.
type serviceLog struct {
	groups    map[string]*groupService
	lastPrune time.Time
}

type groupService struct {
	served float64   // decayed to at
	at     time.Time // when served was last decayed
	users  map[string]userSeen
}

type userSeen struct {
	weight float64
	last   time.Time
}

// noteServedLocked records that req was admitted with cost (estimated
// tokens). Called with f.mu held, on both admission paths.
func (f *Fair) noteServedLocked(req *Request, cost float64) {
	now := f.clock.Now()
	g := f.service.group(req.Group)
	g.served = decay(g.served, now.Sub(g.at)) + cost
	g.at = now
	g.users[req.User] = userSeen{weight: weightOf(req), last: now}
	if now.Sub(f.service.lastPrune) > ServiceWindow {
		f.service.prune(now)
	}
}

func (s *serviceLog) group(name string) *groupService {
	if s.groups == nil {
		s.groups = map[string]*groupService{}
	}
	g := s.groups[name]
	if g == nil {
		g = &groupService{users: map[string]userSeen{}}
		s.groups[name] = g
	}
	return g
}

// prune forgets users and groups idle for longer than the window, so the
// log holds only who was active lately.
func (s *serviceLog) prune(now time.Time) {
	s.lastPrune = now
	for name, g := range s.groups {
		for u, seen := range g.users {
			if now.Sub(seen.last) > ServiceWindow {
				delete(g.users, u)
			}
		}
		if len(g.users) == 0 && decay(g.served, now.Sub(g.at)) < 1 {
			delete(s.groups, name)
		}
	}
}

// decay is v after d of exponential decay with time constant ServiceWindow.
func decay(v float64, d time.Duration) float64 {
	if d <= 0 {
		return v
	}
	return v * math.Exp(-d.Seconds()/ServiceWindow.Seconds())
}

// Snapshot returns who waits for which model and each group's recent
// share of service. It walks every waiter: for admin pages, not the hot
// path.
func (f *Fair) Snapshot() QueueSnapshot {
	backends := f.reg.Backends()
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clock.Now()
	snap := QueueSnapshot{At: now, Window: ServiceWindow}
	type groupNow struct {
		waiting int
		users   map[string]float64
	}
	live := map[string]*groupNow{}
	liveGroup := func(name string) *groupNow {
		g := live[name]
		if g == nil {
			g = &groupNow{users: map[string]float64{}}
			live[name] = g
		}
		return g
	}
	for _, mq := range f.active {
		ms := ModelSnapshot{Model: mq.model, Waiting: mq.n, Users: len(mq.heap)}
		for _, fl := range mq.heap {
			for w := fl.fifo.head; w != nil; w = w.next {
				r := w.req
				wr := WaitingRequest{User: r.User, Group: r.Group, Weight: weightOf(r), Waited: now.Sub(w.enq),
					Position: w.pos, EstTokens: r.EstTokens}
				ms.Requests = append(ms.Requests, wr)
				ms.OldestWait = max(ms.OldestWait, wr.Waited)
				g := liveGroup(r.Group)
				g.waiting++
				g.users[r.User] = wr.Weight
			}
		}
		sort.Slice(ms.Requests, func(i, j int) bool { return ms.Requests[i].Waited > ms.Requests[j].Waited })
		snap.Models = append(snap.Models, ms)
	}
	sort.Slice(snap.Models, func(i, j int) bool { return snap.Models[i].Model < snap.Models[j].Model })

	// Users active in the window: served lately, or waiting now.
	for name, gs := range f.service.groups {
		g := liveGroup(name)
		for u, seen := range gs.users {
			if now.Sub(seen.last) <= ServiceWindow {
				if _, ok := g.users[u]; !ok {
					g.users[u] = seen.weight
				}
			}
		}
	}
	var served, weight float64
	for name, g := range live {
		share := GroupShare{Group: name, Users: len(g.users), Waiting: g.waiting}
		for _, w := range g.users {
			share.Weight += w
		}
		if gs := f.service.groups[name]; gs != nil {
			share.Served = decay(gs.served, now.Sub(gs.at))
		}
		served += share.Served
		weight += share.Weight
		snap.Groups = append(snap.Groups, share)
	}
	for i := range snap.Groups {
		g := &snap.Groups[i]
		if served > 0 {
			g.Share = g.Served / served
		}
		if weight > 0 {
			g.Entitlement = g.Weight / weight
		}
	}
	sort.Slice(snap.Groups, func(i, j int) bool { return snap.Groups[i].Group < snap.Groups[j].Group })

	for _, b := range backends {
		snap.Backends = append(snap.Backends, BackendSlots{Backend: b.Name, InFlight: b.InFlight(),
			MaxConcurrent: b.Capacity(), Waiting: b.Waiting(), State: b.State()})
	}
	sort.Slice(snap.Backends, func(i, j int) bool { return snap.Backends[i].Backend < snap.Backends[j].Backend })
	return snap
}
