package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
)

// Context capping near the limit counts with the vLLM backend's own
// /tokenize (fakellm's counts words; a word of nonsense letters is five
// tiktoken tokens, so the two counts differ fivefold): the output cap sent
// to the backend is what vLLM's count leaves, less 4 tokens. The vLLM
// adapter builds the /tokenize request and reads the answer (the count ops,
// ABI 2.7); the gateway sends it. An identical request is counted from the
// memo. Without /tokenize the offline count decides, with its margin;
// Ollama backends (an adapter without the count ops) are never asked.

const (
	ctxWindow  = 1000
	capWords   = 200                // words of the user message
	capPrompt  = capWords + 2 + 2*4 // fakellm: "Be brief." and 4 a message
	exactRoom  = ctxWindow - capPrompt - 4
	nonsenseW  = "xylqvoz " // 5 cl100k tokens, 1 fakellm word
	bigOutput  = 900
	tokenizeAt = "/tokenize"
)

func capRequest(model string) openai.ChatCompletionNewParams {
	p := chatParams(model, strings.Repeat(nonsenseW, capWords))
	p.MaxTokens = openai.Int(bigOutput)
	return p
}

// sentMaxTokens reads max_tokens from the body the backend got.
func sentMaxTokens(t *testing.T, body []byte) int {
	t.Helper()
	var v struct {
		MaxTokens int `json:"max_tokens"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("backend body %s: %v", body, err)
	}
	return v.MaxTokens
}

func TestContextCap_VLLMTokenize(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{MaxModelLen: ctxWindow, Tokens: 5000}, fakellm.Config{}, "")
	ctx := context.Background()

	resp, err := e.client.Chat.Completions.New(ctx, capRequest(vllmModel))
	if err != nil {
		t.Fatalf("near the limit: %v", err)
	}
	if got := sentMaxTokens(t, e.vllm.LastBody(chatPath)); got != exactRoom {
		t.Errorf("max_tokens sent = %d, want %d (window %d − vLLM's count %d − 4)", got, exactRoom, ctxWindow, capPrompt)
	}
	if resp.Usage.PromptTokens != capPrompt || resp.Usage.CompletionTokens != exactRoom || resp.Choices[0].FinishReason != "length" {
		t.Errorf("usage %+v finish %q", resp.Usage, resp.Choices[0].FinishReason)
	}
	if n := e.vllm.Stats().Requests[tokenizeAt]; n != 1 {
		t.Fatalf("/tokenize called %d times, want 1", n)
	}

	// The same request again: the memo answers.
	if _, err := e.client.Chat.Completions.New(ctx, capRequest(vllmModel)); err != nil {
		t.Fatal(err)
	}
	if n := e.vllm.Stats().Requests[tokenizeAt]; n != 1 {
		t.Errorf("/tokenize called %d times after an identical request, want 1 (memoised)", n)
	}
	if got := sentMaxTokens(t, e.vllm.LastBody(chatPath)); got != exactRoom {
		t.Errorf("memoised: max_tokens sent = %d, want %d", got, exactRoom)
	}

	// Far from the limit nothing is counted.
	p := chatParams(vllmModel, "hi")
	p.MaxTokens = openai.Int(7)
	if _, err := e.client.Chat.Completions.New(ctx, p); err != nil {
		t.Fatal(err)
	}
	if n := e.vllm.Stats().Requests[tokenizeAt]; n != 1 {
		t.Errorf("a short request called /tokenize (%d calls)", n)
	}
	// Through the adapter: it built the body both times (the memo is keyed
	// on it) and read the one answer.
	var b strings.Builder
	e.gw.Host.WriteMetrics(&b)
	if enc, dec := pluginCalls(b.String(), "count_request_encode"), pluginCalls(b.String(), "count_response_decode"); enc != 2 || dec != 1 {
		t.Errorf("count ops: %d request encodes, %d response decodes; want 2 and 1", enc, dec)
	}
}

// The same through the first-party bundle (the production plugins.yaml):
// the count ops go to its vllm component.
func TestContextCap_VLLMTokenizeBundle(t *testing.T) {
	bundle, err := testutil.BuildBundle()
	if err != nil {
		t.Fatal(err)
	}
	withPlugins(t, bundle, func() { TestContextCap_VLLMTokenize(t) })
}

// pluginCalls sums mindrouter_plugin_calls_total of op over plugins.
func pluginCalls(metrics, op string) int {
	n := 0
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, "mindrouter_plugin_calls_total{") && strings.Contains(line, `op="`+op+`"}`) {
			v, _ := strconv.Atoi(line[strings.LastIndexByte(line, ' ')+1:])
			n += v
		}
	}
	return n
}

// An Ollama backend (no tokenize API) is counted offline: once discovery
// knows the model's context (/api/show, bounded by max_num_ctx), a request
// near it is capped and no /tokenize is sent anywhere.
func TestContextCap_OllamaOffline(t *testing.T) {
	e := startEnv(t, fakellm.Config{}, fakellm.Config{Tokens: 5000},
		"discovery: {interval: 100ms, timeout: 500ms}\n")
	ctx := context.Background()
	if _, err := e.client.Chat.Completions.New(ctx, chatParams(ollamaModel, "hi")); err != nil { // loads it
		t.Fatal(err)
	}
	window := 0 // the model's window: fakellm's MaxModelLen (32768), the default max_num_ctx
	known := func() bool {
		models, err := e.client.Models.List(ctx)
		if err != nil {
			return false
		}
		for _, m := range models.Data {
			var x struct {
				ContextLength int `json:"context_length"`
			}
			if m.ID == ollamaModel && json.Unmarshal([]byte(m.RawJSON()), &x) == nil && x.ContextLength > 0 {
				window = x.ContextLength
				return true
			}
		}
		return false
	}
	if !waitFor(5*time.Second, known) {
		t.Fatal("discovery never reported the loaded model's context length")
	}
	if _, err := e.client.Chat.Completions.New(ctx, chatParamsMax(ollamaModel, strings.Repeat("word ", window*6/10), int64(window))); err != nil {
		t.Fatalf("Ollama near the limit: %v", err)
	}
	var sent struct {
		Options struct {
			NumPredict int `json:"num_predict"`
		} `json:"options"`
	}
	if err := json.Unmarshal(e.ollama.LastBody("/api/chat"), &sent); err != nil || sent.Options.NumPredict <= 0 || sent.Options.NumPredict >= window*4/10 {
		t.Errorf("Ollama num_predict %d (%v), want capped below %d", sent.Options.NumPredict, err, window*4/10)
	}
	if n := e.ollama.Stats().Requests[tokenizeAt] + e.vllm.Stats().Requests[tokenizeAt]; n != 0 {
		t.Errorf("an Ollama request sent %d /tokenize calls", n)
	}
	var b strings.Builder
	e.gw.Host.WriteMetrics(&b)
	if n := pluginCalls(b.String(), "count_request_encode"); n != 0 {
		t.Errorf("the Ollama adapter, which does not count, was asked %d times", n)
	}
}

func chatParamsMax(model, prompt string, max int64) openai.ChatCompletionNewParams {
	p := chatParams(model, prompt)
	p.MaxTokens = openai.Int(max)
	return p
}

// Without /tokenize (404) the offline count decides: the nonsense input,
// five tiktoken tokens a word, is refused as too long, and an English one
// is capped with the offline margin, below what an exact count leaves,
// without asking the backend that had no /tokenize again.
func TestContextCap_TokenizeUnavailable(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{MaxModelLen: ctxWindow, Tokens: 5000, NoTokenize: true}, fakellm.Config{}, "")
	ctx := context.Background()

	_, err := e.client.Chat.Completions.New(ctx, capRequest(vllmModel))
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 400 || oe.Code != "context_length_exceeded" {
		t.Fatalf("offline count of %d nonsense words: %v", capWords, err)
	}
	if n := e.vllm.Stats().Requests[tokenizeAt]; n != 1 {
		t.Errorf("/tokenize tried %d times, want 1", n)
	}

	resp, err := e.client.Chat.Completions.New(ctx, chatParamsMax(vllmModel, strings.Repeat("word ", 600), bigOutput))
	if err != nil {
		t.Fatalf("a failing /tokenize failed the request: %v", err)
	}
	got := sentMaxTokens(t, e.vllm.LastBody(chatPath))
	exact := ctxWindow - int(resp.Usage.PromptTokens) - 4
	if got <= 0 || got >= exact || resp.Choices[0].FinishReason != "length" {
		t.Errorf("max_tokens sent %d, want capped with the offline margin (below %d); finish %q", got, exact, resp.Choices[0].FinishReason)
	}
	if n := e.vllm.Stats().Requests[tokenizeAt]; n != 1 {
		t.Errorf("/tokenize tried %d times in all, want 1 (a 404 is not asked again for a while)", n)
	}
}
