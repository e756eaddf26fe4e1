package sched

import (
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mindrouter/mindrouter/core/backend"
)

// Defaults of FleetOptions.
const (
	DefaultSlotLease     = 10 * time.Second
	DefaultFleetHalfLife = 60 * time.Second
	DefaultFleetPrefix   = "mr:sched:"
)

// Internal timings of a Fleet's loop.
const (
	fleetTick      = 50 * time.Millisecond  // housekeeping: grace returns, flushes, probes
	fleetRetry     = 500 * time.Millisecond // safety timer: a replica with waiters claims again
	fleetBidTTL    = 2 * time.Second        // a bid not refreshed lapses (its replica died)
	fleetFlush     = 100 * time.Millisecond // served service pushed to Redis
	fleetProbe     = time.Second            // Redis probed while down
	fleetCall      = time.Second            // bound of one Redis call (the client's own timeouts apply too)
	fleetSvcRead   = 2 * time.Second        // users whose fleet service is re-read after their last use
	fleetSvcForget = 10 * time.Minute       // users forgotten after this long unused
)

// FleetOptions configures a Fleet.
type FleetOptions struct {
	// Redis is the fleet's shared state (required).
	Redis redis.UniversalClient
	// Replica names this gateway among those sharing Redis; unique per
	// gateway (its slot leases and bids are keyed by it).
	Replica string
	// SlotLease is how long a slot outlives a replica that stopped
	// renewing it (scheduler.slot_lease); 0: 10 s.
	SlotLease time.Duration
	// Heartbeat is how often a replica beats its heartbeat on each
	// backend whose slots it holds, renewing their leases; a replica
	// whose beats stopped for DeadAfter (2.5 heartbeats) is dead and its
	// slots go back at the next claim, long before their leases end.
	// 0: SlotLease/4, at most 1 s; at least 100 ms.
	Heartbeat time.Duration
	// Grace is how long an idle slot is kept for the next local request
	// before it goes back to the pool (at once when another replica
	// waits); 0: SlotLease/20, within [100 ms, 1 s].
	Grace time.Duration
	// HalfLife is the decay of users' served service, the fleet-wide
	// fair-share key; 0: 60 s.
	HalfLife time.Duration
	// Prefix of the Redis keys and channel; "": "mr:sched:".
	Prefix string
	// Log receives the Redis down and back notices; nil: discarded.
	Log *slog.Logger
}

// Fleet shares backend slots and users' service between the replicas of
// a gateway through Redis, under a Fair (FairOptions.Fleet): a backend's
// max_concurrent holds across replicas and freed slots go to the
// replica whose best waiter has the lowest fleet-wide fair-share key.
// See the package doc. Run does its work; NewFair wires it.
type Fleet struct {
	rdb      redis.UniversalClient
	replica  string
	lease    time.Duration
	beat     time.Duration // heartbeat and renewal interval
	grace    time.Duration
	halfLife time.Duration
	prefix   string
	channel  string
	log      *slog.Logger
	fair     *Fair // set by NewFair

	seq    atomic.Uint64
	down   atomic.Bool   // Redis unreachable: each replica schedules alone
	notify chan struct{} // buffered 1: a backend needs the loop

	mu     sync.Mutex
	slots  map[*backend.Backend]*fleetSlots
	byName map[string]*fleetSlots
	dirty  []*fleetSlots
	live   int // replicas alive at the last heartbeat (≥ 1)

	svcMu sync.Mutex
	svc   map[string]*svcEntry

	stats fleetCounters
}

// fleetSlots is one backend's slots held by this replica.
type fleetSlots struct {
	b                  *backend.Backend
	kSlots, kBids, kBx string
	kAlive, kClock     string // heartbeats (fleet_scripts.go's beatLua)
	msgFree, msgWant   string

	// names are the leases this replica holds in Redis and has not
	// offered back; inUse of them serve requests (more than len(names)
	// after a lease was lost: the excess is not handed out again).
	names []string
	inUse int
	// arb are slots freed while another replica bids: the loop decides
	// (claimScript) whether they stay or go.
	arb         []string
	lastPut     time.Time
	othersUntil time.Time // another replica bids for this backend until then
	bidding     bool      // this replica's bid is in Redis
	lastClaim   time.Time
	isDirty     bool
}

// fleetCounters are a Fleet's lifetime figures (FleetStats).
type fleetCounters struct {
	claims, granted, returned, lost, trips atomic.Int64
}

// FleetStats are a Fleet's counters, for tests and metrics.
type FleetStats struct {
	Claims   int64 // claim round trips
	Granted  int64 // slots granted by them
	Returned int64 // slots given back to the pool
	Lost     int64 // leases found expired at renewal and not re-added
	Trips    int64 // times Redis was found unreachable
	Down     bool  // Redis unreachable now
}

