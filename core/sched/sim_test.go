package sched

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/backend"
)

// The simulation drives the real Fair (its try, release and dispatch
// code) over real backend slots, with a virtual clock and simulated
// service times: one goroutine, no sleeping, deterministic for a seed.

type simClock struct{ now time.Time }

func (c *simClock) Now() time.Time { return c.now }

// simJob is one simulated request.
type simJob struct {
	req       *Request
	user      string
	cost      int
	submitted time.Time
	started   time.Time
	// othersBefore counts the grants to other requests between this
	// job's arrival and its own grant.
	othersBefore int
	grantSeq     uint64
	grantsBefore uint64 // sim.grants at submission
}

type simEvent struct {
	at  time.Time
	seq uint64
	fn  func()
}

type simEvents []simEvent

func (h simEvents) Len() int { return len(h) }
func (h simEvents) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h simEvents) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *simEvents) Push(x any)   { *h = append(*h, x.(simEvent)) }
func (h *simEvents) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type sim struct {
	t      testing.TB
	clock  *simClock
	f      *Fair
	bs     []*backend.Backend
	events simEvents
	seq    uint64
	jobs   map[*Request]*simJob
	// service is a job's service time; done runs after each completion.
	service func(j *simJob) time.Duration
	done    func(j *simJob)
	// grants counts dispatches (fast path and from the queue).
	grants uint64
	// per user, over completions after measureFrom
	measureFrom time.Time
	tokens      map[string]float64
	served      map[string]int
	maxWait     map[string]time.Duration
	// maxGap: the longest a user with waiting requests went unserved.
	maxGap    map[string]time.Duration
	lastStart map[string]time.Time
	pending   []*Request
}

func newSim(t testing.TB, o FairOptions, caps ...int) *sim {
	reg, bs := registry(t, caps...)
	c := &simClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	o.Registry, o.Clock = reg, c
	s := &sim{
		t: t, clock: c, f: NewFair(o), bs: bs,
		jobs:   map[*Request]*simJob{},
		tokens: map[string]float64{}, served: map[string]int{}, maxWait: map[string]time.Duration{},
		maxGap: map[string]time.Duration{}, lastStart: map[string]time.Time{},
		service: func(j *simJob) time.Duration { return time.Duration(j.cost) * time.Millisecond },
	}
	s.f.onGrant = func(w *waiter) { s.pending = append(s.pending, w.req) }
	return s
}

// at schedules fn at d after the current virtual time.
func (s *sim) at(d time.Duration, fn func()) {
	s.seq++
	heap.Push(&s.events, simEvent{at: s.clock.now.Add(d), seq: s.seq, fn: fn})
}

// submit offers a request of cost tokens for model from user.
func (s *sim) submit(user, model string, weight float64, cost int) *simJob {
	j := &simJob{req: &Request{Model: model, User: user, Weight: weight, EstTokens: cost},
		user: user, cost: cost, submitted: s.clock.now, grantsBefore: s.grants}
	s.jobs[j.req] = j
	s.f.mu.Lock()
	l, _, err := s.f.try(j.req)
	s.f.mu.Unlock()
	if err != nil {
		s.t.Fatalf("submit %s/%s: %v", user, model, err)
	}
	s.startPending()
	if l != nil {
		s.start(j)
	}
	return j
}

// startPending starts the jobs the scheduler granted from its queue.
func (s *sim) startPending() {
	for len(s.pending) > 0 {
		r := s.pending[0]
		s.pending = s.pending[1:]
		s.start(s.jobs[r])
	}
}

func (s *sim) start(j *simJob) {
	j.started = s.clock.now
	from := j.submitted
	if l := s.lastStart[j.user]; l.After(from) {
		from = l
	}
	s.maxGap[j.user] = max(s.maxGap[j.user], s.clock.now.Sub(from))
	s.lastStart[j.user] = s.clock.now
	j.othersBefore = int(s.grants - j.grantsBefore)
	s.grants++
	j.grantSeq = s.grants
	s.at(s.service(j), func() {
		j.req.lease.Release() // hands the slot to the next waiter
		if !s.clock.now.Before(s.measureFrom) {
			s.tokens[j.user] += float64(j.cost)
			s.served[j.user]++
		}
		if w := j.started.Sub(j.submitted); w > s.maxWait[j.user] {
			s.maxWait[j.user] = w
		}
		delete(s.jobs, j.req)
		s.startPending()
		if s.done != nil {
			s.done(j)
		}
	})
}

