package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/internal/matrix"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
)

const adminKey = "mr2_test_0123456789abcdef"

var plugins testutil.PluginSet

// runLogs sees every log line every gateway of this test binary writes, at
// debug level: TestMain fails the run if the admin key appears in any.
var runLogs = testutil.NewSecretScanner(adminKey)

func TestMain(m *testing.M) {
	var err error
	plugins, err = testutil.BuildPlugins()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	testutil.Cleanup()
	testsvc.StopAll()
	leaks, scanned := runLogs.Leaks()
	if len(leaks) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: the admin key appeared in %d of %d log lines written during the run:\n", len(leaks), scanned)
		for _, l := range leaks {
			fmt.Fprintln(os.Stderr, "  ", l)
		}
		code = 1
	} else if code == 0 && scanned == 0 {
		fmt.Fprintln(os.Stderr, "FAIL: no log line reached the key scanner; the check would be vacuous")
		code = 1
	} else {
		fmt.Fprintf(os.Stderr, "key scan: %d log lines, no key\n", scanned)
	}
	os.Exit(code)
}

// env is one gateway in front of a vLLM-flavoured and an Ollama-flavoured
// fakellm.
type env struct {
	gw           *Gateway
	base         string
	vllm, ollama *fakellm.Server
	vllmURL      string
	ollamaURL    string
	client       openai.Client
}

const (
	vllmModel   = "qwen3-8b"
	ollamaModel = "llama3.2:3b"
)

func startFake(t *testing.T, cfg fakellm.Config) (*fakellm.Server, string) {
	t.Helper()
	cfg.Logger = slog.New(slog.DiscardHandler)
	s, err := fakellm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Close)
	return s, "http://" + ln.Addr().String()
}

func startEnv(t *testing.T, fv, fo fakellm.Config, extraYAML string) *env {
	t.Helper()
	return startEnvCtx(t, context.Background(), fv, fo, extraYAML)
}

func startEnvCtx(t *testing.T, ctx context.Context, fv, fo fakellm.Config, extraYAML string) *env {
	t.Helper()
	return startEnvPlugins(t, ctx, pluginsFor(t), fv, fo, extraYAML)
}

// startEnvPlugins is startEnvCtx on the plugin set ps.
func startEnvPlugins(t *testing.T, ctx context.Context, ps testutil.PluginSet, fv, fo fakellm.Config, extraYAML string) *env {
	t.Helper()
	fv.Engine, fo.Engine = "vllm", "ollama"
	if fv.Models == nil {
		fv.Models = []string{vllmModel}
	}
	if fo.Models == nil {
		fo.Models = []string{ollamaModel}
	}
	e := &env{}
	var vurl, ourl string
	e.vllm, vurl = startFake(t, fv)
	e.ollama, ourl = startFake(t, fo)
	e.vllmURL, e.ollamaURL = vurl, ourl
	y := fmt.Sprintf(`listen: 127.0.0.1:0
plugins: %s
backends:
  - {name: gpu1-vllm, engine: vllm, url: %q, max_concurrent: 16}
  - {name: gpu2-ollama, engine: ollama, url: %q, max_concurrent: 4}
%s`, ps.YAML, vurl, ourl, extraYAML)
	cfg, err := config.Parse([]byte(y), ".")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store.DSN == config.Default().Store.DSN {
		cfg.Store.DSN = ":memory:" // each gateway its own throw-away store
	}
	if cfg.Audit.Spool == config.Default().Audit.Spool { // each gateway its own audit spool and sink
		d := t.TempDir()
		cfg.Audit.Spool, cfg.Audit.Embedded = filepath.Join(d, "spool"), filepath.Join(d, "audit.db")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := runLogs.Logger()
	if testing.Verbose() {
		log = runLogs.Tee(slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	}
	e.gw, err = Start(ctx, Options{Config: cfg, AdminKey: adminKey, Logger: log, Listener: ln})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.gw.Close(ctx)
	})
	e.base = "http://" + e.gw.Addr.String()
	e.client = openai.NewClient(option.WithBaseURL(e.base+"/v1/"), option.WithAPIKey(adminKey), option.WithMaxRetries(0))
	return e
}

func chatParams(model, prompt string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage(prompt)},
	}
}

