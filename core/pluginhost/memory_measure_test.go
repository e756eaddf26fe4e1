//go:build measure

// The measurements behind DefaultMemoryMB, DefaultMaxPayloadMB and
// MemoryPerPayloadMB (minutes of guest time; not part of the test suite):
//
//	go test -tags measure -run TestMeasureGuestMemory -v ./core/pluginhost
//	    MEASURE_MB=16         input size in MiB (default 16)
//	    MEASURE_SET=capped    the densest bodies within max_json_values 1<<20
//	    MEASURE_SHAPE=string  only shapes whose name contains it
//	    MEASURE_MAXMB, MEASURE_LO  the memory_mb search range
//	    MEASURE_NOSEARCH=1    only the growth under MEASURE_MAXMB
//	MEASURE_MEMMB=64 go test -tags measure -run TestMeasureIdleRSS -v ./core/pluginhost
//	    MEASURE_RECYCLE=4096  pool.recycle_mb (default 48)

package pluginhost

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mindrouter/mindrouter/sdk/abi"
)

// TestMeasureGuestMemory finds, per first-party plugin op and input shape,
// the smallest memory_mb at which one call succeeds (binary search to
// 8 MiB) and the linear memory the instance grows to under MEASURE_MAXMB.
// Each openai request_decode output also feeds vllm request_encode.
func TestMeasureGuestMemory(t *testing.T) {
	set := firstParty(t)
	size := 16 << 20
	if e := os.Getenv("MEASURE_MB"); e != "" {
		n, _ := strconv.Atoi(e)
		size = n << 20
	}
	shapes := append(openaiShapes(size), vllmResponseShapes(size)...)
	if os.Getenv("MEASURE_SET") == "capped" {
		shapes = valueCappedShapes()
	}
	if e := os.Getenv("MEASURE_SHAPE"); e != "" {
		var keep []shape
		for _, s := range shapes {
			if strings.Contains(s.name, e) {
				keep = append(keep, s)
			}
		}
		shapes = keep
	}
	maxMB := 4000
	if e := os.Getenv("MEASURE_MAXMB"); e != "" {
		maxMB, _ = strconv.Atoi(e)
	}
	var last []byte
	try := func(name, kind string, op abi.Op, payload []byte, mb int) (ok bool, mem uint32, outLen int, err error, dur time.Duration) {
		pc := PluginConfig{Name: name, Kind: kindOf(kind), Path: set.wasm(name), Mode: ModeTrusted,
			Limits: Limits{MemoryMB: mb, MaxPayloadMB: 64, CallTimeoutMS: 100000},
			Pool:   PoolConfig{Min: 1, Max: 1}}
		cfg := &Config{ABI: abi.VersionMajor, CacheDir: set.cache, Plugins: []PluginConfig{pc}}
		h, e := New(context.Background(), cfg, "", nil)
		if e != nil {
			t.Fatal(e)
		}
		defer h.Close(context.Background())
		v := h.Plugin(name).Pin()
		defer v.Release()
		in, e := v.pool.get(context.Background())
		if e != nil {
			t.Fatal(e)
		}
		var out Result
		start := time.Now()
		_, err = in.do(context.Background(), op, &CallInput{Payload: payload}, &out)
		dur = time.Since(start)
		mem = in.memBytes()
		v.pool.put(in, true)
		last = append(last[:0], out.Payload...)
		return err == nil, mem, len(out.Payload), err, dur
	}
	for i := 0; i < len(shapes); i++ {
		s := shapes[i]
		t.Logf("trying %s %s %s (%d B)", s.plugin, s.op, s.name, len(s.payload))
		ok, mem, outLen, err, dur := try(s.plugin, s.kind, s.op, s.payload, maxMB)
		if ok && s.op == abi.OpRequestDecode {
			shapes = append(shapes, shape{"vllm", "adapter", abi.OpRequestEncode, s.name, append([]byte(nil), last...)})
		}
		if !ok {
			t.Logf("%-8s %-16s %-14s in %8d B: fails even at the max: %.300v", s.plugin, s.op, s.name, len(s.payload), err)
			continue
		}
		if os.Getenv("MEASURE_NOSEARCH") != "" {
			t.Logf("%-8s %-16s %-14s in %8d B out %8d B: grows to %4d MiB with the max cap (%v)",
				s.plugin, s.op, s.name, len(s.payload), outLen, mem>>20, dur.Round(time.Millisecond))
			continue
		}
		lo, hi := 8, maxMB
		if e := os.Getenv("MEASURE_LO"); e != "" {
			lo, _ = strconv.Atoi(e)
		} // lo fails (assumed), hi succeeds
		for hi-lo > 8 {
			mid := (lo + hi) / 2
			ok, _, _, _, d := try(s.plugin, s.kind, s.op, s.payload, mid)
			t.Logf("  memory_mb %d: %v (%v)", mid, ok, d.Round(time.Millisecond))
			if ok {
				hi = mid
			} else {
				lo = mid
			}
		}
		t.Logf("%-8s %-16s %-14s in %8d B out %8d B: min memory_mb %4d; grows to %4d MiB with the max cap (%v)",
			s.plugin, s.op, s.name, len(s.payload), outLen, hi, mem>>20, dur.Round(time.Millisecond))
	}
}