// NewFleet returns a Fleet; pass it in FairOptions.Fleet and call Run.
func NewFleet(o FleetOptions) *Fleet {
	fl := &Fleet{
		rdb:      o.Redis,
		replica:  o.Replica,
		lease:    o.SlotLease,
		grace:    o.Grace,
		halfLife: o.HalfLife,
		prefix:   o.Prefix,
		log:      o.Log,
		notify:   make(chan struct{}, 1),
		slots:    map[*backend.Backend]*fleetSlots{},
		byName:   map[string]*fleetSlots{},
		live:     1,
		svc:      map[string]*svcEntry{},
	}
	if fl.lease <= 0 {
		fl.lease = DefaultSlotLease
	}
	fl.beat = o.Heartbeat
	if fl.beat <= 0 {
		fl.beat = min(fl.lease/4, time.Second)
	}
	fl.beat = max(fl.beat, 100*time.Millisecond)
	if fl.grace <= 0 {
		fl.grace = min(max(fl.lease/20, 100*time.Millisecond), time.Second)
	}
	if fl.halfLife <= 0 {
		fl.halfLife = DefaultFleetHalfLife
	}
	if fl.prefix == "" {
		fl.prefix = DefaultFleetPrefix
	}
	if fl.log == nil {
		fl.log = slog.New(slog.DiscardHandler)
	}
	fl.channel = fl.prefix + "events"
	return fl
}

// Stats returns the Fleet's counters.
func (fl *Fleet) Stats() FleetStats {
	return FleetStats{Claims: fl.stats.claims.Load(), Granted: fl.stats.granted.Load(),
		Returned: fl.stats.returned.Load(), Lost: fl.stats.lost.Load(), Trips: fl.stats.trips.Load(),
		Down: fl.down.Load()}
}

// Held is the number of b's slots this replica holds in Redis and how
// many of them serve requests now.
func (fl *Fleet) Held(b *backend.Backend) (held, inUse int) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	s := fl.slots[b]
	if s == nil {
		return 0, 0
	}
	return len(s.names) + len(s.arb), s.inUse
}

// slotsLocked is b's state, made on first use (fl.mu held).
func (fl *Fleet) slotsLocked(b *backend.Backend) *fleetSlots {
	s := fl.slots[b]
	if s == nil {
		k := fl.prefix + "{" + b.Name + "}:"
		s = &fleetSlots{b: b, kSlots: k + "slots", kBids: k + "bids", kBx: k + "bidexp", kAlive: k + "alive", kClock: k + "beat",
			msgFree: "f|" + fl.replica + "|" + b.Name, msgWant: "w|" + fl.replica + "|" + b.Name}
		fl.slots[b] = s
		fl.byName[b.Name] = s
	}
	return s
}

// shareLocked is this replica's part of b's slots while Redis is down:
// max_concurrent / live replicas, at least 1 (fl.mu held).
func (fl *Fleet) shareLocked(b *backend.Backend) int {
	return max(b.Capacity()/max(fl.live, 1), 1)
}

// take is Fair's use of one of b's fleet slots (Fair's mutex held; no
// I/O): an idle slot this replica holds, or while Redis is down one of
// its share.
func (fl *Fleet) take(b *backend.Backend) bool {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	s := fl.slotsLocked(b)
	if fl.down.Load() {
		if s.inUse < fl.shareLocked(b) {
			s.inUse++
			return true
		}
		return false
	}
	if len(s.names) > s.inUse {
		s.inUse++
		return true
	}
	return false
}

// source is where a slot take just gave came from, for Decision.FleetSlot:
// a held slot, or the replica's share while Redis is down.
func (fl *Fleet) source() string {
	if fl.down.Load() {
		return FleetSlotShare
	}
	return FleetSlotHeld
}

// put is Fair's return of a slot taken with take (Fair's mutex held; no
// I/O). The slot stays for local requests unless another replica bids
// for b: then the loop decides who has the better claim.
func (fl *Fleet) put(b *backend.Backend) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	s := fl.slotsLocked(b)
	s.inUse--
	now := time.Now()
	s.lastPut = now
	if !fl.down.Load() && now.Before(s.othersUntil) && len(s.names) > s.inUse {
		last := len(s.names) - 1
		s.arb = append(s.arb, s.names[last])
		s.names = s.names[:last]
		fl.markLocked(s)
	}
}

// want tells the loop that requests wait for b's slots (Fair's mutex
// held; no I/O).
func (fl *Fleet) want(b *backend.Backend) {
	fl.mu.Lock()
	fl.markLocked(fl.slotsLocked(b))
	fl.mu.Unlock()
}

// markLocked queues s for the loop (fl.mu held).
func (fl *Fleet) markLocked(s *fleetSlots) {
	if !s.isDirty {
		s.isDirty = true
		fl.dirty = append(fl.dirty, s)
	}
	select {
	case fl.notify <- struct{}{}:
	default:
	}
}

// DeadAfter is how long a replica's heartbeat may miss before the others
// take its slots back: two heartbeats and a half (the half absorbs a late
// beat).
func (fl *Fleet) DeadAfter() time.Duration { return fl.beat*2 + fl.beat/2 }

// beatGap is the silence, in beats from anyone on a backend, after which
// nobody is judged dead until beats ran for DeadAfter again: a heartbeat
// and a half, so that gap + a heartbeat ≤ DeadAfter (beatLua).
func (fl *Fleet) beatGap() time.Duration { return fl.beat + fl.beat/2 }

// member names a new slot lease.
func (fl *Fleet) member() string {
	return fl.replica + ":" + strconv.FormatUint(fl.seq.Add(1), 10)
}
