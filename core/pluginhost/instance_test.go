package pluginhost

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/sdk/abi"
)

func decode(body string) CallInput { return CallInput{Payload: []byte(body)} }

// okAfter checks that the plugin serves a good call (on a fresh or pooled
// instance) after a failure.
func okAfter(t *testing.T, p *Plugin) {
	t.Helper()
	var out Result
	if err := p.Call(context.Background(), abi.OpRequestDecode, decode("fine"), &out); err != nil {
		t.Fatalf("call after failure: %v", err)
	}
	if !bytes.Contains(out.Payload, []byte(`"fine"`)) {
		t.Fatalf("payload %s", out.Payload)
	}
}

func TestVersion_Call_Timeout(t *testing.T) {
	bad := plugin("bad", "bad", "translator", ModeStrict)
	// The loop runs 2 s so that "GC did not wait for it" is a question of
	// order (GC ended before the loop was interrupted), not of a time bound
	// a loaded machine can miss.
	bad.Limits.CallTimeoutMS = 2000
	h := newTestHost(t, bad, plugin("good", "good", "translator", ModeTrusted))
	p, good := h.Plugin("bad"), h.Plugin("good")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var maxGap atomic.Int64
	var goodCalls atomic.Int64
	wg.Add(2)
	go func() { // a goroutine ticking every ms
		defer wg.Done()
		last := time.Now()
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-tk.C:
				if gap := now.Sub(last); int64(gap) > maxGap.Load() {
					maxGap.Store(int64(gap))
				}
				last = now
			}
		}
	}()
	go func() { // another plugin keeps serving
		defer wg.Done()
		var out Result
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := good.Call(context.Background(), abi.OpErrorEncode, errorInput, &out); err != nil {
				t.Error(err)
				return
			}
			goodCalls.Add(1)
		}
	}()
	time.Sleep(20 * time.Millisecond)
	maxGap.Store(0)
	before := goodCalls.Load()
	type gcRun struct{ began, ended time.Time }
	gcDone := make(chan gcRun, 1)
	go func() { // a GC during the loop must not wait for it
		time.Sleep(100 * time.Millisecond)
		s := time.Now()
		runtime.GC()
		gcDone <- gcRun{s, time.Now()}
	}()
	start := time.Now()
	var out Result
	err := p.Call(context.Background(), abi.OpRequestDecode, decode("loop"), &out)
	end := time.Now()
	took := end.Sub(start)
	during := goodCalls.Load() - before
	gc := <-gcDone
	close(stop)
	wg.Wait()
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err %v, want ErrTimeout", err)
	}
	if took < 1950*time.Millisecond || took > 4*time.Second {
		t.Errorf("timed out after %v, want about 2s", took)
	}
	gap := time.Duration(maxGap.Load())
	t.Logf("loop interrupted after %v; meanwhile %d calls to another plugin, max ticker gap %v, GC took %v",
		took, during, gap, gc.ended.Sub(gc.began))
	if during == 0 {
		t.Error("the other plugin made no progress during the loop")
	}
	// Neither waits for the loop to end: back-edge checks make the guest
	// preemptible, if slowly (tens of ms idle, hundreds on a loaded CI
	// machine). A GC that waited for the loop would end after it.
	if !gc.ended.Before(end) {
		t.Errorf("GC began %v into the loop and ended %v after it was interrupted: it waited for the loop",
			gc.began.Sub(start), gc.ended.Sub(end))
	}
	if gap > took/2 {
		t.Errorf("ticker stalled %v during a %v loop", gap, took)
	}
	if n := p.metrics.timeouts.Load(); n != 1 {
		t.Errorf("timeouts metric %d", n)
	}
	if n := p.metrics.discarded.Load(); n != 1 {
		t.Errorf("discarded %d instances, want 1", n)
	}
	okAfter(t, p)
}

