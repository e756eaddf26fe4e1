package pluginhost

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/mindrouter/mindrouter/sdk/abi"
)

// Watchdog defaults: a call is stuck after 10× its call_timeout, but never
// less than watchdogMin.
const (
	watchdogMin    = 2 * time.Second
	watchdogFactor = 10
	watchdogEvery  = 250 * time.Millisecond
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

// watchdog reports calls that overrun their hard limit. For trusted plugins
// it is the only defence, and a weak one: wazero v1.12 cannot interrupt a
// guest without termination checks, and the stuck goroutine blocks every
// GC stop-the-world, so once a GC starts the whole process (this goroutine
// included) stalls. The watchdog catches slow calls before that happens and
// marks the version unhealthy; the hook (OnStuckCall) lets the gateway
// decide to exit and be restarted by its supervisor. In strict mode wazero
// enforces the deadline itself and the watchdog is a backstop.
type watchdog struct {
	min   time.Duration
	every time.Duration
	hook  atomic.Pointer[func(StuckCall)]
}

// OnStuckCall installs f, called (from the watchdog goroutine) once per call
// that overruns max(10 × call_timeout, 2 s). Install before traffic starts.
func (h *Host) OnStuckCall(f func(StuckCall)) { h.watchdog.hook.Store(&f) }

func (w *watchdog) start(h *Host) {
	if w.min == 0 {
		w.min = watchdogMin
	}
	if w.every == 0 {
		w.every = watchdogEvery
	}
	h.bg.Add(1)
	go func() {
		defer h.bg.Done()
		t := time.NewTicker(w.every)
		defer t.Stop()
		for {
			select {
			case <-h.bgCtx.Done():
				return
			case <-t.C:
				w.scan(h)
			}
		}
	}()
}

func (w *watchdog) scan(h *Host) {
	now := mono()
	for _, v := range h.liveVersions() {
		limit := max(watchdogFactor*v.timeout, w.min)
		v.pool.forEach(func(in *instance) {
			s := in.started.Load()
			if s == 0 || time.Duration(now-s) < limit || !in.reported.CompareAndSwap(false, true) {
				return
			}
			sc := StuckCall{Plugin: v.plugin.name, Seq: v.seq, Mode: v.cfg.Mode, Op: abi.Op(in.op.Load()),
				RequestID: in.reqID.Load(), Running: time.Duration(now - s)}
			v.unhealthy.Store(true)
			v.plugin.metrics.stuck.Add(1)
			h.logger.Error("plugin call stuck: cannot be interrupted in trusted mode; the process may freeze at the next GC",
				slog.String("plugin", sc.Plugin), slog.Uint64("seq", sc.Seq), slog.String("mode", string(sc.Mode)),
				slog.String("op", sc.Op.String()), slog.Uint64("req_id", sc.RequestID), slog.Duration("dur", sc.Running))
			if f := w.hook.Load(); f != nil {
				(*f)(sc)
			}
		})
	}
}
