// Package quota enforces each user's limits — a token budget per period,
// requests per minute (RPM) over any sliding 60 s, and requests in flight —
// exactly across gateway replicas that share one Redis, without a Redis
// round trip on the common path.
//
// # Use
//
// The server calls Admit for every request (RPM, concurrency, budget not
// spent), Ticket.Reserve once it knows the input estimate and the maximum
// output (it caps the request's output to what was granted), and
// Ticket.Done with the tokens really used. Ticket.Status and Denied.Status
// feed the x-ratelimit-* headers, Denied.RetryAfter the Retry-After one.
// A Principal with all-zero Limits is never refused; its usage is still
// counted for reports and persistence.
//
// # Leases
//
// Redis is the fleet's authority. Each replica takes quota from it in
// small batches with atomic Lua scripts and serves requests from that
// lease in memory, under a per-user mutex in a sharded map. Leased quota
// is counted as used in Redis the moment it is leased, so the replicas
// together never exceed a limit; the price is under-admission while
// another replica holds a lease it does not use. Batches are sized from
// the replica's recent rate (about one Lease of requests or tokens),
// capped at a quarter of the room left and exactly 1 when little is left;
// unused parts go back after Options.Lease (Run does it) and at shutdown.
// Under-admission bound: each replica holds at most one batch of permits
// (and of tokens) at a time, sized from its own rate and never more than
// a quarter of the room left when granted; what it does not use is
// unavailable to the others for at most Lease (a freed concurrency slot:
// Lease as well). A replica holds the user's mutex during a lease fetch,
// so one fetch serves the requests queued behind it.
//
// RPM. Redis keeps a log of grants per user (a sorted set: member
// "replica:seq:n", score the grant time). A grant at time g of n permits
// is allowed when the grants with scores in [g − 60 s − Lease, g] plus n
// stay within RPM. A replica uses a permit of a grant made at g only
// before g + Lease. Invariant: in any window [a, a+60 s] at most RPM
// requests are admitted fleet-wide. Proof: a request admitted in that
// window used a permit of a grant g with a − Lease < g ≤ a + 60 s. Let g*
// be the latest such grant. Its check counted every grant in
// [g* − 60 s − Lease, g*] ⊇ (a − Lease, g*] — all grants whose permits can
// be used in the window — and found them, with its own, within RPM; uses
// never exceed grants, and unused permits are subtracted only once they
// can no longer be used. The cost is that a grant waits for 60 s + Lease
// to pass, so under saturating demand a user gets RPM per (60 s + Lease +
// the time to use a batch) rather than per 60 s: 56–60 admitted per 60 s
// window for RPM 60 with Lease 1s (TestFleet_RPMSlidingWindow reports the
// figure). This is a sliding log, neither a fixed window nor GCRA with
// burst = limit (which admits up to 2× the limit in some 60 s window).
//
// Tokens. The period counter (a hash per user and period k, where period
// k is [anchor + k·P, anchor + (k+1)·P)) holds "used" (settled tokens)
// and each replica's lease with its expiry. A lease is granted only while
// used + every lease ≤ budget. Reserve takes from the local lease; Done
// moves the tokens used from the reservation to "used" (pushed by the
// next script call) and refunds the rest to the free lease. When what
// remains cannot cover a request's want, requests in flight share it
// (each gets at least its min or is refused). Bound: total charged ≤
// budget + Σ over requests of (used − granted), which the server keeps to
// the error of its input estimate by capping output to the grant.
// Lifetime tokens (a separate counter) only grow. A charge that lands
// after its period ended is pushed to that period's counter; a request
// reserved in one period and settled in the next is charged to the next.
//
// Concurrency. Each replica holds slots in a hash (replica → slots, with
// an expiry); a slot is granted while the slots of every replica stay
// within the limit. A replica keeps a released slot for Lease (the next
// request needs no round trip), then gives it back; Run refreshes held
// slots every Lease, and Redis forgets them 3·Lease after the last
// refresh, so a dead replica's slots (and token lease) come back then.
// What a dead replica charged but had not pushed yet (at most one Run
// tick, Lease/4) is lost.
//
// # Consistency
//
// Redis's counters are the truth and every change to them is one atomic
// script, so the limits above hold whatever the interleaving. A replica's
// own view — Ticket.Status, Denied.Status, its idea of the tokens used —
// is as of its last script call, at most about a Lease old; Usage reads
// Redis. The store lags Redis by up to PersistEvery.
//
// # Clock
//
// Scripts take the caller's clock, not Redis TIME, so tests drive them
// with a fake clock. This assumes replica clocks agree to within a few
// milliseconds (NTP): a skew of δ between two replicas can shorten the
// 60 s window the RPM invariant holds for by up to δ, and lengthen a
// lease's life by δ.
//
// # Persistence and Redis restarts
//
// Every PersistEvery (and at shutdown) Run saves each changed user's
// period usage and lifetime tokens to the store, read from Redis so the
// figures are the fleet's (while Redis is down, this replica's). A saved
// figure never includes this replica's charges not yet pushed to Redis,
// except at shutdown, when nothing will push them any more: the replica
// still pushes them, and a push onto a counter rebuilt from the store
// would count them twice. When Redis has no counter for a user's period —
// first use, or after a Redis restart — the replica that notices reads
// the store and initialises it; the script sets it only if it is still
// missing, so two replicas never count twice, and every replica's pending
// charges then land on it once. A Redis restart therefore loses at most
// the tokens pushed to Redis since the last persist (PersistEvery plus one
// Run tick; nothing still pending at a replica is lost), and the RPM log
// of the last minute (up to RPM more requests may be admitted in the
// minute after a restart that no replica saw as an outage). A replica
// that dies while Redis is down loses the charges it made meanwhile.
//
// Pushes are idempotent. A script call that times out at the replica
// may still have run in Redis; the replica keeps its charges pending and
// sends them again with the next call. Each call therefore carries the
// replica's running total of charges sent, and each counter records,
// per replica, the total it has applied, adding only the difference
// (tokenScript): a charge is applied once however often it is sent, and
// in whatever order a late call and its retry arrive.
//
// Held concurrency slots and token leases live in each replica's memory
// as well as in Redis, and every script call writes the caller's holding
// back whatever Redis had (the admit script's slots kept, the token
// script's lease kept), so a restart loses neither: each replica
// re-registers them at its next call or at Run's refresh, within one Lease
// plus one Run tick. Until it has, the other replicas do not see them, so
// for that long after a restart the fleet may hold, beyond each limit, the
// slots and token leases the other replicas held at the restart (each
// replica alone stays within the cap; a token lease is at most one batch,
// a quarter of the room left when granted). The token bound after a
// restart is thus: the charges since the last persist, plus the leases
// held at the restart. Permits already leased are used only until their
// grant time plus Lease, as always.
//
// # Redis down
//
// A failed Redis call (refused, timed out: the client's per-call timeout
// applies) opens a breaker: until Run's probe finds Redis again, requests
// do not touch Redis, so they never wait a timeout each. Meanwhile the
// RedisDown mode applies to whatever the lease does not cover: "local"
// (default) enforces every limit with this replica's own state, so N
// replicas admit up to N× each limit fleet-wide; "open" admits (usage is
// still counted); "closed" refuses with Denied{Kind: "unavailable"}. When
// Redis answers again, each replica pushes what it counted — token
// charges (once, even those of the call that failed: see Persistence),
// its admissions (stamped at the reconnection, conservatively) and its
// slots in use — and fleet mode resumes.
//
// Without Redis (Options.Redis nil) the same limits hold with this
// replica's state alone: RPM counted in 100 ms buckets over the last 60 s
// (conservative by at most one bucket).
//
// # Cost
//
// With headroom, Admit+Reserve+Done take no Redis round trip and no
// allocation: Tickets are pooled (a finished ticket waits in a small
// per-shard ring before reuse, so a repeated Done stays a no-op) and the
// leases live in memory. BenchmarkAdmitReserveDone measures both modes.
// Run's upkeep (returns, refreshes, pushed charges) takes one pipelined
// round trip per 128 users that need it.
package quota
