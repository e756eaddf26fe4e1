package openai

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// gateway is a stand-in for the MindRouter host: it serves the real
// openai-go client through the plugin (via the SDK dispatcher, as the wasm
// build runs it), answering with canned canonical responses.
type gateway struct {
	t *testing.T
	p *sdk.Plugin

	mu     sync.Mutex
	req    canon.ChatRequest // the last request, decoded to canonical form
	resp   canon.ChatResponse
	chunks []canon.ChatChunk
	fail   *canon.Error
	models canon.ModelList
}

var gwMeta = []string{"id", "chatcmpl-gw42", "model", "client-model", "created", "1710000000"}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch r.URL.Path {
	case "/v1/models":
		res := call(g.t, g.p, abi.OpModelsEncode, 0, nil, g.models.AppendJSON(nil), "route", RouteModels)
		w.Header().Set("Content-Type", "application/json")
		w.Write(res.Payload)
		return
	case "/v1/chat/completions":
	default:
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	res := call(g.t, g.p, abi.OpRequestDecode, 0, nil, body, "route", RouteChat)
	if res.Status != abi.StatusOK {
		g.writeError(w, &canon.Error{Status: 400, Type: canon.ErrInvalidRequest, Message: res.Error})
		return
	}
	if err := g.req.DecodeJSON(res.Payload); err != nil {
		g.t.Fatalf("canonical request: %v", err)
	}
	if g.fail != nil {
		g.writeError(w, g.fail)
		return
	}
	meta := append([]string{"route", RouteChat}, gwMeta...)
	if !g.req.Stream {
		res := call(g.t, g.p, abi.OpResponseEncode, 0, nil, g.resp.AppendJSON(nil), meta...)
		w.Header().Set("Content-Type", "application/json")
		w.Write(res.Payload)
		return
	}
	if g.req.IncludeUsage {
		meta = append(meta, "include_usage", "1")
	}
	w.Header().Set("Content-Type", "text/event-stream")
	s := &streamer{t: g.t, p: g.p, meta: meta}
	for i := range g.chunks {
		var flags uint32
		if i == 0 {
			flags = abi.FlagFirst
		}
		s.send(flags, g.chunks[i:i+1])
	}
	s.send(abi.FlagEnd, nil)
	w.Write(s.out)
}

func (g *gateway) writeError(w http.ResponseWriter, e *canon.Error) {
	res := call(g.t, g.p, abi.OpErrorEncode, 0, nil, e.AppendJSON(nil), "route", RouteChat)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	w.Write(res.Payload)
}

func newGateway(t *testing.T) (*gateway, oai.Client) {
	g := &gateway{t: t, p: newPlugin()}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	client := oai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	return g, client
}