func TestVersion_Call_Trap(t *testing.T) {
	for _, mode := range []Mode{ModeTrusted, ModeStrict} {
		t.Run(string(mode), func(t *testing.T) {
			pc := plugin("bad", "bad", "translator", mode)
			pc.Limits.CallTimeoutMS = 5000 // filling 64 MiB under GOMEMLIMIT is slow in strict mode
			h := newTestHost(t, pc)
			p := h.Plugin("bad")
			for _, body := range []string{"trap", "oom"} {
				var out Result
				err := p.Call(context.Background(), abi.OpRequestDecode, decode(body), &out)
				if !errors.Is(err, ErrTrap) {
					t.Fatalf("%s: err %v, want ErrTrap", body, err)
				}
				if !strings.Contains(err.Error(), `plugin "bad" request_decode`) {
					t.Errorf("error does not name plugin and op: %v", err)
				}
				okAfter(t, p)
			}
			if n := p.metrics.traps.Load(); n != 2 {
				t.Errorf("traps %d", n)
			}
			if n := p.metrics.discarded.Load(); n != 2 {
				t.Errorf("discarded %d", n)
			}
		})
	}
}

func TestVersion_Call_Panic(t *testing.T) {
	h := newTestHost(t, plugin("bad", "bad", "translator", ModeTrusted))
	p := h.Plugin("bad")
	var out Result
	err := p.Call(context.Background(), abi.OpRequestDecode, decode("panic"), &out)
	var se *StatusError
	if !errors.As(err, &se) || se.Status != abi.StatusPluginError || !strings.Contains(se.Msg, "boom") {
		t.Fatalf("err %v, want StatusError plugin_error boom", err)
	}
	if out.Status != abi.StatusPluginError || !bytes.Contains(out.Err, []byte("boom")) {
		t.Fatalf("result %+v", out)
	}
	if n := p.metrics.discarded.Load(); n != 0 {
		t.Errorf("a recovered panic discarded the instance")
	}
	if n := p.metrics.errors[abi.StatusPluginError].Load(); n != 1 {
		t.Errorf("errors metric %d", n)
	}
	okAfter(t, p)
}

func TestVersion_Call_Protocol(t *testing.T) {
	h := newTestHost(t, plugin("raw", "badresult", "translator", ModeTrusted))
	p := h.Plugin("raw")
	for _, op := range []abi.Op{abi.OpRequestDecode, abi.OpResponseEncode} {
		var out Result
		err := p.Call(context.Background(), op, decode("x"), &out)
		if !errors.Is(err, ErrProtocol) {
			t.Fatalf("%s: err %v, want ErrProtocol", op, err)
		}
		if err := p.Call(context.Background(), abi.OpErrorEncode, errorInput, &out); err != nil {
			t.Fatalf("good call after protocol error: %v", err)
		}
	}
	if n := p.metrics.discarded.Load(); n != 2 {
		t.Errorf("discarded %d", n)
	}
}

func TestVersion_Call_StatusError(t *testing.T) {
	h := newTestHost(t, plugin("good", "good", "translator", ModeTrusted))
	var out Result
	err := h.Plugin("good").Call(context.Background(), abi.OpRequestDecode, CallInput{}, &out)
	var se *StatusError
	if !errors.As(err, &se) || se.Status != abi.StatusBadInput || se.Msg != "empty body" || se.Plugin != "good" || se.Op != abi.OpRequestDecode {
		t.Fatalf("err %#v", err)
	}
	err = h.Plugin("good").Call(context.Background(), abi.OpModelsEncode, CallInput{Payload: []byte(`{"models":[]}`)}, &out)
	if !errors.As(err, &se) || se.Status != abi.StatusUnsupported {
		t.Fatalf("err %v, want unsupported", err)
	}
}

