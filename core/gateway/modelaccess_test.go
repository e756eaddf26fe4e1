package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/ollama/ollama/api"
	"github.com/openai/openai-go/v3"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// TestModelAccess_HidesModelInEveryDialect: a group's model allowlist
// ("llama3*") makes every other model absent for its members — a 404
// model_not_found in the client's dialect on chat (openai-go), Anthropic
// messages, Ollama chat, embeddings, token counts and /api/show, and left
// out of /v1/models, /api/tags and /anthropic/v1/models — while a member
// of another group still sees and uses it, and clearing the list gives it
// back at once (the change drops cached principals).
func TestModelAccess_HidesModelInEveryDialect(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	ctx := context.Background()
	var g struct {
		ID int64 `json:"id"`
	}
	if st := callAPI(t, e.base, adminKey, "POST", "/api/admin/groups", map[string]any{"name": "llama-lab", "model_access": []string{"llama3*"}}, &g); st != 200 {
		t.Fatalf("create group: %d", st)
	}
	_, lab := newUser(t, e.base, "ria", "llama-lab", nil, nil)
	_, other := newUser(t, e.base, "sam", "students", nil, nil)
	hidden, allowed := vllmModel, ollamaModel

	// OpenAI chat: hidden is exactly what an absent model is.
	oc := client(e, lab.FullKey)
	chat := func(c openai.Client, model string) error {
		_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		})
		return err
	}
	var ae *openai.Error
	err := chat(oc, hidden)
	if !errors.As(err, &ae) || ae.StatusCode != 404 || ae.Code != "model_not_found" {
		t.Fatalf("openai chat %s: %v, want 404 model_not_found", hidden, err)
	}
	hiddenMsg := strings.ReplaceAll(ae.Message, hidden, "M")
	if err := chat(oc, "no-such-model"); !errors.As(err, &ae) || strings.ReplaceAll(ae.Message, "no-such-model", "M") != hiddenMsg {
		t.Errorf("a hidden model must read as an absent one: %q vs %v", hiddenMsg, err)
	}
	if err := chat(oc, allowed); err != nil {
		t.Fatalf("openai chat %s (allowed): %v", allowed, err)
	}
	// Streamed too (the stream is held until the first event, so the
	// refusal is a status, not an event).
	stream := oc.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model: hidden, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	for stream.Next() {
	}
	if err := stream.Err(); statusOf(err) != 404 {
		t.Errorf("openai streamed chat %s: %v, want 404", hidden, err)
	}
	if _, err := oc.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Model: hidden, Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hi")},
	}); statusOf(err) != 404 {
		t.Errorf("openai embeddings %s: %v, want 404", hidden, err)
	}

	// Anthropic messages.
	ac := anthropicClient(e, true, lab.FullKey)
	var aerr *anthropic.Error
	if _, err := ac.Messages.New(ctx, anthropicParams(hidden, "hi")); !errors.As(err, &aerr) || aerr.StatusCode != 404 ||
		!strings.Contains(aerr.RawJSON(), "not_found_error") {
		t.Errorf("anthropic messages %s: %v, want 404 not_found_error", hidden, err)
	}
	if _, err := ac.Messages.New(ctx, anthropicParams(allowed, "hi")); err != nil {
		t.Errorf("anthropic messages %s (allowed): %v", allowed, err)
	}
	if _, err := ac.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{
		Model:    anthropic.Model(hidden),
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	}); !errors.As(err, &aerr) || aerr.StatusCode != 404 {
		t.Errorf("anthropic count_tokens %s: %v, want 404", hidden, err)
	}

	// Ollama chat and show.
	u, _ := url.Parse(e.base)
	olc := api.NewClient(u, &http.Client{Transport: bearer{lab.FullKey}})
	var se api.StatusError
	err = olc.Chat(ctx, &api.ChatRequest{Model: hidden, Messages: []api.Message{{Role: "user", Content: "hi"}}}, func(api.ChatResponse) error { return nil })
	if !errors.As(err, &se) || se.StatusCode != 404 {
		t.Errorf("ollama chat %s: %v, want 404", hidden, err)
	}
	if err := olc.Chat(ctx, &api.ChatRequest{Model: allowed, Messages: []api.Message{{Role: "user", Content: "hi"}}}, func(api.ChatResponse) error { return nil }); err != nil {
		t.Errorf("ollama chat %s (allowed): %v", allowed, err)
	}
	if _, err := olc.Show(ctx, &api.ShowRequest{Model: hidden}); !errors.As(err, &se) || se.StatusCode != 404 {
		t.Errorf("ollama show %s: %v, want 404", hidden, err)
	}

	// The model lists, in each dialect.
	lists := func(key string) map[string][]string {
		out := map[string][]string{}
		for _, path := range []string{"/v1/models", "/api/tags", "/anthropic/v1/models"} {
			r := do(http.DefaultClient, "GET", e.base+path, key, nil)
			var l struct {
				Data []struct {
					ID string `json:"id"`
				} `json:"data"`
				Models []struct {
					Name string `json:"name"`
				} `json:"models"`
			}
			if r.status != 200 || json.Unmarshal(r.body, &l) != nil {
				t.Fatalf("%s: %d %s", path, r.status, r.body)
			}
			for _, d := range l.Data {
				out[path] = append(out[path], d.ID)
			}
			for _, m := range l.Models {
				out[path] = append(out[path], m.Name)
			}
		}
		return out
	}
	for path, ids := range lists(lab.FullKey) {
		if slices.Contains(ids, hidden) || !slices.Contains(ids, allowed) {
			t.Errorf("%s for the lab user: %v, want %s without %s", path, ids, allowed, hidden)
		}
	}
	// Another group's user still sees and uses it.
	for path, ids := range lists(other.FullKey) {
		if !slices.Contains(ids, hidden) || !slices.Contains(ids, allowed) {
			t.Errorf("%s for another group's user: %v, want both models", path, ids)
		}
	}
	if err := chat(client(e, other.FullKey), hidden); err != nil { // another group's user
		t.Errorf("another group's user, %s: %v", hidden, err)
	}

	// Clearing the list gives the model back (cached principals dropped).
	if st := callAPI(t, e.base, adminKey, "PATCH", fmt.Sprintf("/api/admin/groups/%d", g.ID), map[string]any{"model_access": []string{}}, nil); st != 200 {
		t.Fatalf("clear model_access: %d", st)
	}
	if err := chat(oc, hidden); err != nil {
		t.Errorf("after clearing the list, %s: %v", hidden, err)
	}
}

// TestModelAccess_UserOverride: a user's own list replaces the group's,
// in both directions.
func TestModelAccess_UserOverride(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	if st := callAPI(t, e.base, adminKey, "POST", "/api/admin/groups", map[string]any{"name": "llama-lab", "model_access": []string{"llama3*"}}, nil); st != 200 {
		t.Fatalf("create group: %d", st)
	}
	_, wide := newUser(t, e.base, "wide", "llama-lab", map[string]any{"model_access": []string{}}, nil)
	_, narrow := newUser(t, e.base, "narrow", "students", map[string]any{"model_access": []string{"qwen3*"}}, nil)
	chat := func(key, model string) int {
		c := client(e, key)
		_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		})
		return statusOf(err)
	}
	for _, c := range []struct {
		who, key, model string
		want            int
	}{
		{"empty override in a restricted group", wide.FullKey, vllmModel, 200},
		{"override in an open group", narrow.FullKey, vllmModel, 200},
		{"override hides what the group allows", narrow.FullKey, ollamaModel, 404},
	} {
		if got := chat(c.key, c.model); got != c.want {
			t.Errorf("%s, %s: %d, want %d", c.who, c.model, got, c.want)
		}
	}
}