// run processes events until the virtual time reaches end.
func (s *sim) run(end time.Time) {
	for len(s.events) > 0 && !s.events[0].at.After(end) {
		ev := heap.Pop(&s.events).(simEvent)
		s.clock.now = ev.at
		ev.fn()
	}
	s.clock.now = end
}

func (s *sim) shares(users []string) []float64 {
	var total float64
	for _, u := range users {
		total += s.tokens[u]
	}
	out := make([]float64, len(users))
	for i, u := range users {
		out[i] = s.tokens[u] / total
	}
	return out
}

// closedLoop keeps n requests of each user outstanding, resubmitting on
// completion, with costs from cost.
func (s *sim) closedLoop(users []string, weights []float64, n int, model string, cost func(user int) int) {
	idx := map[string]int{}
	for i, u := range users {
		idx[u] = i
	}
	prev := s.done
	s.done = func(j *simJob) {
		if i, ok := idx[j.user]; ok {
			s.submit(j.user, model, weights[i], cost(i))
		}
		if prev != nil {
			prev(j)
		}
	}
	for range n {
		for i, u := range users {
			s.submit(u, model, weights[i], cost(i))
		}
	}
}

func jain(xs []float64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	return sum * sum / (float64(len(xs)) * sq)
}

func pct(xs []float64) string {
	var b strings.Builder
	for i, x := range xs {
		if i > 0 {
			b.WriteString(" / ")
		}
		fmt.Fprintf(&b, "%.2f%%", 100*x)
	}
	return b.String()
}

// Weights 3:2:1 under saturation give token throughput shares within ±3 %
// (relative) of 50/33.3/16.7 %, with request sizes varying 10×.
func TestSimWeightedShares(t *testing.T) {
	s := newSim(t, FairOptions{}, 4, 4)
	rng := rand.New(rand.NewPCG(1, 2))
	users := []string{"faculty", "staff", "student"}
	weights := []float64{3, 2, 1}
	s.closedLoop(users, weights, 40, "m", func(int) int { return 200 + rng.IntN(1800) })
	start := s.clock.now
	s.measureFrom = start.Add(5 * time.Minute)
	s.run(start.Add(65 * time.Minute))
	got := s.shares(users)
	want := []float64{3.0 / 6, 2.0 / 6, 1.0 / 6}
	t.Logf("weights 3:2:1, 8 slots, 40 outstanding each, 1 h virtual: token shares %s (target 50.00%% / 33.33%% / 16.67%%), requests %d / %d / %d",
		pct(got), s.served["faculty"], s.served["staff"], s.served["student"])
	for i := range users {
		if d := math.Abs(got[i]-want[i]) / want[i]; d > 0.03 {
			t.Errorf("%s: share %.2f%%, want %.2f%% ±3%%", users[i], 100*got[i], 100*want[i])
		}
	}
}

// Equal weights under saturation: Jain's index over token throughput is
// at least 0.99, although users' request sizes differ up to 20×.
func TestSimEqualWeightsJain(t *testing.T) {
	s := newSim(t, FairOptions{}, 3, 5)
	rng := rand.New(rand.NewPCG(3, 4))
	var users []string
	var weights []float64
	for i := range 10 {
		users = append(users, fmt.Sprintf("u%d", i))
		weights = append(weights, 0) // 0 = 1
	}
	s.closedLoop(users, weights, 12, "m", func(i int) int {
		base := 100 * (1 + 2*i) // u0 asks small, u9 asks 19× as much
		return base + rng.IntN(base)
	})
	start := s.clock.now
	s.measureFrom = start.Add(5 * time.Minute)
	s.run(start.Add(65 * time.Minute))
	got := s.shares(users)
	j := jain(got)
	t.Logf("10 users, equal weights, sizes 1×..19×: token shares %s; Jain's index %.4f", pct(got), j)
	if j < 0.99 {
		t.Errorf("Jain's index %.4f < 0.99", j)
	}
}

