package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
)

// shapedAnswers reads mindrouter_response_shaped_total.
func shapedAnswers(t *testing.T, e *env) int {
	t.Helper()
	resp, err := http.Get(e.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "mindrouter_response_shaped_total "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no mindrouter_response_shaped_total in /metrics")
	return 0
}

// Non-streamed chats on vLLM through the bundle: the first answer's call
// leaves a response shape (ABI 2.11), and the host translates the next
// answers of the same form with it, without a call; the client gets the
// same text and usage, each answer with its own id. The separate modules
// leave none.
func TestResponseShape_Answers(t *testing.T) {
	t.Parallel()
	for _, ps := range pluginSets(t) {
		e := startEnvPlugins(t, context.Background(), ps.set, fakellm.Config{Tokens: 30}, fakellm.Config{Tokens: 30}, "")
		before := shapedAnswers(t, e)
		ids := map[string]bool{}
		var content string
		var usage int64
		const n = 4
		for i := range n {
			resp, err := e.client.Chat.Completions.New(context.Background(), chatParams(vllmModel, "Tell me about gateways"))
			if err != nil {
				t.Fatalf("%s: %v", ps.name, err)
			}
			if ids[resp.ID] || !strings.HasPrefix(resp.ID, "chatcmpl-") {
				t.Fatalf("%s: id %q (seen %v)", ps.name, resp.ID, ids)
			}
			ids[resp.ID] = true
			c := resp.Choices[0].Message.Content
			if i == 0 {
				content, usage = c, resp.Usage.TotalTokens
			}
			if c != content || c == "" || resp.Usage.TotalTokens != usage || usage != resp.Usage.PromptTokens+resp.Usage.CompletionTokens ||
				resp.Model != vllmModel || resp.Choices[0].FinishReason != "stop" {
				t.Fatalf("%s: answer %d: %q usage %+v model %q finish %q; the first %q usage %d", ps.name, i, c, resp.Usage, resp.Model,
					resp.Choices[0].FinishReason, content, usage)
			}
		}
		shaped, want := shapedAnswers(t, e)-before, 0
		if ps.fused {
			want = n - 1
		}
		if shaped != want {
			t.Fatalf("%s: %d answers by a response shape, want %d", ps.name, shaped, want)
		}
		t.Logf("%s: %d of %d answers by the shape", ps.name, shaped, n)
	}
}

// After a response shape is kept, answers of other forms still go to the
// plugin (a think tag, tool calls, cached tokens, another finish reason,
// an escape jsonw would not write), and answers of the kept form with
// other contents and counts come out as the plugin writes them.
func TestResponseShape_OtherAnswers(t *testing.T) {
	t.Parallel()
	const model = "answer-model"
	_, fkURL := startFake(t, fakellm.Config{Engine: "vllm", Models: []string{model}})
	target, err := url.Parse(fkURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target) // discovery and probes: fakellm's
	body := func(content, finish, usage string) string {
		return `{"id":"chatcmpl-b","object":"chat.completion","created":1733000123,"model":"` + model +
			`","choices":[{"index":0,"message":{"role":"assistant","content":` + content +
			`,"tool_calls":[],"reasoning_content":null},"logprobs":null,"finish_reason":"` + finish + `","stop_reason":null}],"usage":` + usage + `}`
	}
	u := func(p, c int, details string) string {
		return fmt.Sprintf(`{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d,"prompt_tokens_details":%s}`, p, p+c, c, details)
	}
	type answer struct {
		backend        string
		content        string // what the client reads
		prompt, cached int64
		finish         string
		shaped         bool
	}
	answers := []answer{
		{body(`"Hello"`, "stop", u(5, 1, "null")), "Hello", 5, 0, "stop", false}, // leaves the shape
		{body(`"Hi \"there\"\n\tok é😀"`, "stop", u(12, 7, "null")), "Hi \"there\"\n\tok é😀", 12, 0, "stop", true},
		{body(`"<think>hmm</think>The answer"`, "stop", u(5, 9, "null")), "The answer", 5, 0, "stop", false},
		{body(`"cached"`, "stop", u(40, 1, `{"cached_tokens":32}`)), "cached", 40, 32, "stop", false},
		{body(`"cut off"`, "length", u(5, 2, "null")), "cut off", 5, 0, "length", false},
		{body(`"\u00e9t\u00e9"`, "length", u(5, 2, "null")), "été", 5, 0, "length", false},
		{body(`"long again"`, "length", u(6, 2, "null")), "long again", 6, 0, "length", true}, // the shape "cut off" left
		{body(`"Bye"`, "stop", u(3, 1, "null")), "Bye", 3, 0, "stop", false}, // "stop" again: the shape "length" replaced it
		{body(`"Bye again"`, "stop", u(3, 2, "null")), "Bye again", 3, 0, "stop", true},
	}
	var next atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			proxy.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answers[int(next.Add(1)-1)%len(answers)].backend)
	}))
	t.Cleanup(srv.Close)
	ps, err := testutil.BuildBundle()
	if err != nil {
		t.Fatal(err)
	}
	e := startEnvPlugins(t, context.Background(), ps, fakellm.Config{}, fakellm.Config{},
		fmt.Sprintf("  - {name: answers, engine: vllm, url: %q, models: [%s]}\n", srv.URL, model))
	for i, a := range answers {
		before := shapedAnswers(t, e)
		resp, err := e.client.Chat.Completions.New(context.Background(), chatParams(model, "hi"))
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		c := resp.Choices[0]
		if c.Message.Content != a.content || c.FinishReason != a.finish || resp.Usage.PromptTokens != a.prompt ||
			resp.Usage.PromptTokensDetails.CachedTokens != a.cached {
			t.Fatalf("answer %d: %q finish %q usage %+v; want %q %q prompt %d cached %d", i, c.Message.Content, c.FinishReason,
				resp.Usage, a.content, a.finish, a.prompt, a.cached)
		}
		if shaped := shapedAnswers(t, e) - before; shaped != map[bool]int{true: 1}[a.shaped] {
			t.Fatalf("answer %d (%q): %d by the shape, want shaped %v", i, a.content, shaped, a.shaped)
		}
	}
}