func TestVersion_Call_StreamState(t *testing.T) {
	h := newTestHost(t, plugin("good", "good", "translator", ModeTrusted))
	v := h.Plugin("good").Pin()
	defer v.Release()
	var out Result
	var items []byte
	for i, id := range []string{"a", "b", "c"} {
		items = abi.AppendItem(items[:0], []byte(`{"id":"`+id+`","choices":[]}`))
		in := CallInput{Payload: items, State: out.State} // the previous result's state, aliased
		if i == 0 {
			in.Flags = abi.FlagFirst
		}
		if err := v.Call(context.Background(), abi.OpStreamEncode, in, &out); err != nil {
			t.Fatal(err)
		}
		want := `data: {"n":` + string(rune('1'+i)) + `,"id":"` + id + `"}`
		if !strings.HasPrefix(string(out.Payload), want) {
			t.Fatalf("call %d: %q, want %q", i, out.Payload, want)
		}
	}
	if err := v.Call(context.Background(), abi.OpStreamEncode, CallInput{Flags: abi.FlagEnd, State: out.State}, &out); err != nil {
		t.Fatal(err)
	}
	if string(out.Payload) != "data: [DONE]\n\n" {
		t.Fatalf("trailer %q", out.Payload)
	}
	// A kept state comes back as a copy of the input.
	err := v.Call(context.Background(), abi.OpErrorEncode, CallInput{State: []byte("opaque"), Payload: errorInput.Payload}, &out)
	if err != nil || string(out.State) != "opaque" {
		t.Fatalf("kept state %q, err %v", out.State, err)
	}
}

func TestVersion_Call_Limits(t *testing.T) {
	pc := plugin("good", "good", "translator", ModeTrusted)
	pc.Limits.StateMaxKB = 1
	pc.Limits.MaxPayloadMB = 1
	h := newTestHost(t, pc)
	p := h.Plugin("good")
	var out Result
	if err := p.Call(context.Background(), abi.OpErrorEncode, CallInput{State: make([]byte, 2048)}, &out); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("state: err %v", err)
	}
	if err := p.Call(context.Background(), abi.OpRequestDecode, CallInput{Payload: make([]byte, 2<<20)}, &out); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("payload: err %v", err)
	}
	// Inputs that need a bigger guest buffer are fine (mr_buf grows it).
	for _, n := range []int{10 << 10, 300 << 10, 900 << 10} {
		body := bytes.Repeat([]byte("m"), n)
		if err := p.Call(context.Background(), abi.OpRequestDecode, CallInput{Payload: body}, &out); err != nil {
			t.Fatalf("%d B: %v", n, err)
		}
		if len(out.Payload) < n {
			t.Fatalf("%d B: short output %d", n, len(out.Payload))
		}
	}
}

// countHandler counts plugin output records by stream.
type countHandler struct {
	mu     sync.Mutex
	counts map[string]int
	reqIDs map[string]int // req_id values of mr_v2.log lines
}

func (c *countHandler) Enabled(context.Context, slog.Level) bool { return true }
func (c *countHandler) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *countHandler) WithGroup(string) slog.Handler            { return c }
func (c *countHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "plugin output" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		c.mu.Lock()
		switch a.Key {
		case "stream":
			c.counts[a.Value.String()]++
		case "req_id":
			if c.reqIDs != nil {
				c.reqIDs[a.Value.String()]++
			}
		}
		c.mu.Unlock()
		return true
	})
	return nil
}

func TestPlugin_Log(t *testing.T) {
	ch := &countHandler{counts: map[string]int{}, reqIDs: map[string]int{}}
	cfg := &Config{ABI: 2, CacheDir: cacheDir, Plugins: []PluginConfig{plugin("bad", "bad", "translator", ModeTrusted)}}
	h, err := New(context.Background(), cfg, testDir, slog.New(ch))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	p := h.Plugin("bad")
	var out Result
	for _, body := range []string{"log", "print"} { // 100 lines each
		in := decode(body)
		in.RequestID = 0xabc
		if err := p.Call(context.Background(), abi.OpRequestDecode, in, &out); err != nil {
			t.Fatal(err)
		}
	}
	ch.mu.Lock()
	total := ch.counts["log"] + ch.counts["stdout"]
	t.Logf("lines logged: %v; dropped %d", ch.counts, p.metrics.logDropped.Load())
	ch.mu.Unlock()
	if total == 0 || total > 2*logLinesPerSecond {
		t.Errorf("%d lines passed the rate limit", total)
	}
	if d := p.metrics.logDropped.Load(); int(d)+total != 200 {
		t.Errorf("dropped %d + logged %d != 200", d, total)
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.counts["log"] > 0 && ch.reqIDs["0000000000000abc"] != ch.counts["log"] {
		t.Errorf("mr_v2.log lines carry req_id %v, want 0000000000000abc on all %d", ch.reqIDs, ch.counts["log"])
	}
}
