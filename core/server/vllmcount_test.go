package server

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

func TestAppendTokenizeBody(t *testing.T) {
	for _, tc := range []struct {
		name, chat, want, err string
	}{{
		name: "plain chat: sampling and stream fields dropped, generation prompt added",
		chat: `{"model":"qwen3-8b","messages":[{"role":"user","content":"hi"}],"stream":true,"max_tokens":9,"temperature":0.2}`,
		want: `{"model":"qwen3-8b","messages":[{"role":"user","content":"hi"}],"add_generation_prompt":true}`,
	}, {
		name: "tools and template arguments kept",
		chat: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],` +
			`"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"tool_choice":"auto",` +
			`"chat_template_kwargs":{"enable_thinking":false}}`,
		want: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],` +
			`"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],` +
			`"chat_template_kwargs":{"enable_thinking":false},"add_generation_prompt":true}`,
	}, {
		name: "a prefilled assistant turn: no generation prompt added (vLLM refuses both)",
		chat: `{"model":"m","messages":[{"role":"assistant","content":"Sure"}],"continue_final_message":true,"add_generation_prompt":false}`,
		want: `{"model":"m","messages":[{"role":"assistant","content":"Sure"}],"continue_final_message":true,"add_generation_prompt":false}`,
	}, {
		name: "the adapter's own add_generation_prompt stands",
		chat: `{"model":"m","messages":[],"add_generation_prompt":false,"tools":null}`,
		want: `{"model":"m","messages":[],"add_generation_prompt":false}`,
	}, {
		name: "not a chat body", chat: `{"model":"m","prompt":"x"}`, err: "no model or messages",
	}, {
		name: "no model", chat: `{"messages":[]}`, err: "no model or messages",
	}, {
		name: "not JSON", chat: `{"model":`, err: "parse the adapter's chat body",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := appendTokenizeBody(nil, []byte(tc.chat))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %s, %v\nwant %s", got, err, tc.want)
			}
			if !json.Valid(got) {
				t.Fatalf("invalid JSON %s", got)
			}
		})
	}
}

func TestParseTokenizeResponse(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		count, max int
		err        bool
		noCount    bool
	}{
		// vLLM's TokenizeResponse (vllm/entrypoints/serve/tokenize/protocol.py).
		{name: "vLLM", body: `{"count":3,"max_model_len":32768,"tokens":[151644,872,198],"token_strs":null}`, count: 3, max: 32768},
		{name: "no max_model_len", body: `{"count":0,"tokens":[]}`, count: 0},
		{name: "an error body", body: `{"object":"error","message":"x","code":400}`, err: true, noCount: true},
		{name: "negative", body: `{"count":-1}`, err: true, noCount: true},
		{name: "not a number", body: `{"count":"3"}`, err: true, noCount: true},
		{name: "HTML", body: `<html>404</html>`, err: true, noCount: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, m, err := parseTokenizeResponse([]byte(tc.body))
			if tc.err {
				if err == nil || errors.Is(err, errNoCount) != tc.noCount {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil || n != tc.count || m != tc.max {
				t.Fatalf("got %d %d %v", n, m, err)
			}
		})
	}
}

func memoKey(i int) countKey {
	return countKey{backend: "b", model: "m", sum: sha256.Sum256([]byte(strconv.Itoa(i)))}
}

func TestCountMemo_Bounded(t *testing.T) {
	m := newCountMemo(4)
	for i := range 4 {
		m.put(memoKey(i), vllmCount{count: i})
	}
	// Entry 0 is hit: the next insertion evicts 1, the oldest not hit.
	if v, ok := m.get(memoKey(0)); !ok || v.count != 0 {
		t.Fatalf("get 0 = %v %v", v, ok)
	}
	m.put(memoKey(4), vllmCount{count: 4})
	if _, ok := m.get(memoKey(1)); ok {
		t.Error("1 survived, though it was the oldest not hit")
	}
	for _, i := range []int{0, 2, 3, 4} {
		if v, ok := m.get(memoKey(i)); !ok || v.count != i {
			t.Errorf("get %d = %v %v", i, v, ok)
		}
	}
	// Everything hit: one lap clears the bits, then the hand evicts.
	for i := 5; i < 50; i++ {
		m.put(memoKey(i), vllmCount{count: i})
	}
	if n := m.len(); n != 4 {
		t.Errorf("len = %d, want the bound 4", n)
	}
	if v, ok := m.get(memoKey(49)); !ok || v.count != 49 {
		t.Errorf("the newest entry: %v %v", v, ok)
	}
	// A key differs by backend or model as by body.
	k := memoKey(49)
	k.backend = "other"
	if _, ok := m.get(k); ok {
		t.Error("another backend's count was found")
	}
	m.put(memoKey(49), vllmCount{count: 7})
	if v, _ := m.get(memoKey(49)); v.count != 7 {
		t.Errorf("update: %v", v)
	}
}

func TestCountMemo_Concurrent(t *testing.T) {
	m := newCountMemo(64)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				k := memoKey((g*31 + i) % 200)
				if v, ok := m.get(k); ok && v.count != (g*31+i)%200 {
					t.Errorf("key %d holds %d", (g*31+i)%200, v.count)
					return
				}
				m.put(k, vllmCount{count: (g*31 + i) % 200})
			}
		}()
	}
	wg.Wait()
	if n := m.len(); n != 64 {
		t.Errorf("len = %d, want 64", n)
	}
}

func TestBackendWide(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"no route", tokenizeStatus(404), true},
		{"method not allowed", tokenizeStatus(405), true},
		{"not implemented", tokenizeStatus(501), true},
		{"this request's messages refused", tokenizeStatus(400), false},
		{"a server error", tokenizeStatus(500), false},
		{"no count", errNoCount, false},
		{"timeout", fasthttp.ErrTimeout, true},
		{"refused", errors.New("dial tcp: connection refused"), true},
	} {
		if got := backendWide(tc.err); got != tc.want {
			t.Errorf("%s: backendWide(%v) = %v", tc.name, tc.err, got)
		}
	}
}

func TestCountMemo_BackOff(t *testing.T) {
	m := newCountMemo(4)
	now := time.Now()
	if !m.usable("b", now) {
		t.Fatal("a fresh backend is not usable")
	}
	m.backOff("b", now.Add(time.Minute))
	if m.usable("b", now.Add(59*time.Second)) || !m.usable("other", now) {
		t.Error("the back-off does not hold, or holds for another backend")
	}
	if !m.usable("b", now.Add(time.Minute)) || len(m.until) != 0 {
		t.Errorf("after the back-off: still off, or %d entries kept", len(m.until))
	}
}
