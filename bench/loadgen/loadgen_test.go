package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

func TestStreamReader_SSE(t *testing.T) {
	body := "data: {\"a\":1}\n\n: comment\ndata: {\"a\":2}\r\n\r\ndata: [DONE]\n\n"
	sr := newStreamReader(0, true)
	// One byte per read: every line is split across reads.
	st, err := sr.read(iotest.OneByteReader(strings.NewReader(body)), time.Now(), false)
	if err != nil || st.chunks != 2 || !st.complete || len(sr.gaps) != 1 {
		t.Fatalf("got %+v, %d gaps, err %v; want 2 chunks, complete, 1 gap", st, len(sr.gaps), err)
	}
	_, err = sr.read(strings.NewReader("data: {}\n\n"), time.Now(), false)
	if err != errTruncated {
		t.Fatalf("stream without [DONE]: err %v, want errTruncated", err)
	}
}

func TestStreamReader_NDJSON(t *testing.T) {
	body := "{\"done\":false}\n\n{\"done\":false}\n{\"done\":true,\"x\":1}\n"
	st, err := newStreamReader(0, false).read(strings.NewReader(body), time.Now(), true)
	if err != nil || st.chunks != 3 || !st.complete {
		t.Fatalf("got %+v, err %v; want 3 chunks, complete", st, err)
	}
}

func TestDist(t *testing.T) {
	var s []time.Duration
	for i := 1000; i >= 1; i-- {
		s = append(s, time.Duration(i)*time.Microsecond)
	}
	d := dist(s)
	if d.P50 != 500 || d.P99 != 990 || d.P999 != 999 || d.Max != 1000 || d.N != 1000 {
		t.Fatalf("dist = %+v", d)
	}
}

func startFake(t *testing.T, cfg fakellm.Config) string {
	t.Helper()
	cfg.Models = []string{"m"}
	srv, addr, err := fakellm.Start(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return strings.TrimSuffix(addr, "/") + "/v1/chat/completions"
}

func TestRunLoad_AgainstFakeLLM(t *testing.T) {
	url := startFake(t, fakellm.Config{Engine: fakellm.EngineVLLM, Tokens: 5})
	for _, stream := range []bool{false, true} {
		body, _, _ := buildBody("", "m", "hi", 0, stream)
		tg, err := newTarget(url, "", body, stream, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		r, err := runLoad(tg, loadOpts{concurrency: 2, warmup: 50 * time.Millisecond, duration: 5 * time.Second,
			requests: 50, pids: []int{os.Getpid()}, clk: 100})
		if err != nil {
			t.Fatal(err)
		}
		if r.Count != 50 || r.OK != 50 || len(r.Errors) != 0 || r.Latency.N != 50 || r.Proc == nil {
			t.Fatalf("stream=%v: %+v", stream, r)
		}
		if stream && (r.TTFT == nil || r.Chunks.Min < 5) {
			t.Fatalf("stream: ttft %+v chunks %+v", r.TTFT, r.Chunks)
		}
	}
}

func TestRunHold_CountsStalls(t *testing.T) {
	url := startFake(t, fakellm.Config{Engine: fakellm.EngineVLLM, Tokens: 4, TPS: 10})
	body, _, _ := buildBody("", "m", "hi", 0, true)
	tg, _ := newTarget(url, "", body, true, 5*time.Second)
	// Expecting 1ms between chunks makes every 100ms token gap a stall. On
	// a loaded machine fakellm's late timer can write several tokens at
	// once (gaps of 0), so the test asks for stalls in most streams, not
	// in every gap; with no stall counting at all it sees none.
	r, err := runHold(tg, holdOpts{streams: 20, expectInterval: time.Millisecond, stallFactor: 5, pids: []int{os.Getpid()}, clk: 100})
	if err != nil {
		t.Fatal(err)
	}
	h := r.Hold
	if r.OK != 20 || h.PeakActive < 1 || h.Stalls < 10 || h.StalledStreams < 10 || h.Stalls < h.StalledStreams {
		t.Fatalf("result %+v hold %+v", r, h)
	}
	summary(io.Discard, r)
}

func TestCheckLoopback(t *testing.T) {
	for url, ok := range map[string]bool{
		"http://127.0.0.1:1/x": true, "http://localhost:1/": true, "http://[::1]:1/": true,
		"http://10.0.0.1:1/": false, "http://example.com/": false,
	} {
		if err := checkLoopback(url, false); (err == nil) != ok {
			t.Errorf("%s: err %v", url, err)
		}
	}
}

func TestParsePids(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
		bad  bool
	}{{"", nil, false}, {"0", nil, false}, {"12", []int{12}, false}, {"12, 34", []int{12, 34}, false},
		{"x", nil, true}, {"1,-2", nil, true}, {"1,", nil, true}} {
		got, err := parsePids(c.in)
		if (err != nil) != c.bad || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("parsePids(%q) = %v, %v; want %v (error %v)", c.in, got, err, c.want, c.bad)
		}
	}
	self := os.Getpid()
	one, err := readProcs([]int{self})
	if err != nil {
		t.Fatal(err)
	}
	two, err := readProcs([]int{self, self})
	if err != nil {
		t.Fatal(err)
	}
	if two.rssKiB < one.rssKiB || two.cpuTicks < one.cpuTicks {
		t.Errorf("readProcs of the same pid twice: %+v, once: %+v", two, one)
	}
}
