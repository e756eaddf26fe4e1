//go:build wasip1

// Command wasmbench times the canonical codec inside WebAssembly, where
// plugins run it. Build and run it with any WASI runtime, e.g.
//
//	GOOS=wasip1 GOARCH=wasm go -C sdk build -o /tmp/wb.wasm ./canon/internal/wasmbench
//	wazero run /tmp/wb.wasm   # or a small runner with sys walltime/nanotime
//
// It prints Go benchmark lines, for benchstat. Flags: -test.benchtime
// (default 1s), -count, -filter (substring of a benchmark name). The
// fixtures mirror sdk/canon/bench_test.go.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/canon"
)

type codec interface {
	AppendJSON([]byte) []byte
	DecodeJSON([]byte) error
}

func ptr[T any](v T) *T { return &v }

func chunk() *canon.ChatChunk {
	return &canon.ChatChunk{ID: "chatcmpl-9a8b7c6d5e4f", Model: "qwen3-8b", Created: 1700000000,
		Choices: []canon.ChunkChoice{{Index: 0, Delta: canon.Delta{Content: " the quick brown"}}}}
}

func request() *canon.ChatRequest {
	return &canon.ChatRequest{
		Model: "llama-3.1-8b-instruct",
		Messages: []canon.Message{
			{Role: canon.RoleSystem, Content: []canon.Part{{Type: canon.PartText, Text: "You are a helpful assistant. Answer concisely and cite sources when you can."}}},
			{Role: canon.RoleUser, Content: []canon.Part{{Type: canon.PartText, Text: "What is the capital of France, and what is it famous for? Please give three examples."}}},
			{Role: canon.RoleAssistant, ToolCalls: []canon.ToolCall{{ID: "call_abc123", Name: "search", Arguments: `{"query":"Paris famous landmarks","limit":3}`}}},
			{Role: canon.RoleTool, ToolCallID: "call_abc123", Content: []canon.Part{{Type: canon.PartText, Text: `[{"title":"Eiffel Tower"},{"title":"Louvre"},{"title":"Notre-Dame"}]`}}},
		},
		Stream: true, IncludeUsage: true, MaxTokens: 1024,
		Temperature: ptr(0.7), TopP: ptr(0.9), Seed: ptr(int64(42)),
		Stop: []string{"<|eot_id|>"},
		Tools: []canon.Tool{{Name: "search", Description: "Search the web for up-to-date information.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"search terms"},"limit":{"type":"integer","minimum":1,"maximum":10}},"required":["query"]}`)}},
		ToolChoice:    &canon.ToolChoice{Mode: canon.ToolChoiceAuto},
		User:          "user-1234",
		ContextLength: 131072,
	}
}

func response() *canon.ChatResponse {
	return &canon.ChatResponse{ID: "chatcmpl-9a8b7c6d5e4f3a2b1c0d", Model: "llama-3.1-8b-instruct", Created: 1700000000,
		Choices: []canon.Choice{{Index: 0, Message: canon.Message{Role: canon.RoleAssistant, Reasoning: "The user wants the capital of France and three things it is famous for.",
			Content:   []canon.Part{{Type: canon.PartText, Text: "Paris is the capital of France. It is famous for:\n\n1. **The Eiffel Tower**, the wrought-iron lattice tower built for the 1889 World's Fair.\n2. **The Louvre**, the world's most-visited art museum and home of the \"Mona Lisa\".\n3. **Its cuisine and café culture**: croissants, baguettes and bistros on every corner.\n\nIt is also known for Notre-Dame cathedral, the Seine and its fashion houses."}},
			ToolCalls: []canon.ToolCall{{ID: "call_def456", Name: "search", Arguments: `{"query":"Paris facts","limit":5}`}}},
			FinishReason: canon.FinishStop}},
		Usage: &canon.Usage{PromptTokens: 312, CompletionTokens: 128, TotalTokens: 440, ReasoningTokens: 20}}
}

func bench[T any, P interface {
	*T
	codec
}](name string, in P) {
	buf := in.AppendJSON(nil)
	run := func(op string, f func(b *testing.B)) {
		name := "Benchmark" + name + "/" + op
		if !strings.Contains(name, *filter) {
			return
		}
		for range *count {
			r := testing.Benchmark(func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(buf)))
				f(b)
			})
			ns := float64(r.T.Nanoseconds()) / float64(r.N)
			fmt.Printf("%s-wasm\t%8d\t%10.1f ns/op\t%7.2f MB/s\t%6d B/op\t%4d allocs/op\n",
				name, r.N, ns, float64(len(buf))*1e3/ns, r.AllocedBytesPerOp(), r.AllocsPerOp())
		}
	}
	run("decode", func(b *testing.B) {
		var out T
		for b.Loop() {
			if err := P(&out).DecodeJSON(buf); err != nil {
				panic(err)
			}
		}
	})
	run("encode", func(b *testing.B) {
		out := make([]byte, 0, 2*len(buf))
		for b.Loop() {
			out = in.AppendJSON(out[:0])
		}
	})
}

var (
	filter = flag.String("filter", "", "run only benchmarks whose name contains this")
	count  = flag.Int("count", 1, "run each benchmark this many times")
)

func main() {
	testing.Init()
	flag.Parse()
	// Go benchmark format, for benchstat.
	fmt.Print("goos: wasip1\ngoarch: wasm\npkg: github.com/mindrouter/mindrouter/sdk/canon\n")
	bench("ChatChunk", chunk())
	bench("ChatRequest", request())
	bench("ChatResponse", response())
	os.Exit(0)
}