func TestOpenAISDK_ChatBothEngines(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	ctx := context.Background()
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			resp, err := e.client.Chat.Completions.New(ctx, chatParams(model, "Tell me about gateways"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(resp.ID, "chatcmpl-") || resp.Model != model {
				t.Fatalf("id %q model %q", resp.ID, resp.Model)
			}
			if len(resp.Choices) != 1 || resp.Choices[0].Message.Content == "" || resp.Choices[0].FinishReason != "stop" {
				t.Fatalf("choices = %+v", resp.Choices)
			}
			if resp.Usage.PromptTokens == 0 || resp.Usage.CompletionTokens == 0 ||
				resp.Usage.TotalTokens != resp.Usage.PromptTokens+resp.Usage.CompletionTokens {
				t.Fatalf("usage = %+v", resp.Usage)
			}

			// The same prompt streamed must give the same text (fakellm is
			// deterministic), with usage when asked for.
			p := chatParams(model, "Tell me about gateways")
			p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			stream := e.client.Chat.Completions.NewStreaming(ctx, p)
			var acc openai.ChatCompletionAccumulator
			ids := map[string]bool{}
			chunks := 0
			for stream.Next() {
				c := stream.Current()
				acc.AddChunk(c)
				ids[c.ID] = true
				chunks++
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if chunks < 3 || len(ids) != 1 {
				t.Fatalf("chunks %d ids %v", chunks, ids)
			}
			if got, want := acc.Choices[0].Message.Content, resp.Choices[0].Message.Content; got != want {
				t.Fatalf("streamed %q, non-streamed %q", got, want)
			}
			if acc.Usage.CompletionTokens != resp.Usage.CompletionTokens || acc.Choices[0].FinishReason != "stop" {
				t.Fatalf("stream usage %+v finish %q", acc.Usage, acc.Choices[0].FinishReason)
			}
			matrix.Mark(t, "openai", "text", engineOf(model))
			matrix.Mark(t, "openai", "stream", engineOf(model))
		})
	}
}

func TestOpenAISDK_StreamWithoutUsageOption(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	for _, model := range []string{vllmModel, ollamaModel} {
		stream := e.client.Chat.Completions.NewStreaming(context.Background(), chatParams(model, "hi"))
		for stream.Next() {
			if c := stream.Current(); len(c.Choices) == 0 {
				t.Fatalf("%s: a usage-only chunk reached a client that did not ask for it: %s", model, c.RawJSON())
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenAISDK_ToolCallsStreamed(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	tool := openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name:        "get_weather",
		Description: openai.String("Weather for a city"),
		Parameters: shared.FunctionParameters{
			"type":       "object",
			"properties": map[string]any{"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"}},
			"required":   []string{"city", "days"},
		},
	})
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			p := chatParams(model, "Weather in Paris?")
			p.Tools = []openai.ChatCompletionToolUnionParam{tool}
			stream := e.client.Chat.Completions.NewStreaming(context.Background(), p)
			var acc openai.ChatCompletionAccumulator
			for stream.Next() {
				acc.AddChunk(stream.Current())
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			calls := acc.Choices[0].Message.ToolCalls
			if len(calls) != 1 || calls[0].Function.Name != "get_weather" || calls[0].ID == "" {
				t.Fatalf("tool calls = %+v", calls)
			}
			var args map[string]any
			if err := json.Unmarshal([]byte(calls[0].Function.Arguments), &args); err != nil || args["city"] == nil {
				t.Fatalf("arguments %q: %v", calls[0].Function.Arguments, err)
			}
			if acc.Choices[0].FinishReason != "tool_calls" {
				t.Fatalf("finish = %q", acc.Choices[0].FinishReason)
			}
			matrix.Mark(t, "openai", "streamed-tools", engineOf(model))
		})
	}
}

func TestModels(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	page, err := e.client.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, m := range page.Data {
		got[m.ID] = true
	}
	if !got[vllmModel] || !got[ollamaModel] {
		t.Fatalf("models = %v", got)
	}
}

// rawPost sends body to path and returns status, headers and the decoded
// OpenAI error.
func rawPost(t *testing.T, url, key, body string) (int, http.Header, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("status %d body %q is not JSON", resp.StatusCode, b)
	}
	return resp.StatusCode, resp.Header, v
}

func TestErrors_OpenAIShape(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "limits: {max_body_bytes: 4096}\n")
	url := e.base + "/v1/chat/completions"
	good := `{"model":"` + vllmModel + `","messages":[{"role":"user","content":"hi"}]}`
	cases := []struct {
		name, key, body string
		status          int
		errType         string
	}{
		{"no key", "", good, 401, ""},
		{"wrong key", "mr2_wrong_0123456789abcdef", good, 401, ""},
		{"malformed json", adminKey, `{"model":`, 400, "invalid_request_error"},
		{"missing messages", adminKey, `{"model":"x"}`, 400, "invalid_request_error"},
		{"unknown model", adminKey, `{"model":"nope","messages":[{"role":"user","content":"hi"}]}`, 404, ""},
		{"too large", adminKey, `{"model":"x","messages":[{"role":"user","content":"` + strings.Repeat("a", 8000) + `"}]}`, 413, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, hdr, v := rawPost(t, url, tc.key, tc.body)
			if status != tc.status {
				t.Fatalf("status %d want %d: %v", status, tc.status, v)
			}
			eobj, ok := v["error"].(map[string]any)
			if !ok || eobj["message"] == "" {
				t.Fatalf("not an OpenAI error: %v", v)
			}
			if tc.errType != "" && eobj["type"] != tc.errType {
				t.Fatalf("type %v want %s", eobj["type"], tc.errType)
			}
			if !strings.HasPrefix(hdr.Get("X-Request-ID"), "chatcmpl-") {
				t.Fatalf("X-Request-ID = %q", hdr.Get("X-Request-ID"))
			}
		})
	}
	// The SDK surfaces the same as a typed error.
	_, err := e.client.Chat.Completions.New(context.Background(), chatParams("nope", "hi"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Fatalf("SDK error = %v", err)
	}
}

