package gateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

const (
	textModel   = "llama3.2:3b" // Ollama: completion, tools
	visionModel = "llava:7b"    // Ollama: completion, vision (no tools)
)

// TestVision: discovery learns each Ollama model's capabilities from its
// /api/show (a per-model probe), and a request the model cannot serve —
// an image to a text-only model, tools to a model without tools — is the
// client's 400 in its own dialect (OpenAI, Ollama, Anthropic), refused before the backend sees it;
// the vision model takes the image. Run on every plugin set: the
// bundle's fused path and the separate modules' canonical one.
func TestVision(t *testing.T) {
	t.Parallel()
	for _, ps := range pluginSets(t) {
		t.Run(ps.name, func(t *testing.T) {
			t.Parallel()
			withPlugins(t, ps.set, func() { testVision(t) })
		})
	}
}

func testVision(t *testing.T) {
	e := startEnv(t, fakellm.Config{}, fakellm.Config{VisionByName: true, Models: []string{textModel, visionModel}}, "")
	ctx := context.Background()
	png, err := base64.StdEncoding.DecodeString(onePixelPNG)
	if err != nil {
		t.Fatal(err)
	}
	dataURL := "data:image/png;base64," + onePixelPNG
	oc := ollamaClient(t, e)
	ollamaImage := func(model string) api.ChatRequest {
		stream := false
		return api.ChatRequest{Model: model, Stream: &stream, Messages: []api.Message{
			{Role: "user", Content: "What is in this picture?", Images: []api.ImageData{png}}}}
	}

	// Refused, in each dialect, before any byte reaches the backend.
	_, err = e.client.Chat.Completions.New(ctx, imageURLParams(textModel, dataURL))
	// The scheduler refuses it (model_capability), from what the gateway
	// read natively; the plugins' own check stays behind it.
	wantOpenAI400(t, err, "image to "+textModel, `model "`+textModel+`" does not support image input`)
	err = oc.Chat(ctx, &api.ChatRequest{Model: textModel, Stream: new(bool), Messages: ollamaImage(textModel).Messages},
		func(api.ChatResponse) error { return nil })
	var se api.StatusError
	if !errors.As(err, &se) || se.StatusCode != 400 || !strings.Contains(se.ErrorMessage, `model "`+textModel+`" does not support image input`) {
		t.Errorf("Ollama client, image to %s: %v, want 400 does not support image input", textModel, err)
	}
	ap := anthropicParams(textModel, "")
	ap.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(
		anthropic.NewImageBlockBase64("image/png", onePixelPNG), anthropic.NewTextBlock("What is in this picture?"))}
	ac := anthropicClient(e, false, adminKey)
	_, err = ac.Messages.New(ctx, ap)
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 400 || string(ae.Type()) != "invalid_request_error" || !strings.Contains(ae.Message, "does not support image input") {
		t.Errorf("Anthropic client, image to %s: %v, want 400 invalid_request_error does not support image input", textModel, err)
	}
	tools := chatParams(visionModel, "weather in Paris?")
	tools.Tools = []openai.ChatCompletionToolUnionParam{weatherTool()}
	_, err = e.client.Chat.Completions.New(ctx, tools)
	wantOpenAI400(t, err, "tools to "+visionModel, `model "`+visionModel+`" does not support tools`)
	if b := e.ollama.LastBody("/api/chat"); b != nil {
		t.Fatalf("the backend got a refused request: %s", b)
	}

	// Served: the image to the vision model, tools to the text model.
	resp, err := e.client.Chat.Completions.New(ctx, imageURLParams(visionModel, dataURL))
	if err != nil || len(resp.Choices) != 1 || resp.Choices[0].Message.Content == "" {
		t.Fatalf("image to %s: %v %+v", visionModel, err, resp)
	}
	if b := string(e.ollama.LastBody("/api/chat")); !strings.Contains(b, `"images":["`+onePixelPNG+`"]`) {
		t.Fatalf("%s got %s", visionModel, b)
	}
	if msg, _, _ := chatOnce(t, oc, ollamaImage(visionModel), false); msg.Content == "" {
		t.Fatalf("Ollama client, image to %s: %+v", visionModel, msg)
	}
	tools.Model = textModel
	if resp, err := e.client.Chat.Completions.New(ctx, tools); err != nil || len(resp.Choices) != 1 {
		t.Fatalf("tools to %s: %v %+v", textModel, err, resp)
	}

	// /v1/models shows what discovery learned.
	page, err := e.client.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	multimodal := map[string]bool{}
	for _, m := range page.Data {
		var v struct {
			Capabilities struct{ Multimodal, Tools bool }
		}
		if err := json.Unmarshal([]byte(m.RawJSON()), &v); err != nil {
			t.Fatal(err)
		}
		multimodal[m.ID] = v.Capabilities.Multimodal
		if m.ID == textModel && !v.Capabilities.Tools || m.ID == visionModel && v.Capabilities.Tools {
			t.Errorf("%s: %s", m.ID, m.RawJSON())
		}
	}
	if !multimodal[visionModel] || multimodal[textModel] {
		t.Errorf("multimodal = %v, want %s only", multimodal, visionModel)
	}
}

// wantOpenAI400 checks err is the OpenAI client's 400
// invalid_request_error whose message contains msg.
func wantOpenAI400(t *testing.T, err error, what, msg string) {
	t.Helper()
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Type != "invalid_request_error" || !strings.Contains(ae.Message, msg) {
		t.Errorf("%s: %v, want 400 invalid_request_error %q", what, err, msg)
	}
}