// TestMeasureIdleRSS reports the process RSS with 3 warm instances of each
// first-party plugin under memory_mb MEASURE_MEMMB (run once per value, in
// separate processes), then after one 15 MB call and its recycling.
func TestMeasureIdleRSS(t *testing.T) {
	set := firstParty(t)
	mb, _ := strconv.Atoi(os.Getenv("MEASURE_MEMMB"))
	if mb == 0 {
		mb = DefaultMemoryMB
	}
	rss := func() int {
		runtime.GC()
		debug.FreeOSMemory()
		b, _ := os.ReadFile("/proc/self/status")
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "VmRSS:") {
				n, _ := strconv.Atoi(strings.Fields(l)[1])
				return n >> 10
			}
		}
		return 0
	}
	recycle, _ := strconv.Atoi(os.Getenv("MEASURE_RECYCLE"))
	before := rss()
	cfg := &Config{ABI: abi.VersionMajor, CacheDir: set.cache}
	for _, p := range []struct{ name, kind string }{{"openai", "translator"}, {"vllm", "adapter"}, {"ollama", "adapter"}} {
		cfg.Plugins = append(cfg.Plugins, PluginConfig{Name: p.name, Kind: kindOf(p.kind), Path: set.wasm(p.name), Mode: ModeTrusted,
			Limits: Limits{MemoryMB: mb, MaxPayloadMB: max(mb/MemoryPerPayloadMB, 1)}, Pool: PoolConfig{Min: 3, Max: 3, RecycleMB: recycle}})
	}
	h, err := New(context.Background(), cfg, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	for _, p := range h.Plugins() {
		v := p.Pin()
		for v.Stats().Idle < 3 {
			time.Sleep(10 * time.Millisecond)
		}
		v.Release()
	}
	time.Sleep(200 * time.Millisecond)
	idle := rss()
	t.Logf("memory_mb %d: RSS %d MiB before New, %d MiB with 9 idle instances (+%d MiB)", mb, before, idle, idle-before)
	if mb >= 128 {
		body := fill(`{"model":"m","messages":[{"role":"user","content":"`, 'a', `"}]}`, 1<<20*min(15, mb/MemoryPerPayloadMB))
		var out Result
		if err := h.Plugin("openai").Call(context.Background(), abi.OpRequestDecode, CallInput{Payload: body}, &out); err != nil {
			t.Fatal(err)
		}
		out = Result{}
		v := h.Plugin("openai").Pin()
		for v.pool.pending.Load() > 0 || v.Stats().Idle < 3 {
			time.Sleep(10 * time.Millisecond)
		}
		v.Release()
		time.Sleep(200 * time.Millisecond)
		t.Logf("after a %d B call (instance recycled: %d discarded): RSS %d MiB", len(body), h.Plugin("openai").metrics.discarded.Load(), rss())
	}
}

