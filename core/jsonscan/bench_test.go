package jsonscan

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// routeSpec holds the fields the host routes on.
var routeSpec = MustSpec("model", "stream", "stream_options.include_usage", "max_tokens",
	"max_completion_tokens", "max_output_tokens", "options.num_predict", "n")

// needsSpec is routeSpec with the OpenAI translator's markers of what a
// request needs (vision, tools, structured output).
var needsSpec = mustSpecMarkers([]string{"model", "stream", "stream_options.include_usage", "max_tokens",
	"max_completion_tokens", "max_output_tokens", "options.num_predict", "n"},
	[]string{"*.type=image_url", "tools", "response_format.type=json_object", "response_format.type=json_schema"})

type benchMsg struct {
	Role       string `json:"role"`
	Content    any    `json:"content,omitempty"`
	ToolCalls  []any  `json:"tool_calls,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
}

func benchBody(msgs []benchMsg) []byte {
	b, err := json.Marshal(map[string]any{
		"model":          "llama-3.1-8b-instruct",
		"messages":       msgs,
		"stream":         true,
		"stream_options": map[string]any{"include_usage": true},
		"max_tokens":     1024,
		"temperature":    0.7,
		"top_p":          0.9,
		"seed":           42,
		"stop":           []string{"<|eot_id|>"},
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{
			"name": "search", "description": "Search the web for up-to-date information.",
			"parameters": json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"search terms"},"limit":{"type":"integer","minimum":1,"maximum":10}},"required":["query"]}`),
		}}},
		"tool_choice": "auto",
		"user":        "user-1234",
	})
	if err != nil {
		panic(err)
	}
	return b
}

// chatBody is a typical chat request of about 2 KiB.
func chatBody() []byte {
	return benchBody([]benchMsg{
		{Role: "system", Content: "You are a helpful assistant. Answer concisely, cite sources when you can, and say so when you do not know. Format code with Markdown fences."},
		{Role: "user", Content: "What is the capital of France, and what is it famous for? Please give three examples."},
		{Role: "assistant", ToolCalls: []any{map[string]any{"id": "call_abc123", "type": "function",
			"function": map[string]any{"name": "search", "arguments": `{"query":"Paris famous landmarks","limit":3}`}}}},
		{Role: "tool", ToolCallID: "call_abc123", Content: `[{"title":"Eiffel Tower","snippet":"The wrought-iron lattice tower on the Champ de Mars, built for the 1889 World's Fair."},{"title":"Louvre","snippet":"The world's most-visited art museum, home of the Mona Lisa."},{"title":"Notre-Dame","snippet":"The medieval Catholic cathedral on the Île de la Cité."}]`},
		{Role: "assistant", Content: "Paris is the capital of France. It is famous for:\n\n1. **The Eiffel Tower**, built for the 1889 World's Fair.\n2. **The Louvre**, home of the \"Mona Lisa\".\n3. **Notre-Dame**, the Gothic cathedral on the Île de la Cité."},
		{Role: "user", Content: []any{map[string]any{"type": "text", "text": "Thanks! Now tell me about its cafés — briefly."}}},
		{Role: "assistant", Content: "Parisian cafés are neighbourhood institutions: small round tables facing the street, a short menu of espresso, crème, wine and croque-monsieur, and waiters who let you linger for hours.\n\nFamous ones include Les Deux Magots and Café de Flore in Saint-Germain, once frequented by Sartre and de Beauvoir."},
		{Role: "user", Content: "Which one should I visit first?"},
	})
}

// conversationBody is a long conversation of about 200 KiB.
func conversationBody() []byte {
	r := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("the quick brown fox jumps over lazy dog model token stream request gateway backend plugin café naïve 漢字 \"quoted\" tab\tline\n")
	var msgs []benchMsg
	for i := 0; len(msgs) < 260; i++ {
		var sb strings.Builder
		for n := 50 + r.IntN(150); n > 0; n-- {
			sb.WriteString(words[r.IntN(len(words))])
			sb.WriteByte(' ')
		}
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, benchMsg{Role: role, Content: sb.String()})
	}
	return benchBody(msgs)
}

// imageBody is a request with a base64 image of about 1 MiB.
func imageBody() []byte {
	img := make([]byte, 750_000)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range img {
		img[i] = byte(r.Uint32())
	}
	return benchBody([]benchMsg{{Role: "user", Content: []any{
		map[string]any{"type": "text", "text": "What is in this picture?"},
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + base64.StdEncoding.EncodeToString(img)}},
	}}})
}

var benchBodies = []struct {
	name string
	body func() []byte
}{
	{"chat2K", chatBody},
	{"conversation200K", conversationBody},
	{"image1M", imageBody},
	{"chat2K_indented", func() []byte {
		var b bytes.Buffer
		if err := json.Indent(&b, chatBody(), "", "  "); err != nil {
			panic(err)
		}
		return b.Bytes()
	}},
}

var benchLimits = Limits{MaxDepth: 128, MaxValues: 1 << 20}

func BenchmarkScan(b *testing.B) {
	for _, bb := range benchBodies {
		body := bb.body()
		b.Run(bb.name+"_"+strconv.Itoa(len(body)>>10)+"K", func(b *testing.B) {
			var res Result
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if err := Scan(body, routeSpec, benchLimits, &res); err != nil || res.Found&1 == 0 {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkScanNeeds is BenchmarkScan with markers of the request's
// needs, to compare with it: the cost of the markers on every key.
func BenchmarkScanNeeds(b *testing.B) {
	for _, bb := range benchBodies {
		body := bb.body()
		b.Run(bb.name+"_"+strconv.Itoa(len(body)>>10)+"K", func(b *testing.B) {
			var res Result
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if err := Scan(body, needsSpec, benchLimits, &res); err != nil || res.Marks&2 == 0 {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkJSONValid is encoding/json.Valid on the same bodies, for
// comparison.
func BenchmarkJSONValid(b *testing.B) {
	for _, bb := range benchBodies {
		body := bb.body()
		b.Run(bb.name+"_"+strconv.Itoa(len(body)>>10)+"K", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if !json.Valid(body) {
					b.Fatal("invalid")
				}
			}
		})
	}
}
