package server

// Regression tests of bugs found while writing the stage tests; each
// failed before its fix.

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk"
)

func watchRunning(w *watcher) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.running
}

// Bug: watcher.read cleared the read deadline when its goroutine starts.
// When stop runs between fire (running = true, go read()) and that
// goroutine's first line, stop's past deadline is set first and then
// cleared by read, whose Read then blocks until the client sends or
// closes; stop waits on done forever, so the handler never answers. This
// happens when the timer fires as the backend answers (requests taking
// about watchDelay). Fix: clear the deadline in fire, under w.mu before
// running = true (or not at all in read), so stop's past deadline always
// comes after it.
func TestRegression_WatcherStopRacesFire(t *testing.T) {
	server, client := tcpPair(t)
	ex := watchedEx(t, server)
	for i := 0; i < 50; i++ {
		ex.watch.start()
		ex.watch.timer.Reset(time.Nanosecond) // the timer fires now...
		for !watchRunning(&ex.watch) {
			time.Sleep(10 * time.Microsecond)
		}
		var hung atomic.Bool
		unstick := time.AfterFunc(2*time.Second, func() { hung.Store(true); client.Close() })
		ex.watch.stop() // ...and the response is ready at the same moment
		unstick.Stop()
		if hung.Load() {
			t.Fatalf("iteration %d: stop blocked until the client closed its connection", i)
		}
	}
}

// Bug: a client that leaves while its request waits for a plugin
// instance gets pluginhost's "ErrPoolTimeout: context canceled"
// (pool.await wraps both), which pluginFailure classifies as 503
// plugin_busy (an overload, counted as a server error) instead of 499.
// Fix: test errors.Is(err, context.Canceled) before ErrPoolTimeout in
// pluginFailure.
func TestRegression_PoolWaitCancelledIsClientGone(t *testing.T) {
	err := fmt.Errorf("%w: %w", pluginhost.ErrPoolTimeout, context.Canceled) // as pool.await returns it
	wantErr(t, pluginFailure(err), statusClientClosed, "client_closed_request")
}

// Bug: requestLineTooLong looks only at fasthttp's first 200 quoted bytes
// of the buffer, so a request line of 200 bytes to the buffer size
// (common: URLs with query strings) followed by headers that overflow is
// answered 414 "URL too long" instead of 431. Fix: in the
// `contents: "first"..."last"` shape, call it a long request line only
// when neither quoted part contains `\n` (search the whole snippet, not
// the first 220 characters).
func TestRegression_RequestLineTooLongMisreadsHeaders(t *testing.T) {
	raw := "POST /v1/chat/completions?" + strings.Repeat("q", 300) + " HTTP/1.1\r\nHost: x\r\n" + headerLines(200) + "\r\n"
	if msg := smallBufferErr(t, raw, 4096).Error(); requestLineTooLong(msg) {
		t.Fatalf("a 330-byte request line with 9 KB of headers is classified as a long URL (414): %.300q", msg)
	}
}

// Bug: checkModel bounds the model's raw JSON span (escapes included), so
// a model name that is short once decoded but written with \u escapes
// (Python's json.dumps escapes every non-ASCII character by default) is
// refused as "longer than 256 bytes", though decode would accept it. Fix:
// refuse on the raw span only beyond 6*maxModelName+2 (the most an escape
// can expand), and check len(name) > maxModelName after AppendString.
func TestRegression_PrecheckModelLengthCountsEscapes(t *testing.T) {
	s := newTestServer(t, nil)
	ex := newEx(s, nil)
	ex.setRoute(chatRoute(&sdk.Routing{Model: "model"}))
	// 60 × "é" is 120 bytes of UTF-8, 360 bytes as \u00e9 escapes.
	ex.body = []byte(`{"model":"` + strings.Repeat(`\u00e9`, 60) + `"}`)
	if err := (precheck{s}).run(nil, ex); err != nil {
		t.Fatalf("a 120-byte model name refused: %v", err)
	}
}
