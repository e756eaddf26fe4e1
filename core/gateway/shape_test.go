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
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/mindrouter/mindrouter/bench/fakellm"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
)

// shapedEvents reads mindrouter_stream_shaped_events_total.
func shapedEvents(t *testing.T, e *env) int {
	t.Helper()
	resp, err := http.Get(e.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "mindrouter_stream_shaped_events_total "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no mindrouter_stream_shaped_events_total in /metrics")
	return 0
}

// A stream on the bundle's vLLM and Ollama patches: once the answer is
// under way, the relay translates the content events by the shape the
// plugin left (sdk/shape), without calling it, and the client gets the
// same text, usage and finish as the unstreamed answer. Paced (an event a
// read, a slow stream's case) and unpaced (many events a read), on the
// bundle as WebAssembly and natively; the separate modules' canonical path
// leaves no shape.
func TestStreamShape_BothEngines(t *testing.T) {
	t.Parallel()
	for _, ps := range pluginSets(t) {
		for _, tps := range []float64{100, 0} {
			cfg := fakellm.Config{Tokens: 60, TPS: tps}
			e := startEnvPlugins(t, context.Background(), ps.set, cfg, cfg, "")
			for _, model := range []string{vllmModel, ollamaModel} {
				before := shapedEvents(t, e)
				chunks := shapedStream(t, e, model)
				// Paced (10 ms an event): the content events after the
				// first read's batch, which goes to the plugin whole and
				// leaves the shape. A loaded machine (CI under -race) can
				// hold back the first read long enough for a few events to
				// pile up: 58 of 59 was seen at 400 tokens/s, so this asks
				// for two thirds. Unpaced, the whole answer may arrive in
				// one read, so only the answer itself is checked.
				want := 40
				if tps == 0 {
					want = 0
				}
				// The client stops at [DONE]; the relay counts its events
				// just after.
				shaped := 0
				waitFor(5*time.Second, func() bool {
					shaped = shapedEvents(t, e) - before
					return !ps.fused || shaped >= want
				})
				name := fmt.Sprintf("%s tps %v %s: %d chunks, %d events by the shape", ps.name, tps, model, chunks, shaped)
				if ps.fused && shaped < want || !ps.fused && shaped != 0 {
					t.Fatal(name)
				}
				t.Log(name)
			}
		}
	}
}

// shapedStream streams a chat on model and checks it against the same
// chat unstreamed; it returns the chunks the client read.
func shapedStream(t *testing.T, e *env, model string) (chunks int) {
	t.Helper()
	ctx := context.Background()
	resp, err := e.client.Chat.Completions.New(ctx, chatParams(model, "Tell me about gateways"))
	if err != nil {
		t.Fatal(err)
	}
	p := chatParams(model, "Tell me about gateways")
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := e.client.Chat.Completions.NewStreaming(ctx, p)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("%s: %v", model, err)
	}
	if got, want := acc.Choices[0].Message.Content, resp.Choices[0].Message.Content; got != want {
		t.Fatalf("%s: streamed %q, unstreamed %q", model, got, want)
	}
	if acc.Usage.CompletionTokens != resp.Usage.CompletionTokens || acc.Choices[0].FinishReason != "stop" {
		t.Fatalf("%s: usage %+v finish %q", model, acc.Usage, acc.Choices[0].FinishReason)
	}
	return chunks
}

// A batch whose first events the shape translates and whose next event
// the plugin refuses: the client still gets the shaped events' text, then
// the error that ends the stream.
func TestStreamShape_PluginFailsAfterShapedEvents(t *testing.T) {
	t.Parallel()
	const model = "shape-model"
	_, fkURL := startFake(t, fakellm.Config{Engine: "vllm", Models: []string{model}})
	target, err := url.Parse(fkURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target) // discovery and probes: fakellm's
	ev := func(delta string) string {
		return `data: {"id":"chatcmpl-x","object":"chat.completion.chunk","created":1,"model":"` + model +
			`","choices":[{"index":0,"delta":{` + delta + `},"logprobs":null,"finish_reason":null}]}` + "\n\n"
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			proxy.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, part := range []string{
			ev(`"role":"assistant","content":""`),
			ev(`"content":"Hello"`),                         // the plugin's call, which leaves the shape
			ev(`"content":" world"`),                        // the shape's
			ev(`"content":" again"`) + "data: {\"id\":\n\n", // the shape's, then one the plugin refuses
		} {
			_, _ = io.WriteString(w, part)
			w.(http.Flusher).Flush()
			time.Sleep(30 * time.Millisecond) // one read each
		}
	}))
	t.Cleanup(srv.Close)
	ps, err := testutil.BuildBundle()
	if err != nil {
		t.Fatal(err)
	}
	e := startEnvPlugins(t, context.Background(), ps, fakellm.Config{}, fakellm.Config{},
		fmt.Sprintf("  - {name: shaped, engine: vllm, url: %q, models: [%s]}\n", srv.URL, model))
	before := shapedEvents(t, e)
	stream := e.client.Chat.Completions.NewStreaming(context.Background(), chatParams(model, "hi"))
	var text strings.Builder
	for stream.Next() {
		if c := stream.Current(); len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Delta.Content)
		}
	}
	if stream.Err() == nil {
		t.Fatal("the stream ended without an error")
	}
	if text.String() != "Hello world again" {
		t.Fatalf("text %q before the error, want %q", text.String(), "Hello world again")
	}
	if !waitFor(5*time.Second, func() bool { return shapedEvents(t, e)-before == 2 }) {
		t.Fatalf("%d events by the shape, want 2", shapedEvents(t, e)-before)
	}
}