// shape is one maximal input of a first-party plugin op.
type shape struct {
	plugin, kind string
	op           abi.Op
	name         string
	payload      []byte
}

// openaiShapes are chat bodies of exactly n bytes.
func openaiShapes(n int) []shape {
	s := func(name string, p []byte) shape {
		return shape{"openai", "translator", abi.OpRequestDecode, name, p}
	}
	return []shape{
		s("many-messages", pad(`{"model":"m","messages":[`, `{"role":"user","content":"x"}`, ",", `]}`, n)),
		s("brief-messages", pad(`{"model":"m","messages":[`, `{"role":"user","content":"a short message of about forty-five bytes"}`, ",", `]}`, n)),
		s("ignored-numbers", pad(`{"model":"m","messages":[{"role":"user","content":"x"}],"x":[`, `0`, ",", `]}`, n)),
		s("many-parts", pad(`{"model":"m","messages":[{"role":"user","content":[`, `{"type":"text","text":"x"}`, ",", `]}]}`, n)),
		s("many-images", pad(`{"model":"m","messages":[{"role":"user","content":[`, `{"type":"image_url","image_url":{"url":"data:a/b;base64,AA=="}}`, ",", `]}]}`, n)),
		s("huge-string", fill(`{"model":"m","messages":[{"role":"user","content":"`, 'a', `"}]}`, n)),
		s("huge-image", fill(`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,`, 'A', `"}}]}]}`, n)),
		s("many-stops", pad(`{"model":"m","messages":[{"role":"user","content":"x"}],"stop":[`, `"x"`, ",", `]}`, n)),
	}
}

// vllmResponseShapes are vLLM chat.completion bodies of exactly n bytes.
func vllmResponseShapes(n int) []shape {
	s := func(name string, p []byte) shape {
		return shape{"vllm", "adapter", abi.OpResponseDecode, name, p}
	}
	return []shape{
		s("huge-content", fill(`{"id":"r","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"`, 'a', `"},"finish_reason":"stop"}]}`, n)),
		s("many-choices", pad(`{"id":"r","model":"m","choices":[`, `{"message":{"content":"x"}}`, ",", `]}`, n)),
		s("many-toolcalls", pad(`{"id":"r","model":"m","choices":[{"message":{"tool_calls":[`, `{"function":{"name":"f","arguments":"{}"}}`, ",", `]}}]}`, n)),
		s("big-ignored", pad(`{"id":"r","model":"m","choices":[],"prompt_logprobs":[`, `0`, ",", `]}`, n)),
	}
}

// repeatJSON is prefix + n copies of item joined by commas + suffix.
func repeatJSON(prefix, item, suffix string, n int) []byte {
	b := make([]byte, 0, len(prefix)+n*(len(item)+1)+len(suffix))
	b = append(b, prefix...)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, item...)
	}
	return append(b, suffix...)
}

// valueCappedShapes are the densest chat bodies within the gateway's
// default limits.max_json_values (1<<20 values per body).
func valueCappedShapes() []shape {
	const values = 1 << 20
	s := func(name string, p []byte) shape {
		return shape{"openai", "translator", abi.OpRequestDecode, name, p}
	}
	return []shape{
		// A message object and its two strings are 3 values.
		s("capped-messages", repeatJSON(`{"model":"m","messages":[`, `{"role":"user","content":"x"}`, `]}`, values/3-2)),
		s("capped-stops", repeatJSON(`{"model":"m","messages":[{"role":"user","content":"x"}],"stop":[`, `"x"`, `]}`, values-8)),
		s("capped-ignored", repeatJSON(`{"model":"m","messages":[{"role":"user","content":"x"}],"x":[`, `0`, `]}`, values-8)),
	}
}