func TestOpenAIGo_ChatCompletion(t *testing.T) {
	g, client := newGateway(t)
	g.resp = canon.ChatResponse{
		ID: "backend-id", Model: "backend-model", Created: 1,
		Choices: []canon.Choice{{
			Message: canon.Message{
				Role:      canon.RoleAssistant,
				Reasoning: "Need the weather.",
				ToolCalls: []canon.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}, {Name: "get_time"}},
			},
			FinishReason: canon.FinishToolCalls,
		}},
		Usage: &canon.Usage{PromptTokens: 50, CompletionTokens: 20, TotalTokens: 70, ReasoningTokens: 5, CachedTokens: 32},
	}
	ctx := context.Background()
	params := oai.ChatCompletionNewParams{
		Model: "client-model",
		Messages: []oai.ChatCompletionMessageParamUnion{
			oai.DeveloperMessage("Be terse."),
			oai.UserMessage([]oai.ChatCompletionContentPartUnionParam{
				oai.TextContentPart("Weather in Paris? See"),
				oai.ImageContentPart(oai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/webp;base64,UklGRg==", Detail: "low"}),
			}),
		},
		Tools: []oai.ChatCompletionToolUnionParam{oai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        "get_weather",
			Description: oai.String("Weather for a city"),
			Parameters:  shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
			Strict:      oai.Bool(true),
		})},
		ToolChoice:          oai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: oai.String("required")},
		ParallelToolCalls:   oai.Bool(true),
		MaxTokens:           oai.Int(500),
		MaxCompletionTokens: oai.Int(300),
		Temperature:         oai.Float(0.2),
		Seed:                oai.Int(7),
		Stop:                oai.ChatCompletionNewParamsStopUnion{OfString: oai.String("###")},
		ReasoningEffort:     shared.ReasoningEffortMinimal,
		ResponseFormat: oai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "w", Schema: map[string]any{"type": "object"}, Strict: oai.Bool(true)},
		}},
		User: oai.String("u-1"),
	}
	comp, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}

	// What the plugin made of openai-go's request.
	req := g.req
	if req.Model != "client-model" || req.MaxTokens != 300 || *req.Temperature != 0.2 || *req.Seed != 7 || req.Stop[0] != "###" ||
		req.Think != canon.ThinkLow || req.User != "u-1" || req.ToolChoice.Mode != canon.ToolChoiceRequired || !*req.ParallelToolCalls {
		t.Errorf("canonical request: %+v", req)
	}
	if m := req.Messages; len(m) != 2 || m[0].Role != canon.RoleSystem || m[0].Text() != "Be terse." ||
		m[1].Content[1].MediaType != "image/webp" || m[1].Content[1].Data != "UklGRg==" || m[1].Content[1].Detail != "low" {
		t.Errorf("canonical messages: %+v", m)
	}
	if len(req.Tools) != 1 || req.Tools[0].Name != "get_weather" || !req.Tools[0].Strict || string(req.Tools[0].Parameters) == "" {
		t.Errorf("canonical tools: %+v", req.Tools)
	}
	if rf := req.ResponseFormat; rf == nil || rf.Type != canon.FormatJSONSchema || rf.Name != "w" || string(rf.Schema) != `{"type":"object"}` || !rf.Strict {
		t.Errorf("canonical response_format: %+v", rf)
	}

	// What openai-go made of the plugin's response.
	if comp.ID != "chatcmpl-gw42" || comp.Model != "client-model" || comp.Created != 1710000000 || comp.Object != "chat.completion" {
		t.Errorf("completion header: %s %s %d %s", comp.ID, comp.Model, comp.Created, comp.Object)
	}
	ch := comp.Choices[0]
	if ch.FinishReason != "tool_calls" || ch.Message.Content != "" || ch.Message.JSON.Content.Valid() || ch.Message.Role != "assistant" {
		t.Errorf("choice: %+v (content valid %v)", ch, ch.Message.JSON.Content.Valid())
	}
	if tc := ch.Message.ToolCalls; len(tc) != 2 || tc[0].ID != "call_1" || tc[0].Function.Name != "get_weather" || tc[0].Function.Arguments != `{"city":"Paris"}` ||
		tc[1].ID != "call_gw42_1" || tc[1].Function.Arguments != "{}" || tc[1].Type != "function" {
		t.Errorf("tool calls: %+v", tc)
	}
	if rc := ch.Message.JSON.ExtraFields["reasoning_content"]; rc.Raw() != `"Need the weather."` {
		t.Errorf("reasoning_content = %s", rc.Raw())
	}
	if u := comp.Usage; u.PromptTokens != 50 || u.CompletionTokens != 20 || u.TotalTokens != 70 ||
		u.CompletionTokensDetails.ReasoningTokens != 5 || u.PromptTokensDetails.CachedTokens != 32 {
		t.Errorf("usage: %+v", u)
	}

	// Send the assistant turn back with tool results, as an agent loop does.
	params.Messages = append(params.Messages, ch.Message.ToParam(),
		oai.ToolMessage(`{"temp":18}`, tc0(ch)), oai.ToolMessage("noon", "call_gw42_1"))
	g.resp.Choices = []canon.Choice{{Message: canon.Message{Role: canon.RoleAssistant, Content: []canon.Part{{Type: canon.PartText, Text: "18 C at noon."}}}, FinishReason: canon.FinishStop}}
	g.resp.Usage = nil
	comp, err = client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if comp.Choices[0].Message.Content != "18 C at noon." || comp.Choices[0].FinishReason != "stop" || comp.JSON.Usage.Valid() {
		t.Errorf("second completion: %+v", comp)
	}
	m := g.req.Messages
	if len(m) != 5 || m[2].Role != canon.RoleAssistant || len(m[2].ToolCalls) != 2 || m[2].ToolCalls[1].ID != "call_gw42_1" ||
		m[3].Role != canon.RoleTool || m[3].ToolCallID != "call_1" || m[3].Text() != `{"temp":18}` || m[4].ToolCallID != "call_gw42_1" {
		t.Errorf("history: %+v", m)
	}
}

func tc0(ch oai.ChatCompletionChoice) string { return ch.Message.ToolCalls[0].ID }

