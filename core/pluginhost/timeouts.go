package pluginhost

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/mindrouter/mindrouter/sdk/abi"
)

// Timekeeper settings. A trusted call is stuck after 10× its call_timeout,
// but never less than watchdogMin. The timekeeper wakes at most every
// tickMax, sooner when a strict deadline is due; once no call has started
// for idleAfter and none runs, it parks until the next call starts.
const (
	watchdogMin    = 2 * time.Second
	watchdogFactor = 10
	tickMin        = time.Millisecond
	tickMax        = 10 * time.Millisecond
	idleAfter      = 100 * time.Millisecond
)

// StuckCall describes a call the watchdog found running past its hard limit.
type StuckCall struct {
	Plugin    string
	Seq       uint64 // version sequence number
	Mode      Mode
	Op        abi.Op
	RequestID uint64
	Running   time.Duration
}

// timekeeper is one goroutine per Host that enforces strict deadlines and
// watches trusted calls.
//
// Strict deadlines are not Go timers on purpose. A timer lives on the heap
// of the P that armed it, and the P running a guest call does not service
// its timers until the call ends: async preemption signals almost always
// land in JIT code, where they are refused. Measured on 2 cores with every
// P busy, a context.WithTimeout deadline armed just before a looping call
// fired after 1.8 s instead of 300 ms. The timekeeper instead sleeps in a
// raw nanosleep syscall (no runtime timer), and on waking cancels the
// per-instance context of every strict call past its deadline; wazero's
// per-call watcher then closes the module and the guest exits at its next
// loop back-edge.
//
// The watchdog half reports trusted calls past max(10 × call_timeout, 2 s):
// wazero v1.12 cannot interrupt a guest without termination checks, and
// the stuck goroutine blocks every GC stop-the-world, so once a GC starts
// the whole process (this goroutine included) stalls. The watchdog catches
// slow calls before that happens, marks the version unhealthy and calls the
// OnStuckCall hook, where the gateway may choose to exit and be restarted
// by its supervisor.
//
// An idle host does not tick: once no call has started for idleAfter and
// none is running, the timekeeper parks on a channel (no timer, no
// wake-up) and the next call's start wakes it (callWasm: one atomic load
// a call while it runs, one channel send after an idle spell).
type timekeeper struct {
	min  atomic.Int64 // watchdog floor (time.Duration); 0 = watchdogMin
	hook atomic.Pointer[func(StuckCall)]

	parked atomic.Bool   // the timekeeper is parked, or about to be
	wake   chan struct{} // cap 1: unpark's token
	parks  atomic.Uint64 // times it parked (tests)
	scans  atomic.Uint64 // times it woke and scanned (tests)
}

// OnStuckCall installs f, called (from the timekeeper goroutine) once per
// call that overruns max(10 × call_timeout, 2 s). Install before traffic
// starts.
func (h *Host) OnStuckCall(f func(StuckCall)) { h.timekeeper.hook.Store(&f) }

func (k *timekeeper) start(h *Host) {
	k.wake = make(chan struct{}, 1)
	h.bg.Add(1)
	go func() {
		defer h.bg.Done()
		var versions []*Version // reused: the timekeeper wakes up to 1000 times a second
		for h.bgCtx.Err() == nil {
			versions = h.appendVersions(versions[:0])
			now := mono()
			k.scans.Add(1)
			next, last := k.scan(versions, h, now)
			if now-last >= int64(idleAfter) && k.idle(h, versions) {
				clear(versions)
				k.parks.Add(1)
				select {
				case <-k.wake:
				case <-h.bgCtx.Done():
				}
				continue
			}
			clear(versions) // do not keep retired versions reachable
			rawSleep(min(max(time.Duration(next-mono()), tickMin), tickMax))
		}
	}()
}

// idle marks the timekeeper parked and reports whether it may block:
// no call runs. A call stores started before it loads parked, and idle
// stores parked before it loads started (both sequentially consistent),
// so either idle sees the call or the call sees parked and unparks.
// A call on a version loaded after versions was taken unparks as well.
func (k *timekeeper) idle(h *Host, versions []*Version) bool {
	k.parked.Store(true)
	running := false
	for _, v := range versions {
		v.pool.forEach(func(in *instance) {
			running = running || in.started.Load() != 0
		})
	}
	if !running {
		return true
	}
	if !k.parked.CompareAndSwap(true, false) {
		<-k.wake // a call unparked us meanwhile: take its token
	}
	return false
}

// unpark wakes a parked timekeeper (once: the first caller that sees it
// parked sends the token).
func (k *timekeeper) unpark() {
	if k.parked.CompareAndSwap(true, false) {
		select {
		case k.wake <- struct{}{}:
		default:
		}
	}
}

// scan enforces due deadlines, reports stuck calls and returns the
// nearest pending strict deadline (or now+tickMax) and the latest call
// start it saw (now while a call runs).
func (k *timekeeper) scan(versions []*Version, h *Host, now int64) (next, last int64) {
	next = now + int64(tickMax)
	floor := time.Duration(k.min.Load())
	if floor == 0 {
		floor = watchdogMin
	}
	for _, v := range versions {
		limit := int64(max(watchdogFactor*v.timeout, floor))
		v.pool.forEach(func(in *instance) {
			if v.strict {
				if d := in.enforce(now); d != 0 {
					next = min(next, d)
				}
			}
			s := in.started.Load()
			if s != 0 {
				last = now
				if now-s >= limit && in.reported.CompareAndSwap(false, true) {
					k.report(h, v, in, time.Duration(now-s))
				}
			}
			last = max(last, in.last.Load())
		})
	}
	return next, last
}

func (k *timekeeper) report(h *Host, v *Version, in *instance, running time.Duration) {
	sc := StuckCall{Plugin: v.plugin.name, Seq: v.seq, Mode: v.cfg.Mode, Op: abi.Op(in.op.Load()),
		RequestID: in.reqID.Load(), Running: running}
	v.unhealthy.Store(true)
	v.plugin.metrics.stuck.Add(1)
	h.logger.Error("plugin call stuck past its hard limit",
		slog.String("plugin", sc.Plugin), slog.Uint64("seq", sc.Seq), slog.String("mode", string(sc.Mode)),
		slog.String("op", sc.Op.String()), reqIDAttr(sc.RequestID), slog.Float64("dur_ms", float64(sc.Running.Microseconds())/1000),
		slog.String("note", "trusted mode cannot interrupt it; the process may freeze at the next GC"))
	if f := k.hook.Load(); f != nil {
		(*f)(sc)
	}
}

// beginStrict arms the deadline of a strict call (mono ns).
func (in *instance) beginStrict(deadline int64) {
	in.mu.Lock()
	in.deadline, in.running = deadline, true
	in.mu.Unlock()
}

// endStrict disarms it and reports whether the timekeeper fired.
func (in *instance) endStrict() (timedOut bool) {
	in.mu.Lock()
	in.running = false
	timedOut = in.timedOut
	in.mu.Unlock()
	return timedOut
}

// enforce cancels the call if it is past its deadline; it returns the
// pending deadline, or 0.
func (in *instance) enforce(now int64) int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.running || in.timedOut {
		return 0
	}
	if now < in.deadline {
		return in.deadline
	}
	in.timedOut = true
	in.cancel() // wazero's watcher closes the module; the guest exits at its next back-edge
	return 0
}
