package canon

import (
	"encoding/json"
	"testing"
)

func benchChunk() *ChatChunk {
	return &ChatChunk{ID: "chatcmpl-9a8b7c6d5e4f", Model: "qwen3-8b", Created: 1700000000,
		Choices: []ChunkChoice{{Index: 0, Delta: Delta{Content: " the quick brown"}}}}
}

// benchRequest is about 1 KiB of JSON.
func benchRequest() *ChatRequest {
	return &ChatRequest{
		Model: "llama-3.1-8b-instruct",
		Messages: []Message{
			{Role: RoleSystem, Content: []Part{{Type: PartText, Text: "You are a helpful assistant. Answer concisely and cite sources when you can."}}},
			{Role: RoleUser, Content: []Part{{Type: PartText, Text: "What is the capital of France, and what is it famous for? Please give three examples."}}},
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "call_abc123", Name: "search", Arguments: `{"query":"Paris famous landmarks","limit":3}`}}},
			{Role: RoleTool, ToolCallID: "call_abc123", Content: []Part{{Type: PartText, Text: `[{"title":"Eiffel Tower"},{"title":"Louvre"},{"title":"Notre-Dame"}]`}}},
		},
		Stream: true, IncludeUsage: true, MaxTokens: 1024,
		Temperature: ptr(0.7), TopP: ptr(0.9), Seed: ptr(int64(42)),
		Stop: []string{"<|eot_id|>"},
		Tools: []Tool{{Name: "search", Description: "Search the web for up-to-date information.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"search terms"},"limit":{"type":"integer","minimum":1,"maximum":10}},"required":["query"]}`)}},
		ToolChoice:    &ToolChoice{Mode: ToolChoiceAuto},
		User:          "user-1234",
		ContextLength: 131072,
	}
}

// benchResponse is a typical non-streamed answer, about 1 KiB of JSON.
func benchResponse() *ChatResponse {
	return &ChatResponse{ID: "chatcmpl-9a8b7c6d5e4f3a2b1c0d", Model: "llama-3.1-8b-instruct", Created: 1700000000,
		Choices: []Choice{{Index: 0, Message: Message{Role: RoleAssistant, Reasoning: "The user wants the capital of France and three things it is famous for.",
			Content:   []Part{{Type: PartText, Text: "Paris is the capital of France. It is famous for:\n\n1. **The Eiffel Tower**, the wrought-iron lattice tower built for the 1889 World's Fair.\n2. **The Louvre**, the world's most-visited art museum and home of the \"Mona Lisa\".\n3. **Its cuisine and café culture**: croissants, baguettes and bistros on every corner.\n\nIt is also known for Notre-Dame cathedral, the Seine and its fashion houses."}},
			ToolCalls: []ToolCall{{ID: "call_def456", Name: "search", Arguments: `{"query":"Paris facts","limit":5}`}}},
			FinishReason: FinishStop}},
		Usage: &Usage{PromptTokens: 312, CompletionTokens: 128, TotalTokens: 440, ReasoningTokens: 20}}
}

func benchEncodeDecode[T any, P interface {
	*T
	codec
}](b *testing.B, in P) {
	buf := in.AppendJSON(nil)
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			buf = in.AppendJSON(buf[:0])
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(buf)))
		var out T
		for b.Loop() {
			if err := P(&out).DecodeJSON(buf); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json-decode", func(b *testing.B) {
		// For scale only: encoding/json into a map.
		b.ReportAllocs()
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			var m map[string]any
			if err := json.Unmarshal(buf, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkChatChunk(b *testing.B) { benchEncodeDecode(b, benchChunk()) }

func BenchmarkChatResponse(b *testing.B) { benchEncodeDecode(b, benchResponse()) }

func BenchmarkChatRequest(b *testing.B) {
	if n := len(benchRequest().AppendJSON(nil)); n < 900 || n > 1300 {
		b.Fatalf("bench request is %d bytes, want about 1 KiB", n)
	}
	benchEncodeDecode(b, benchRequest())
}
