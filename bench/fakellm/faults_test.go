package fakellm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

const chatReq = `{"model":"qwen3-8b","messages":[{"role":"user","content":"hello"}]}`
const chatStreamReq = `{"model":"qwen3-8b","stream":true,"messages":[{"role":"user","content":"hello"}]}`

// rawRequest opens a connection and sends one POST; the caller reads and
// closes.
func rawRequest(t *testing.T, url, path, body string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: fakellm\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		path, len(body), body)
	return conn, bufio.NewReader(conn)
}

func TestErrorRate(t *testing.T) {
	for _, engine := range []string{EngineVLLM, EngineOllama} {
		s, url := startServer(t, Config{Engine: engine, ErrorRate: 1})
		path, req := "/v1/chat/completions", chatStreamReq
		if engine == EngineOllama {
			path = "/api/chat"
		}
		for range 3 {
			code, hdr, body := post(t, url+path, req)
			if code != 500 || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
				t.Fatalf("%s: status %d %s", engine, code, body)
			}
			o := decode(t, body)
			if engine == EngineVLLM {
				e := o["error"].(obj)
				if e["type"] != "InternalServerError" || num(t, e["code"]) != 500 || e["message"] == "" {
					t.Errorf("vllm error = %v", e)
				}
			} else if msg, ok := o["error"].(string); !ok || msg == "" {
				t.Errorf("ollama error = %v", o)
			}
		}
		if st := s.Stats(); st.Errors != 3 || st.Running != 0 {
			t.Errorf("%s: stats %+v", engine, st)
		}
		// only inference requests fail
		health := "/health"
		if engine == EngineOllama {
			health = "/api/version"
		}
		if code, _, _ := get(t, url+health); code != 200 {
			t.Errorf("%s: %s = %d", engine, health, code)
		}
	}
}

func TestFaultSeedDeterministic(t *testing.T) {
	run := func() string {
		_, url := startServer(t, Config{ErrorRate: 0.5, Seed: 42})
		var sb strings.Builder
		for range 20 {
			code, _, _ := post(t, url+"/v1/chat/completions", chatReq)
			fmt.Fprintf(&sb, "%d ", code)
		}
		return sb.String()
	}
	a, b := run(), run()
	if a != b {
		t.Errorf("same seed, different faults:\n%s\n%s", a, b)
	}
	if !strings.Contains(a, "200") || !strings.Contains(a, "500") {
		t.Errorf("rate 0.5 gave %s", a)
	}
}

