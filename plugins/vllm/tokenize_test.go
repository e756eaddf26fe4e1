package vllm

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/sdktest"
)

func TestManifest_CountsTokens(t *testing.T) {
	if !newPlugin().Manifest().CountsTokens {
		t.Fatal("the vLLM adapter's manifest does not say counts_tokens")
	}
}

func TestEncodeCountRequest(t *testing.T) {
	h := sdktest.New(t, newPlugin())
	for _, tc := range []struct {
		name string
		req  canon.ChatRequest
		want string
	}{{
		name: "plain chat: sampling and stream fields dropped, generation prompt added",
		req: canon.ChatRequest{Model: "qwen3-8b", Messages: []canon.Message{userMsg("hi")}, Stream: true, IncludeUsage: true,
			MaxTokens: 9, Temperature: ptr(0.2), N: 2, Logprobs: true, User: "u", ResponseFormat: &canon.ResponseFormat{Type: canon.FormatJSONObject}},
		want: `{"model":"qwen3-8b","messages":[{"role":"user","content":"hi"}],"add_generation_prompt":true}`,
	}, {
		name: "tools and template arguments kept, tool choice and effort dropped",
		req: canon.ChatRequest{Model: "m", Messages: []canon.Message{{Role: canon.RoleUser, Content: []canon.Part{{Type: canon.PartText, Text: "x"}, {Type: canon.PartImage, URL: "data:image/png;base64,AA=="}}}},
			Tools: []canon.Tool{{Name: "f", Parameters: json.RawMessage(`{}`)}}, ToolChoice: &canon.ToolChoice{Mode: canon.ToolChoiceAuto},
			Think: canon.ThinkLow},
		want: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"x"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]}],` +
			`"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],` +
			`"chat_template_kwargs":{"enable_thinking":true},"add_generation_prompt":true}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.EncodeCountRequest(tc.req)
			if string(r.Payload) != tc.want || r.Meta[abi.MetaPath] != "/tokenize" || r.Meta[abi.MetaMethod] != "POST" ||
				r.Meta[abi.MetaContentType] != "application/json" {
				t.Fatalf("got %s %v\nwant %s", r.Payload, r.Meta, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name string
		req  canon.ChatRequest
		want abi.Status
		msg  string
	}{
		{"no messages", canon.ChatRequest{Model: "m"}, abi.StatusBadInput, "messages: at least one message is required"},
		{"a nameless tool", canon.ChatRequest{Model: "m", Messages: []canon.Message{userMsg("x")}, Tools: []canon.Tool{{}}}, abi.StatusBadInput, "tools[0].name"},
		{"an unknown thinking setting", canon.ChatRequest{Model: "m", Messages: []canon.Message{userMsg("x")}, Think: "max"}, abi.StatusBadInput, "think: unsupported"},
		{"a text completion: counted offline", canon.ChatRequest{Model: "m", Prompt: []string{"x"}}, abi.StatusUnsupported, ""},
		{"an image by URL: fetched first", canon.ChatRequest{Model: "m", Messages: []canon.Message{{Role: canon.RoleUser,
			Content: []canon.Part{{Type: canon.PartImage, URL: "https://example.com/a.png"}}}}}, abi.StatusNeedImages, "https://example.com/a.png"},
	} {
		r := h.Expect(tc.want, abi.OpCountRequestEncode, sdktest.Payload(tc.req.AppendJSON(nil)))
		if !strings.Contains(r.Error, tc.msg) {
			t.Errorf("%s: %q", tc.name, r.Error)
		}
	}
}

// /tokenize sees what /v1/chat/completions will: for every golden chat
// request, the count body is the chat body with only TokenizeChatRequest's
// fields (the gateway's former translation of the chat body, kept here as
// the reference).
func TestEncodeCountRequest_MatchesChat(t *testing.T) {
	h := sdktest.New(t, newPlugin())
	n := 0
	for _, tc := range requestCases {
		if len(tc.req.Prompt) > 0 || len(tc.req.Messages) == 0 || tc.req.Model == "" {
			continue // the reference needs a model; the count body, like the chat body, goes without
		}
		n++
		chat := h.Call(abi.OpRequestEncode, sdktest.Payload(tc.req.AppendJSON(nil)))
		count := h.Call(abi.OpCountRequestEncode, sdktest.Payload(tc.req.AppendJSON(nil)))
		if chat.Status != count.Status {
			t.Errorf("%s: chat %s (%s), count %s (%s)", tc.name, chat.Status, chat.Error, count.Status, count.Error)
			continue
		}
		if chat.Status != abi.StatusOK {
			continue
		}
		want, err := appendTokenizeBody(nil, chat.Payload)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !jsonEqual(t, count.Payload, want) {
			t.Errorf("%s:\ncount %s\nwant  %s", tc.name, count.Payload, want)
		}
	}
	if n < 10 {
		t.Fatalf("only %d golden chat requests", n)
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return fmt.Sprint(x) == fmt.Sprint(y)
}

// tokenizeFields are the TokenizeChatRequest fields appendTokenizeBody
// copies from a chat body; add_generation_prompt defaults to true as in
// vLLM.
var tokenizeFields = [...]string{"messages", "tools", "chat_template", "chat_template_kwargs",
	"continue_final_message", "add_generation_prompt", "mm_processor_kwargs", "media_io_kwargs"}

// appendTokenizeBody writes the /tokenize body for an OpenAI chat body as
// the adapter encoded it: the gateway did this before the count became
// the adapter's (ABI 2.7), and it stays as the reference for the count
// body.
func appendTokenizeBody(dst, chat []byte) ([]byte, error) {
	var p fastjson.Parser
	v, err := p.ParseBytes(chat)
	if err != nil {
		return dst, fmt.Errorf("parse the adapter's chat body: %w", err)
	}
	m := v.Get("model")
	if v.Get("messages") == nil || m == nil || m.Type() != fastjson.TypeString {
		return dst, errors.New("the adapter's chat body has no model or messages")
	}
	dst = m.MarshalTo(append(dst, `{"model":`...))
	genPrompt := false
	for _, k := range tokenizeFields {
		f := v.Get(k)
		if f == nil || f.Type() == fastjson.TypeNull {
			continue
		}
		genPrompt = genPrompt || k == "add_generation_prompt"
		if k == "continue_final_message" && f.Type() == fastjson.TypeTrue {
			genPrompt = true // vLLM refuses both true: the default must not be added
		}
		dst = append(dst, ',', '"')
		dst = append(dst, k...)
		dst = append(dst, '"', ':')
		dst = f.MarshalTo(dst)
	}
	if !genPrompt {
		dst = append(dst, `,"add_generation_prompt":true`...)
	}
	return append(dst, '}'), nil
}

// The reference itself, on chat bodies the adapter does not write too.
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

func TestDecodeCountResponse(t *testing.T) {
	h := sdktest.New(t, newPlugin())
	for _, tc := range []struct {
		name, body string
		count, max int
		bad        bool
	}{
		// vLLM's TokenizeResponse (vllm/entrypoints/serve/tokenize/protocol.py).
		{name: "vLLM", body: `{"count":3,"max_model_len":32768,"tokens":[151644,872,198],"token_strs":null}`, count: 3, max: 32768},
		{name: "no max_model_len", body: `{"count":0,"tokens":[]}`, count: 0},
		{name: "an error body", body: `{"object":"error","message":"x","code":400}`, bad: true},
		{name: "negative", body: `{"count":-1}`, bad: true},
		{name: "not a number", body: `{"count":"3"}`, bad: true},
		{name: "HTML", body: `<html>404</html>`, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.bad {
				r := h.Expect(abi.StatusBadInput, abi.OpCountResponseDecode, sdktest.Payload([]byte(tc.body)))
				if !strings.Contains(r.Error, "no token count") {
					t.Fatalf("error %q", r.Error)
				}
				return
			}
			got := h.DecodeCountResponse([]byte(tc.body))
			if got != (canon.TokenCount{Count: tc.count, MaxModelLen: tc.max}) {
				t.Fatalf("got %+v", got)
			}
		})
	}
}

var _ sdk.TokenCountAdapter = New()
