package gateway

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// TestNeeds_VisionRouting: the gateway reads what a request needs from
// its body natively (sdk.Routing's markers) and sends it only to a
// backend whose model offers it. Two Ollama backends serve the same model
// name; only one's /api/show lists "vision": every image request goes to
// that one, text requests to both. A model no backend can see images
// with is the client's 400 model_capability in its own dialect, before
// any backend is called. On every plugin set: the routed (fused and
// canonical) paths alike.
func TestNeeds_VisionRouting(t *testing.T) {
	t.Parallel()
	for _, ps := range pluginSets(t) {
		t.Run(ps.name, func(t *testing.T) {
			t.Parallel()
			withPlugins(t, ps.set, func() { testNeedsVisionRouting(t) })
		})
	}
}

// textOnlyModel is served only by the backend without vision.
const textOnlyModel = "mistral:7b"

func testNeedsVisionRouting(t *testing.T) {
	const delay = 20 * time.Millisecond // so concurrent requests overlap
	// Without VisionByName every model of a fakellm lists "vision".
	vis, visURL := startFake(t, fakellm.Config{Engine: "ollama", Models: []string{textModel}, TTFT: delay})
	e := startEnv(t, fakellm.Config{},
		fakellm.Config{VisionByName: true, Models: []string{textModel, textOnlyModel}, TTFT: delay},
		fmt.Sprintf("  - {name: gpu3-ollama-vision, engine: ollama, url: %q, max_concurrent: 4}\n", visURL))
	ctx := context.Background()
	chats := func(s *fakellm.Server) int64 { return s.Stats().Requests["/api/chat"] }
	dataURL := "data:image/png;base64," + onePixelPNG

	// 20 image requests at once: more than the vision backend's 4 slots,
	// so the others wait for it rather than go to the text-only one.
	run := func(n int, params openai.ChatCompletionNewParams) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			wg.Go(func() {
				resp, err := e.client.Chat.Completions.New(ctx, params)
				if err == nil && (len(resp.Choices) != 1 || resp.Choices[0].Message.Content == "") {
					err = fmt.Errorf("choices %+v", resp.Choices)
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	run(20, imageURLParams(textModel, dataURL))
	if v, o := chats(vis), chats(e.ollama); v != 20 || o != 0 {
		t.Fatalf("image requests: vision backend %d, text-only backend %d; want 20, 0", v, o)
	}
	if b := string(vis.LastBody("/api/chat")); !strings.Contains(b, `"images":["`+onePixelPNG+`"]`) {
		t.Fatalf("the vision backend got %s", b)
	}

	// Text requests need nothing: both backends serve them.
	run(16, chatParams(textModel, "Tell me about gateways"))
	if v, o := chats(vis)-20, chats(e.ollama); v+o != 16 || v == 0 || o == 0 {
		t.Fatalf("text requests: vision backend %d, text-only backend %d; want both used", v, o)
	}

	// An image for a model no backend can see with: 400 model_capability
	// in each dialect, and no backend called.
	before := chats(vis) + chats(e.ollama)
	const msg = `the model "` + textOnlyModel + `" does not support image input`
	_, err := e.client.Chat.Completions.New(ctx, imageURLParams(textOnlyModel, dataURL))
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 400 || oe.Type != "invalid_request_error" || oe.Code != "model_capability" || oe.Message != msg {
		t.Errorf("OpenAI client: %v, want 400 invalid_request_error model_capability %q", err, msg)
	}
	ap := anthropicParams(textOnlyModel, "")
	ap.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(
		anthropic.NewImageBlockBase64("image/png", onePixelPNG), anthropic.NewTextBlock("What is in this picture?"))}
	ac := anthropicClient(e, false, adminKey)
	_, err = ac.Messages.New(ctx, ap)
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 400 || string(ae.Type()) != "invalid_request_error" || !strings.Contains(ae.Message, msg) {
		t.Errorf("Anthropic client: %v, want 400 invalid_request_error %q", err, msg)
	}
	png, err := base64.StdEncoding.DecodeString(onePixelPNG)
	if err != nil {
		t.Fatal(err)
	}
	err = ollamaClient(t, e).Chat(ctx, &api.ChatRequest{Model: textOnlyModel, Stream: new(bool), Messages: []api.Message{
		{Role: "user", Content: "What is in this picture?", Images: []api.ImageData{png}}}},
		func(api.ChatResponse) error { return nil })
	var se api.StatusError
	if !errors.As(err, &se) || se.StatusCode != 400 || se.ErrorMessage != msg {
		t.Errorf("Ollama client: %v, want 400 %q", err, msg)
	}
	if after := chats(vis) + chats(e.ollama); after != before {
		t.Errorf("the backends got %d refused requests", after-before)
	}
	// Text to that model is served.
	if resp, err := e.client.Chat.Completions.New(ctx, chatParams(textOnlyModel, "hi")); err != nil || len(resp.Choices) != 1 {
		t.Fatalf("text to %s: %v", textOnlyModel, err)
	}
}