// A light user's occasional request is the next one dispatched (it waits
// at most one slot turnover) while two heavy users flood the cluster.
func TestSimLightUserWaitsOneTurnover(t *testing.T) {
	s := newSim(t, FairOptions{}, 4, 4)
	rng := rand.New(rand.NewPCG(5, 6))
	s.closedLoop([]string{"heavy1", "heavy2"}, []float64{1, 1}, 200, "m", func(int) int { return 500 + rng.IntN(1500) })
	var light []*simJob
	for i := range 40 {
		s.at(time.Duration(60+i*37)*time.Second, func() {
			light = append(light, s.submit("light", "m", 1, 800))
		})
	}
	start := s.clock.now
	s.run(start.Add(40 * time.Minute))
	if len(light) != 40 {
		t.Fatalf("%d light requests submitted", len(light))
	}
	var worst, sum time.Duration
	for _, j := range light {
		if j.started.IsZero() {
			t.Fatalf("light request at %v never started", j.submitted.Sub(start))
		}
		if j.othersBefore > 0 {
			t.Errorf("light request at %v: %d other requests went first", j.submitted.Sub(start), j.othersBefore)
		}
		w := j.started.Sub(j.submitted)
		sum += w
		worst = max(worst, w)
	}
	// Mean slot turnover: 8 slots, mean service 1.25 s.
	t.Logf("light user under a flood of 400 queued: 40 requests, each next to be dispatched; wait mean %v, max %v (mean slot turnover ≈ %v); heavy max wait %v",
		sum/40, worst, 1250*time.Millisecond/8, max(s.maxWait["heavy1"], s.maxWait["heavy2"]))
}

// No request starves: with weights from 0.05 to 20, request sizes up to
// 30k tokens and every user saturating the cluster for 20 minutes, every
// request is served and no waiting user goes unserved much beyond
// StarvationAfter (a request's own wait is that times its place in its
// user's queue).
func TestSimNoStarvation(t *testing.T) {
	const after = 20 * time.Second
	s := newSim(t, FairOptions{StarvationAfter: after}, 4, 4)
	rng := rand.New(rand.NewPCG(7, 8))
	users := []string{"w0.05", "w0.5", "w1", "w5", "w20"}
	weights := []float64{0.05, 0.5, 1, 5, 20}
	s.service = func(j *simJob) time.Duration { return time.Duration(j.cost/10) * time.Millisecond }
	s.closedLoop(users, weights, 10, "m", func(i int) int {
		if i == 0 {
			return 10000 + rng.IntN(20000) // the lightest weight asks the most
		}
		return 200 + rng.IntN(2000)
	})
	start := s.clock.now
	s.run(start.Add(20 * time.Minute))
	s.done = nil
	s.run(start.Add(60 * time.Minute)) // drain
	if n := len(s.jobs); n != 0 {
		t.Fatalf("%d requests never completed", n)
	}
	var worst time.Duration
	for _, u := range users {
		worst = max(worst, s.maxGap[u])
	}
	t.Logf("weights 0.05..20, StarvationAfter %v: longest unserved while waiting per user %v %v %v %v %v; max request wait %v %v %v %v %v; requests %d %d %d %d %d",
		after, s.maxGap[users[0]], s.maxGap[users[1]], s.maxGap[users[2]], s.maxGap[users[3]], s.maxGap[users[4]],
		s.maxWait[users[0]], s.maxWait[users[1]], s.maxWait[users[2]], s.maxWait[users[3]], s.maxWait[users[4]],
		s.served[users[0]], s.served[users[1]], s.served[users[2]], s.served[users[3]], s.served[users[4]])
	// Past the bound, the longest-unserved flow goes first on every freed
	// slot; 8 slots turn over in well under 5 s here.
	if worst > after+5*time.Second {
		t.Errorf("a user went unserved %v while waiting, want ≤ %v", worst, after+5*time.Second)
	}
	if s.served[users[0]] == 0 {
		t.Error("the lightest user was never served")
	}
}