func TestHangRate(t *testing.T) {
	s, url := startServer(t, Config{HangRate: 1})
	c := &http.Client{Timeout: 200 * time.Millisecond}
	start := time.Now()
	_, err := c.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(chatReq))
	if err == nil {
		t.Fatal("hung request answered")
	}
	if time.Since(start) < 150*time.Millisecond {
		t.Errorf("returned after %v", time.Since(start))
	}
	if st := s.Stats(); st.Hangs != 1 {
		t.Errorf("stats = %+v", st)
	}
	if code, _, _ := get(t, url+"/health"); code != 200 {
		t.Errorf("/health = %d during hangs", code)
	}

	// Close ends a hang whose client is still waiting
	conn, br := rawRequest(t, url, "/v1/chat/completions", chatReq)
	defer conn.Close()
	waitFor(t, "second hang", 5*time.Second, func() bool { return s.Stats().Hangs == 2 })
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("Close did not return with a hanging request")
	}
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	if line, err := br.ReadString('\n'); err == nil {
		t.Errorf("hung request got an answer after Close: %q", line)
	} else if errors.Is(err, net.ErrClosed) || isTimeout(err) {
		t.Errorf("connection not closed by Close: %v", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestDropRate(t *testing.T) {
	for _, engine := range []string{EngineVLLM, EngineOllama} {
		s, url := startServer(t, Config{Engine: engine, DropRate: 1, Tokens: 20})
		path, stream, plain := "/v1/chat/completions", chatStreamReq, chatReq
		if engine == EngineOllama {
			path = "/api/chat"
			stream = chatReq // Ollama streams by default
			plain = `{"model":"qwen3-8b","stream":false,"messages":[{"role":"user","content":"hello"}]}`
		}
		// a stream is cut mid-way: the body ends early
		resp, err := client.Post(url+path, "application/json", strings.NewReader(stream))
		if err == nil {
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil {
				t.Errorf("%s: dropped stream read cleanly: %q", engine, body)
			}
			if strings.Contains(string(body), "[DONE]") || strings.Contains(string(body), `"done":true`) {
				t.Errorf("%s: dropped stream finished: %q", engine, body)
			}
		}
		// a non-streaming request gets no response at all
		if _, err := client.Post(url+path, "application/json", strings.NewReader(plain)); err == nil {
			t.Errorf("%s: dropped request answered", engine)
		}
		waitFor(t, "streams to end", 5*time.Second, func() bool { return s.Stats().ActiveStreams == 0 })
		if st := s.Stats(); st.Drops < 2 || st.Running != 0 {
			t.Errorf("%s: stats %+v", engine, st)
		}
	}
}

func TestConcurrencyLimitQueues(t *testing.T) {
	// A long request holds the only slot; two short ones queue behind it.
	const ttft = 20 * time.Millisecond
	s, url := startServer(t, Config{MaxConcurrent: 1, TTFT: ttft, TPS: 100, Tokens: 100})
	short := `{"model":"qwen3-8b","max_tokens":1,"messages":[{"role":"user","content":"hello"}]}`
	start := time.Now()
	var wg sync.WaitGroup
	ends := make([]time.Duration, 3)
	send := func(i int, body string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("request %d: status %d", i, resp.StatusCode)
			}
			ends[i] = time.Since(start)
		}()
	}
	send(0, chatReq)
	waitFor(t, "the long request to run", 5*time.Second, func() bool { return s.Stats().Running == 1 })
	send(1, short)
	send(2, short)
	waitFor(t, "1 running, 2 waiting", 5*time.Second, func() bool {
		st := s.Stats()
		return st.Running == 1 && st.Waiting == 2
	})
	_, _, body := get(t, url+"/metrics")
	if !strings.Contains(string(body), `vllm:num_requests_waiting{model_name="qwen3-8b",engine="0"} 2.0`) ||
		!strings.Contains(string(body), `vllm:num_requests_running{model_name="qwen3-8b",engine="0"} 1.0`) {
		t.Errorf("metrics do not show the queue:\n%s", body)
	}
	wg.Wait()
	long := ttft + 99*10*time.Millisecond
	for i := 1; i < 3; i++ {
		if ends[i] < long {
			t.Errorf("queued request %d done after %v, before the long one could end (%v)", i, ends[i], long)
		}
	}
	if st := s.Stats(); st.Running != 0 || st.Waiting != 0 || st.Completed != 3 {
		t.Errorf("stats = %+v", st)
	}
}

func TestQueuedClientDisconnectFreesQueue(t *testing.T) {
	s, url := startServer(t, Config{MaxConcurrent: 1, TTFT: 400 * time.Millisecond})
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() { // holds the slot
		defer wg.Done()
		if resp, err := client.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(chatReq)); err == nil {
			resp.Body.Close()
		}
	}()
	waitFor(t, "slot taken", 5*time.Second, func() bool { return s.Stats().Running == 1 })
	// Queue a second request, then leave once the server shows it waiting
	// (not after a fixed time, which races with a loaded machine).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	queued := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/chat/completions", strings.NewReader(chatReq))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		queued <- err
	}()
	waitFor(t, "request queued", 5*time.Second, func() bool { return s.Stats().Waiting == 1 })
	cancel()
	if err := <-queued; err == nil {
		t.Fatal("queued request answered early")
	}
	waitFor(t, "queue to empty and the request cancelled", 5*time.Second, func() bool {
		st := s.Stats()
		return st.Waiting == 0 && st.Cancelled == 1
	})
}

func TestClientDisconnectStopsStream(t *testing.T) {
	for _, engine := range []string{EngineVLLM, EngineOllama} {
		for _, phase := range []string{"decode", "prefill"} {
			cfg := Config{Engine: engine, TPS: 200, Tokens: 100000}
			if phase == "prefill" {
				cfg.TTFT = 10 * time.Second
			}
			s, url := startServer(t, cfg)
			path := "/v1/chat/completions"
			if engine == EngineOllama {
				path = "/api/chat"
			}
			conn, br := rawRequest(t, url, path, chatStreamReq)
			if phase == "decode" {
				// read the headers and a few chunks
				for range 12 {
					if _, err := br.ReadString('\n'); err != nil {
						t.Fatal(err)
					}
				}
			} else {
				waitFor(t, "request running", 5*time.Second, func() bool { return s.Stats().Running == 1 })
			}
			conn.Close()
			waitFor(t, engine+" "+phase+": stream to stop", 5*time.Second, func() bool {
				st := s.Stats()
				return st.ActiveStreams == 0 && st.Running == 0
			})
			st := s.Stats()
			if st.Cancelled != 1 || st.CompletionTokens > 1000 {
				t.Errorf("%s %s: stats %+v", engine, phase, st)
			}
		}
	}
}

