package fakellm

import (
	"strings"
	"testing"
	"time"
)

// TestPacing_LowTPS: pacing by due time with paceSlack still holds a slow
// stream to its TPS: 20 tokens at 100 tokens/s take at least the 190 ms
// from the first token to the last (less the slack, and a little for the
// clock), streamed and not, on both engines. No upper bound: a loaded
// machine may be slower.
func TestPacing_LowTPS(t *testing.T) {
	const tps, tokens = 100.0, 20
	want := time.Duration(float64(tokens-1)/tps*float64(time.Second)) - paceSlack - 5*time.Millisecond
	for _, engine := range []string{EngineVLLM, EngineOllama} {
		_, url := startServer(t, Config{Engine: engine, TPS: tps, Tokens: tokens})
		path := "/v1/chat/completions"
		if engine == EngineOllama {
			path = "/api/chat"
		}
		for _, stream := range []bool{true, false} {
			body := strings.Replace(chatReq, `{"model"`, `{"stream":false,"model"`, 1)
			if stream {
				body = chatStreamReq
			}
			start := time.Now()
			code, _, b := post(t, url+path, body)
			if d := time.Since(start); code != 200 || d < want {
				t.Errorf("%s stream=%v: %d after %v, want >= %v: %s", engine, stream, code, d, want, b)
			}
		}
	}
}

// TestPacing_HighTPSNoTimer: at a TPS where a request's tokens are all due
// within paceSlack (16 tokens at 1e5/s: 150 µs), a stream never sleeps; it
// used to set a timer for every token not yet due, ~1 ms a request.
func TestPacing_HighTPSNoTimer(t *testing.T) {
	s, err := New(Config{TPS: 1e5})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := &call{s: s, slotAt: time.Now()}
	for i := range 16 {
		if !c.waitToken(i) {
			t.Fatal("cancelled")
		}
	}
	if c.timer != nil {
		t.Fatal("a timer was set for tokens due within paceSlack")
	}
}