func TestBackendDown_502(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	e.vllm.Close() // discovery already saw it healthy; the next request finds it gone
	status, _, v := rawPost(t, e.base+"/v1/chat/completions", adminKey, `{"model":"`+vllmModel+`","messages":[{"role":"user","content":"hi"}]}`)
	if status != 502 && status != 503 {
		t.Fatalf("status %d: %v", status, v)
	}
}

// TestOpenAISDK_BackendErrorRelayed: a backend's error reaches the SDK
// as its typed error, and a client mistake as a 4xx, through either engine.
func TestOpenAISDK_BackendErrorRelayed(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{ErrorRate: 1}, fakellm.Config{ErrorRate: 1}, "")
	for _, model := range []string{vllmModel, ollamaModel} {
		t.Run(model, func(t *testing.T) {
			_, err := e.client.Chat.Completions.New(context.Background(), chatParams(model, "hi"))
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode < 500 {
				t.Fatalf("%s: error = %v", model, err)
			}
			p := chatParams(model, "hi")
			p.Temperature = openai.Float(-1)
			_, err = e.client.Chat.Completions.New(context.Background(), p)
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Type != "invalid_request_error" {
				t.Fatalf("%s: bad request error = %v", model, err)
			}
			matrix.Mark(t, "openai", "errors", engineOf(model))
		})
	}
}

// engineOf names the engine serving a test model.
func engineOf(model string) string { return matrix.Engine(model == ollamaModel) }

func TestClientDisconnect_FreesBackend(t *testing.T) {
	e := startEnv(t, fakellm.Config{TPS: 20, Tokens: 400}, fakellm.Config{TPS: 20, Tokens: 400}, "")
	for _, model := range []string{vllmModel, ollamaModel} {
		ctx, cancel := context.WithCancel(context.Background())
		stream := e.client.Chat.Completions.NewStreaming(ctx, chatParams(model, "long story"))
		if !stream.Next() {
			t.Fatalf("%s: no first chunk: %v", model, stream.Err())
		}
		cancel()
		_ = stream.Close()
		deadline := time.Now().Add(5 * time.Second)
		for {
			busy := int64(0)
			for _, b := range e.gw.Reg.Backends() {
				busy += b.InFlight()
			}
			if busy == 0 && e.vllm.Stats().ActiveStreams == 0 && e.ollama.Stats().ActiveStreams == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: backend still busy after client left (gateway in flight %d, fake vllm %+v, fake ollama %+v)",
					model, busy, e.vllm.Stats(), e.ollama.Stats())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func TestHealthReadyMetrics(t *testing.T) {
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		resp, err := http.Get(e.base + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", p, resp.StatusCode, b)
		}
		if p == "/metrics" && !strings.Contains(string(b), "mindrouter_backend_healthy") {
			t.Fatalf("metrics missing gateway series:\n%s", b)
		}
	}
}

func TestStreamDroppedMidway_ClientSeesError(t *testing.T) {
	e := startEnv(t, fakellm.Config{DropRate: 1, Tokens: 40}, fakellm.Config{DropRate: 1, Tokens: 40}, "")
	for _, model := range []string{vllmModel, ollamaModel} {
		stream := e.client.Chat.Completions.NewStreaming(context.Background(), chatParams(model, "hi"))
		n := 0
		for stream.Next() {
			n++
		}
		if stream.Err() == nil {
			t.Fatalf("%s: a stream cut by the backend after %d chunks ended without error", model, n)
		}
		if !strings.Contains(stream.Err().Error(), "closed the stream before it was complete") {
			t.Fatalf("%s: error = %v", model, stream.Err())
		}
	}
}

func TestShutdownLetsOpenRequestsFinish(t *testing.T) {
	// As in main: a signal cancels the context Start got, then Close drains.
	sig, stopSig := context.WithCancel(context.Background())
	e := startEnvCtx(t, sig, fakellm.Config{TTFT: 400 * time.Millisecond}, fakellm.Config{}, "")
	done := make(chan error, 1)
	go func() {
		_, err := e.client.Chat.Completions.New(context.Background(), chatParams(vllmModel, "slow"))
		done <- err
	}()
	// Wait until the request is at the backend, waiting for its first token.
	for deadline := time.Now().Add(10 * time.Second); e.vllm.Stats().Running == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the request never reached the backend")
		}
	}
	stopSig()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.gw.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("request in flight during shutdown failed: %v", err)
	}
}