func TestOpenAIGo_Streaming(t *testing.T) {
	g, client := newGateway(t)
	g.chunks = []canon.ChatChunk{
		{ID: "b", Choices: []canon.ChunkChoice{{Delta: canon.Delta{Role: canon.RoleAssistant, Reasoning: "hmm"}}}},
		{ID: "b", Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: "Checking"}}}},
		{ID: "b", Choices: []canon.ChunkChoice{{Delta: canon.Delta{ToolCalls: []canon.ToolCallDelta{{Index: 0, ID: "call_a", Name: "lookup", Arguments: `{"k":`}}}}}},
		{ID: "b", Choices: []canon.ChunkChoice{{Delta: canon.Delta{ToolCalls: []canon.ToolCallDelta{{Index: 0, ID: "call_a", Name: "lookup", Arguments: `"v"}`}}}}}},
		{ID: "b", Choices: []canon.ChunkChoice{{Delta: canon.Delta{ToolCalls: []canon.ToolCallDelta{{Index: 1, Name: "other", Arguments: `{}`}}}, FinishReason: canon.FinishToolCalls}}},
		{ID: "b", Usage: &canon.Usage{PromptTokens: 10, CompletionTokens: 15, TotalTokens: 25}},
	}
	for _, includeUsage := range []bool{true, false} {
		t.Run("include_usage="+strconv.FormatBool(includeUsage), func(t *testing.T) {
			params := oai.ChatCompletionNewParams{
				Model:    "client-model",
				Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage("look it up")},
			}
			if includeUsage {
				params.StreamOptions = oai.ChatCompletionStreamOptionsParam{IncludeUsage: oai.Bool(true)}
			}
			stream := client.Chat.Completions.NewStreaming(context.Background(), params)
			var acc oai.ChatCompletionAccumulator
			n := 0
			for stream.Next() {
				ch := stream.Current()
				if ch.ID != "chatcmpl-gw42" || ch.Model != "client-model" {
					t.Errorf("chunk header %s %s", ch.ID, ch.Model)
				}
				if !acc.AddChunk(ch) {
					t.Fatalf("accumulator rejected chunk %d", n)
				}
				n++
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if !g.req.Stream || g.req.IncludeUsage != includeUsage {
				t.Errorf("canonical request stream=%v include_usage=%v", g.req.Stream, g.req.IncludeUsage)
			}
			msg := acc.Choices[0].Message
			if msg.Content != "Checking" || acc.Choices[0].FinishReason != "tool_calls" {
				t.Errorf("accumulated: %+v", acc.Choices[0])
			}
			if tc := msg.ToolCalls; len(tc) != 2 || tc[0].ID != "call_a" || tc[0].Function.Name != "lookup" || tc[0].Function.Arguments != `{"k":"v"}` ||
				tc[1].ID != "call_gw42_1" || tc[1].Function.Name != "other" || tc[1].Function.Arguments != "{}" {
				t.Errorf("tool calls: %+v", tc)
			}
			if includeUsage && (acc.Usage.TotalTokens != 25 || acc.Usage.PromptTokens != 10) {
				t.Errorf("usage: %+v", acc.Usage)
			}
			if !includeUsage && acc.Usage.TotalTokens != 0 {
				t.Errorf("usage sent unasked: %+v", acc.Usage)
			}
		})
	}
}

func TestOpenAIGo_Errors(t *testing.T) {
	g, client := newGateway(t)
	ctx := context.Background()
	params := oai.ChatCompletionNewParams{Model: "m", Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage("hi")}}
	for _, tc := range []struct {
		fail             *canon.Error
		params           *oai.ChatCompletionNewParams
		status           int
		typ, code, param string
		msg              string
	}{
		{fail: &canon.Error{Status: 404, Type: canon.ErrNotFound, Code: "model_not_found", Message: "The model `m` does not exist", Param: "model"},
			status: 404, typ: "invalid_request_error", code: "model_not_found", param: "model", msg: "The model `m` does not exist"},
		{fail: &canon.Error{Status: 401, Type: canon.ErrAuthentication, Message: "Incorrect API key provided"},
			status: 401, typ: "authentication_error", code: "invalid_api_key", msg: "Incorrect API key provided"},
		{fail: &canon.Error{Status: 429, Type: canon.ErrRateLimit, Message: "slow down"},
			status: 429, typ: "rate_limit_error", code: "rate_limit_exceeded", msg: "slow down"},
		{fail: &canon.Error{Status: 503, Type: canon.ErrOverloaded},
			status: 503, typ: "server_error", msg: "the model is currently overloaded, please retry"},
		// A request the plugin itself refuses.
		{params: &oai.ChatCompletionNewParams{Model: "m", N: oai.Int(200), Messages: params.Messages},
			status: 400, typ: "invalid_request_error", msg: "n must be between 1 and 128"},
	} {
		g.mu.Lock()
		g.fail = tc.fail
		g.mu.Unlock()
		p := params
		if tc.params != nil {
			p = *tc.params
		}
		_, err := client.Chat.Completions.New(ctx, p)
		var apiErr *oai.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("%+v: got %v, want an *openai.Error", tc.fail, err)
		}
		if apiErr.StatusCode != tc.status || apiErr.Type != tc.typ || apiErr.Code != tc.code || apiErr.Param != tc.param || apiErr.Message != tc.msg {
			t.Errorf("got status %d type %q code %q param %q message %q, want %+v", apiErr.StatusCode, apiErr.Type, apiErr.Code, apiErr.Param, apiErr.Message, tc)
		}
	}
}

func TestOpenAIGo_Models(t *testing.T) {
	g, client := newGateway(t)
	g.models = canon.ModelList{Models: []canon.Model{
		{ID: "qwen3-8b", OwnedBy: "vllm", Created: 1700000000, ContextLength: 32768},
		{ID: "llama3.1:8b"},
	}}
	page, err := client.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 2 || page.Data[0].ID != "qwen3-8b" || page.Data[0].OwnedBy != "vllm" || page.Data[0].Created != 1700000000 ||
		page.Data[0].Object != "model" || page.Data[1].OwnedBy != defaultOwner {
		t.Errorf("models: %+v", page.Data)
	}
	if cl := page.Data[0].JSON.ExtraFields["context_length"]; cl.Raw() != "32768" {
		t.Errorf("context_length = %q", cl.Raw())
	}
}