// A lone user uses the whole cluster; a user returning from idleness
// spends its burst credit ahead of a user who has been flooding.
func TestSimBurstCredit(t *testing.T) {
	s := newSim(t, FairOptions{}, 4, 4)
	for range 8 {
		s.submit("lone", "m", 1, 1000)
	}
	if s.grants != 8 || s.bs[0].InFlight() != 4 || s.bs[1].InFlight() != 4 {
		t.Fatalf("lone user: %d granted, in flight %d+%d; want the whole cluster (8)", s.grants, s.bs[0].InFlight(), s.bs[1].InFlight())
	}
	s.run(s.clock.now.Add(time.Minute))

	// burstRun: "flood" keeps 100 queued; after 5 minutes "back" (idle so
	// far, or with no burst credit) sends 4 requests at once. It returns
	// how many dispatches it took until all 4 had started.
	burstRun := func(o FairOptions) uint64 {
		s := newSim(t, o, 4, 4)
		s.closedLoop([]string{"flood"}, []float64{1}, 100, "m", func(int) int { return 1000 })
		var back []*simJob
		s.at(5*time.Minute, func() {
			for range 4 {
				back = append(back, s.submit("back", "m", 1, 1000))
			}
		})
		s.run(s.clock.now.Add(10 * time.Minute))
		first, last := uint64(math.MaxUint64), uint64(0)
		for _, j := range back {
			if j.started.IsZero() {
				t.Fatal("a returning request never started")
			}
			first, last = min(first, j.grantSeq), max(last, j.grantSeq)
		}
		// Dispatches from the burst's arrival until its last request.
		return last - first + 1 + uint64(back[0].othersBefore)
	}
	with := burstRun(FairOptions{})
	without := burstRun(FairOptions{BurstCredit: -1})
	t.Logf("4 requests after idleness against a flood: started within %d dispatches with burst credit, %d without", with, without)
	if with > 5 {
		t.Errorf("with burst credit the 4 requests took %d dispatches, want ≤ 5", with)
	}
	if without <= with {
		t.Errorf("burst credit made no difference: %d vs %d dispatches", with, without)
	}
}

// Per-model queues: a user's flood on one model neither blocks its own
// request for another model nor lets it take that model's slots ahead
// of the users waiting there.
func TestSimPerModelQueues(t *testing.T) {
	s := newSim(t, FairOptions{}, 2, 2)
	set(s.bs[0], true, testAdapter, "m1")
	set(s.bs[1], true, testAdapter, "m2")
	for range 50 {
		s.submit("x", "m1", 1, 1000)
	}
	if s.grants != 2 || s.f.Waiting() != 48 {
		t.Fatalf("m1 flood: %d granted, %d waiting", s.grants, s.f.Waiting())
	}
	j := s.submit("x", "m2", 1, 1000)
	if j.started.IsZero() {
		t.Fatal("x's m2 request waits behind its own m1 queue")
	}
	s.run(s.clock.now.Add(2 * time.Second)) // all in flight finish
	// y floods m2; x's next m2 request goes once y's burst credit (4
	// requests of 1000 tokens) is spent, whatever x's m1 backlog: the
	// deficits are per model.
	for range 20 {
		s.submit("y", "m2", 1, 1000)
	}
	j = s.submit("x", "m2", 1, 1000)
	s.run(s.clock.now.Add(5 * time.Minute))
	if j.started.IsZero() || j.othersBefore > 4 {
		t.Fatalf("x's m2 request behind y's flood: started %v after %d others", !j.started.IsZero(), j.othersBefore)
	}
	t.Logf("x's m2 request, with 48 of x's own queued on m1 and y flooding m2: %d others went first, waited %v", j.othersBefore, j.started.Sub(j.submitted))
}

