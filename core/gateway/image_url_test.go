package gateway

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// imageServer serves the 1×1 PNG at /cat.png on 127.0.0.1 and counts the
// requests it got.
func imageServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	png, err := base64.StdEncoding.DecodeString(onePixelPNG)
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(png)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func imageURLParams(model, url string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{
		openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("What is in this picture?"),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: url}),
		}),
	}}
}

// TestImageURL_Fetched: an image given by URL reaches each engine inline,
// fetched by the gateway through its SSRF guard (the test server's
// loopback address is allowed explicitly, as an operator allows an
// internal image store): Ollama cannot fetch, and vLLM must not fetch
// client-chosen URLs from inside the cluster. Both plugin paths (separate
// modules, and the bundle's fused calls) are run by TestOpenAISDK_PluginSets.
func TestImageURL_Fetched(t *testing.T) {
	t.Parallel()
	img, hits := imageServer(t)
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "images: {allow: [127.0.0.1/32]}\n")
	for i, model := range []string{ollamaModel, vllmModel} {
		resp, err := e.client.Chat.Completions.New(context.Background(), imageURLParams(model, img.URL+"/cat.png"))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Choices[0].Message.Content == "" {
			t.Fatalf("choice = %+v", resp.Choices[0])
		}
		if model == ollamaModel {
			var sent struct {
				Messages []struct {
					Images []string `json:"images"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(e.ollama.LastBody("/api/chat"), &sent); err != nil || len(sent.Messages) != 1 ||
				len(sent.Messages[0].Images) != 1 || sent.Messages[0].Images[0] != onePixelPNG {
				t.Fatalf("Ollama got %s (%v)", e.ollama.LastBody("/api/chat"), err)
			}
		} else if body := string(e.vllm.LastBody("/v1/chat/completions")); !strings.Contains(body, `"url":"data:image/png;base64,`+onePixelPNG+`"`) ||
			strings.Contains(body, img.URL) {
			t.Fatalf("vLLM got %s", body)
		}
		if hits.Load() != int64(i+1) {
			t.Fatalf("image server hits = %d", hits.Load())
		}
	}
}

// TestImageURL_SSRFRefused: without an allow-list the guard refuses a URL
// whose host is loopback, by address and by a name resolving to it, and
// the cloud metadata address; the client gets a 400 in its dialect and
// the image server is never asked.
func TestImageURL_SSRFRefused(t *testing.T) {
	t.Parallel()
	img, hits := imageServer(t)
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	port := img.URL[strings.LastIndex(img.URL, ":"):]
	for _, u := range []string{
		img.URL + "/cat.png",                      // 127.0.0.1
		"http://localhost" + port + "/cat.png",    // a name for loopback
		"http://[::ffff:127.0.0.1]" + port + "/x", // loopback in IPv6 clothes
		"http://169.254.169.254/latest/meta-data/",
		"http://2130706433" + port + "/cat.png", // 127.0.0.1 as one number
	} {
		_, err := e.client.Chat.Completions.New(context.Background(), imageURLParams(ollamaModel, u))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "image_fetch_failed" {
			t.Fatalf("%s: error = %v", u, err)
		}
		if strings.Contains(apiErr.Message, "127.0.0.1") && !strings.Contains(u, "127.0.0.1") {
			t.Fatalf("%s: the message names the resolved address: %s", u, apiErr.Message)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the guard let %d requests through", n)
	}
}