func TestClientDisconnectNonStream(t *testing.T) {
	s, url := startServer(t, Config{TTFT: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/chat/completions", strings.NewReader(chatReq))
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("answered before TTFT")
	}
	waitFor(t, "request to be cancelled", 5*time.Second, func() bool {
		st := s.Stats()
		return st.Running == 0 && st.Cancelled == 1
	})
}

func TestPacing(t *testing.T) {
	const ttft, tps, tokens = 100 * time.Millisecond, 50.0, 10
	_, url := startServer(t, Config{TTFT: ttft, TPS: tps, Tokens: tokens})
	conn, br := rawRequest(t, url, "/v1/chat/completions", chatStreamReq)
	defer conn.Close()
	start := time.Now()
	var first, last time.Duration
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, `"content":"`) && !strings.Contains(line, `"role"`) && first == 0 {
			first = time.Since(start)
		}
		if strings.HasPrefix(line, "data: [DONE]") {
			last = time.Since(start)
			break
		}
	}
	gen := time.Duration(float64(tokens-1) / tps * float64(time.Second))
	if first < ttft-5*time.Millisecond || first > ttft+time.Second {
		t.Errorf("first token after %v, want ~%v", first, ttft)
	}
	if last < ttft+gen-5*time.Millisecond || last > ttft+gen+time.Second {
		t.Errorf("stream took %v, want ~%v", last, ttft+gen)
	}

	// non-streaming answers when the last token is due
	start = time.Now()
	post(t, url+"/v1/chat/completions", chatReq)
	if d := time.Since(start); d < ttft+gen-5*time.Millisecond {
		t.Errorf("non-stream took %v, want >= %v", d, ttft+gen)
	}
}

// TestKeepAliveAfterWatch checks that watching a connection for disconnects
// does not disturb the next request on it.
func TestKeepAliveAfterWatch(t *testing.T) {
	for _, engine := range []string{EngineVLLM, EngineOllama} {
		s, url := startServer(t, Config{Engine: engine, TTFT: time.Millisecond, TPS: 5000, Tokens: 5})
		path, stream := "/v1/chat/completions", chatStreamReq
		if engine == EngineOllama {
			path, stream = "/api/chat", chatReq
		}
		tr := &http.Transport{MaxConnsPerHost: 1}
		c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
		for i := range 10 {
			body := stream
			if i%2 == 0 {
				body = strings.Replace(strings.Replace(stream, `"stream":true,`, ``, 1), `{"model"`, `{"stream":false,"model"`, 1)
			}
			resp, err := c.Post(url+path, "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatalf("%s request %d: %v", engine, i, err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("%s request %d: %d %v %s", engine, i, resp.StatusCode, err, b)
			}
		}
		tr.CloseIdleConnections()
		if st := s.Stats(); st.Completed != 10 || st.Cancelled != 0 {
			t.Errorf("%s: stats %+v", engine, st)
		}
	}
}

func TestCloseAbortsStreams(t *testing.T) {
	s, url := startServer(t, Config{TPS: 10, Tokens: 100000})
	conn, br := rawRequest(t, url, "/v1/chat/completions", chatStreamReq)
	defer conn.Close()
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s.Close()
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %v", d)
	}
	waitFor(t, "stream to end", 5*time.Second, func() bool { return s.Stats().ActiveStreams == 0 })
}

func TestShutdownLetsStreamsFinish(t *testing.T) {
	s, url := startServer(t, Config{TPS: 100, Tokens: 20})
	resp, err := client.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(chatStreamReq))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		errc <- s.Shutdown(ctx)
	}()
	body, err := io.ReadAll(resp.Body)
	if err != nil || !strings.HasSuffix(string(body), "data: [DONE]\n\n") {
		t.Errorf("stream cut by graceful shutdown: %v %q", err, body)
	}
	if err := <-errc; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}