// Queues and WaitingUsers report what waits, per model and user.
func TestSimQueueStats(t *testing.T) {
	s := newSim(t, FairOptions{}, 1, 1)
	set(s.bs[0], true, testAdapter, "m1")
	set(s.bs[1], true, testAdapter, "m2")
	s.submit("a", "m1", 1, 1000) // takes a's slot
	s.submit("b", "m2", 1, 1000) // takes b's slot
	s.submit("a", "m1", 2, 1000)
	s.clock.now = s.clock.now.Add(3 * time.Second)
	s.submit("a", "m1", 2, 1000)
	s.submit("c", "m1", 1, 1000)
	s.submit("c", "m2", 1, 1000)
	got := fmt.Sprint(s.f.Queues())
	want := "[{m1 3 2 3s 0} {m2 1 1 0s 0}]"
	if got != want {
		t.Fatalf("Queues = %s, want %s", got, want)
	}
	got = fmt.Sprint(s.f.WaitingUsers())
	want = "[{m1 a 2 2 0} {m1 c 1 1 4000} {m2 c 1 1 4000}]" // a was just served: no burst credit
	if got != want {
		t.Fatalf("WaitingUsers = %s, want %s", got, want)
	}
	s.run(s.clock.now.Add(time.Minute))
	if q := s.f.Queues(); len(q) != 0 {
		t.Fatalf("after the run: %v", q)
	}
}

// FairnessWait's bookkeeping against brute force, over an hour of mixed
// weights, sizes, starvation promotions and requests that leave: after
// every grant, each waiting head that arrived before the granted request
// is marked passed over, and the heap of unmarked heads holds exactly
// the waiting flows whose head is unmarked, in heap order.
func TestSimFairnessWaitBookkeeping(t *testing.T) {
	s := newSim(t, FairOptions{Record: true, StarvationAfter: 5 * time.Second}, 2, 3)
	rng := rand.New(rand.NewPCG(5, 6))
	var users []string
	var weights []float64
	for i := range 8 {
		users = append(users, fmt.Sprintf("u%d", i))
		weights = append(weights, float64(1+i%3))
	}
	grants, marked := 0, 0
	onGrant := s.f.onGrant
	s.f.onGrant = func(w *waiter) {
		onGrant(w)
		grants++
		mq := w.flow.mq
		inHeap := 0
		for _, fl := range mq.heap {
			h := fl.fifo.head
			if h.seq < w.seq && h.passed.IsZero() {
				t.Fatalf("grant %d: %s's head (seq %d) arrived before the grantee (seq %d) and is not marked", grants, fl.user, h.seq, w.seq)
			}
			if h.passed.IsZero() != (fl.pidx >= 0) {
				t.Fatalf("grant %d: %s's head marked %v, in the unpassed heap %v", grants, fl.user, !h.passed.IsZero(), fl.pidx >= 0)
			}
			if !h.passed.IsZero() {
				marked++
			}
			if fl.pidx >= 0 {
				inHeap++
			}
		}
		if inHeap != len(mq.unpassed) {
			t.Fatalf("grant %d: %d flows in the unpassed heap, %d waiting flows unmarked", grants, len(mq.unpassed), inHeap)
		}
		for i, fl := range mq.unpassed {
			if fl.pidx != i || (i > 0 && unpassedLess(fl, mq.unpassed[(i-1)/2])) {
				t.Fatalf("grant %d: unpassed heap broken at %d", grants, i)
			}
		}
	}
	s.closedLoop(users, weights, 6, "m", func(int) int { return 200 + rng.IntN(3000) })
	prev := s.done
	s.done = func(j *simJob) {
		prev(j)
		if rng.IntN(8) != 0 {
			return
		}
		// A random waiting request leaves (timeout, cancel) and its user
		// sends another.
		s.f.mu.Lock()
		var w *waiter
		for _, mq := range s.f.active {
			fl := mq.heap[rng.IntN(len(mq.heap))]
			if w = fl.fifo.head; rng.IntN(2) == 0 {
				w = fl.fifo.tail
			}
		}
		if w != nil {
			s.f.leaveLocked(w)
		}
		s.f.mu.Unlock()
		if w != nil {
			delete(s.jobs, w.req)
			u, weight := w.flow.user, w.flow.weight
			s.submit(u, "m", weight, 200+rng.IntN(3000))
		}
	}
	start := s.clock.now
	s.run(start.Add(time.Hour))
	if grants < 1000 || marked == 0 {
		t.Fatalf("%d grants, %d marked heads seen: the scenario did not exercise the bookkeeping", grants, marked)
	}
	t.Logf("%d grants checked, %d marked heads seen", grants, marked)
}
