package canon

import (
	"encoding/base64"
	"encoding/binary"
	"math"

	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// The encoder appends JSON directly. Objects are written field by field;
// key decides whether a comma is needed by looking at the last byte written:
// right after '{' (or '[') no element has been written yet, and no complete
// JSON value ends with either byte.

// key appends the object key k (plain ASCII, no escaping needed).
func key(b []byte, k string) []byte {
	if b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, k...)
	return append(b, '"', ':')
}

// elem appends the separator before an array element.
func elem(b []byte) []byte {
	if b[len(b)-1] != '[' {
		b = append(b, ',')
	}
	return b
}

func str(b []byte, k, v string) []byte {
	if v == "" {
		return b
	}
	return jsonw.String(key(b, k), v)
}

func num(b []byte, k string, v int64) []byte {
	if v == 0 {
		return b
	}
	return jsonw.Int(key(b, k), v)
}

func flt(b []byte, k string, v float64) []byte {
	if v == 0 {
		return b
	}
	return jsonw.Float(key(b, k), v)
}

func flag(b []byte, k string, v bool) []byte {
	if !v {
		return b
	}
	return append(key(b, k), "true"...)
}

func fptr(b []byte, k string, v *float64) []byte {
	if v == nil {
		return b
	}
	return jsonw.Float(key(b, k), *v)
}

func bptr(b []byte, k string, v *bool) []byte {
	if v == nil {
		return b
	}
	return jsonw.Bool(key(b, k), *v)
}

func raw(b []byte, k string, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	return append(key(b, k), v...)
}

func strs(b []byte, k string, v []string) []byte {
	if len(v) == 0 {
		return b
	}
	b = append(key(b, k), '[')
	for i := range v {
		b = jsonw.String(elem(b), v[i])
	}
	return append(b, ']')
}

// AppendJSON appends u as a JSON object. The three main counts are always
// written; reasoning and cached tokens only when non-zero.
func (u *Usage) AppendJSON(dst []byte) []byte {
	b := append(dst, `{"prompt_tokens":`...)
	b = jsonw.Int(b, int64(u.PromptTokens))
	b = append(b, `,"completion_tokens":`...)
	b = jsonw.Int(b, int64(u.CompletionTokens))
	b = append(b, `,"total_tokens":`...)
	b = jsonw.Int(b, int64(u.TotalTokens))
	b = num(b, "reasoning_tokens", int64(u.ReasoningTokens))
	b = num(b, "cached_tokens", int64(u.CachedTokens))
	return append(b, '}')
}

func usage(b []byte, u *Usage) []byte {
	if u == nil {
		return b
	}
	return u.AppendJSON(key(b, "usage"))
}

// AppendJSON appends m as a JSON object.
func (m *Message) AppendJSON(dst []byte) []byte {
	b := append(dst, '{')
	b = str(b, "role", string(m.Role))
	if len(m.Content) > 0 {
		b = append(key(b, "content"), '[')
		for i := range m.Content {
			p := &m.Content[i]
			b = append(elem(b), '{')
			b = str(b, "type", string(p.Type))
			b = str(b, "text", p.Text)
			b = str(b, "url", p.URL)
			b = str(b, "media_type", p.MediaType)
			b = str(b, "data", p.Data)
			b = str(b, "detail", p.Detail)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = str(b, "name", m.Name)
	if len(m.ToolCalls) > 0 {
		b = append(key(b, "tool_calls"), '[')
		for i := range m.ToolCalls {
			tc := &m.ToolCalls[i]
			b = append(elem(b), '{')
			b = str(b, "id", tc.ID)
			b = str(b, "name", tc.Name)
			b = str(b, "arguments", tc.Arguments)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = str(b, "tool_call_id", m.ToolCallID)
	b = str(b, "reasoning", m.Reasoning)
	return append(b, '}')
}

// AppendJSON appends x as canonical JSON.
func (x *ChatRequest) AppendJSON(dst []byte) []byte {
	b := append(dst, '{')
	b = str(b, "model", x.Model)
	if len(x.Messages) > 0 {
		b = append(key(b, "messages"), '[')
		for i := range x.Messages {
			b = x.Messages[i].AppendJSON(elem(b))
		}
		b = append(b, ']')
	}
	b = strs(b, "prompt", x.Prompt)
	b = flag(b, "stream", x.Stream)
	b = flag(b, "include_usage", x.IncludeUsage)
	b = num(b, "max_tokens", int64(x.MaxTokens))
	b = fptr(b, "temperature", x.Temperature)
	b = fptr(b, "top_p", x.TopP)
	if x.TopK != nil {
		b = jsonw.Int(key(b, "top_k"), int64(*x.TopK))
	}
	b = fptr(b, "min_p", x.MinP)
	b = fptr(b, "repetition_penalty", x.RepetitionPenalty)
	b = fptr(b, "frequency_penalty", x.FrequencyPenalty)
	b = fptr(b, "presence_penalty", x.PresencePenalty)
	if x.Seed != nil {
		b = jsonw.Int(key(b, "seed"), *x.Seed)
	}
	b = strs(b, "stop", x.Stop)
	b = num(b, "n", int64(x.N))
	b = flag(b, "logprobs", x.Logprobs)
	b = num(b, "top_logprobs", int64(x.TopLogprobs))
	if rf := x.ResponseFormat; rf != nil {
		b = append(key(b, "response_format"), '{')
		b = str(b, "type", string(rf.Type))
		b = str(b, "name", rf.Name)
		b = raw(b, "schema", rf.Schema)
		b = flag(b, "strict", rf.Strict)
		b = append(b, '}')
	}
	b = str(b, "think", string(x.Think))
	b = num(b, "think_budget", int64(x.ThinkBudget))
	b = flag(b, "think_optional", x.ThinkOptional)
	if len(x.Tools) > 0 {
		b = append(key(b, "tools"), '[')
		for i := range x.Tools {
			t := &x.Tools[i]
			b = append(elem(b), '{')
			b = str(b, "name", t.Name)
			b = str(b, "description", t.Description)
			b = raw(b, "parameters", t.Parameters)
			b = flag(b, "strict", t.Strict)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if tc := x.ToolChoice; tc != nil {
		b = append(key(b, "tool_choice"), '{')
		b = str(b, "mode", string(tc.Mode))
		b = str(b, "name", tc.Name)
		b = append(b, '}')
	}
	b = bptr(b, "parallel_tool_calls", x.ParallelToolCalls)
	b = str(b, "user", x.User)
	b = flag(b, "truncate_oldest", x.TruncateOldest)
	b = num(b, "context_length", int64(x.ContextLength))
	return append(b, '}')
}

// AppendJSON appends x as canonical JSON.
func (x *ChatResponse) AppendJSON(dst []byte) []byte {
	b := append(dst, '{')
	b = str(b, "id", x.ID)
	b = str(b, "model", x.Model)
	b = num(b, "created", x.Created)
	if len(x.Choices) > 0 {
		b = append(key(b, "choices"), '[')
		for i := range x.Choices {
			c := &x.Choices[i]
			b = append(elem(b), `{"index":`...)
			b = jsonw.Int(b, int64(c.Index))
			b = c.Message.AppendJSON(key(b, "message"))
			b = str(b, "finish_reason", string(c.FinishReason))
			b = raw(b, "logprobs", c.Logprobs)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = usage(b, x.Usage)
	return append(b, '}')
}

// AppendJSON appends x as canonical JSON. The choices array is always
// written, possibly empty.
func (x *ChatChunk) AppendJSON(dst []byte) []byte {
	b := append(dst, '{')
	b = str(b, "id", x.ID)
	b = str(b, "model", x.Model)
	b = num(b, "created", x.Created)
	b = append(key(b, "choices"), '[')
	for i := range x.Choices {
		c := &x.Choices[i]
		b = append(elem(b), `{"index":`...)
		b = jsonw.Int(b, int64(c.Index))
		b = append(b, `,"delta":{`...)
		d := &c.Delta
		b = str(b, "role", string(d.Role))
		b = str(b, "content", d.Content)
		b = str(b, "reasoning", d.Reasoning)
		if len(d.ToolCalls) > 0 {
			b = append(key(b, "tool_calls"), '[')
			for j := range d.ToolCalls {
				tc := &d.ToolCalls[j]
				b = append(elem(b), `{"index":`...)
				b = jsonw.Int(b, int64(tc.Index))
				b = str(b, "id", tc.ID)
				b = str(b, "name", tc.Name)
				b = str(b, "arguments", tc.Arguments)
				b = append(b, '}')
			}
			b = append(b, ']')
		}
		b = append(b, '}')
		b = str(b, "finish_reason", string(c.FinishReason))
		b = raw(b, "logprobs", c.Logprobs)
		b = append(b, '}')
	}
	b = append(b, ']')
	b = usage(b, x.Usage)
	return append(b, '}')
}

// AppendJSON appends x as canonical JSON.
func (x *EmbeddingRequest) AppendJSON(dst []byte) []byte {
	b := append(dst, '{')
	b = str(b, "model", x.Model)
	b = strs(b, "input", x.Input)
	b = num(b, "dimensions", int64(x.Dimensions))
	b = str(b, "encoding_format", x.EncodingFormat)
	b = str(b, "user", x.User)
	return append(b, '}')
}

// AppendJSON appends x as canonical JSON. Each vector is a string: the
// standard base64 of its float32 values, little-endian — exact, and about
// thirty times cheaper to write and read in WebAssembly than decimal
// numbers (a 3072-float response took milliseconds as text). Non-finite
// elements are written as zero. DecodeJSON also reads vectors written as
// arrays of numbers.
func (x *EmbeddingResponse) AppendJSON(dst []byte) []byte {
	b := append(dst, '{')
	b = str(b, "model", x.Model)
	if len(x.Vectors) > 0 {
		b = append(key(b, "vectors"), '[')
		var raw []byte
		for i := range x.Vectors {
			raw = raw[:0]
			for _, f := range x.Vectors[i] {
				if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
					f = 0
				}
				raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(f))
			}
			b = append(elem(b), '"')
			b = base64.StdEncoding.AppendEncode(b, raw)
			b = append(b, '"')
		}
		b = append(b, ']')
	}
	b = usage(b, x.Usage)
	return append(b, '}')
}

// AppendJSON appends x as canonical JSON.
func (x *Error) AppendJSON(dst []byte) []byte {
	b := append(dst, '{')
	b = num(b, "status", int64(x.Status))
	b = str(b, "type", string(x.Type))
	b = str(b, "code", x.Code)
	b = str(b, "message", x.Message)
	b = str(b, "param", x.Param)
	b = str(b, "request_id", x.RequestID)
	return append(b, '}')
}

// AppendJSON appends x as canonical JSON. The models array is always written.
func (x *ModelList) AppendJSON(dst []byte) []byte {
	b := append(dst, `{"models":[`...)
	for i := range x.Models {
		m := &x.Models[i]
		b = append(elem(b), '{')
		b = str(b, "id", m.ID)
		b = str(b, "owned_by", m.OwnedBy)
		b = num(b, "created", m.Created)
		b = num(b, "context_length", int64(m.ContextLength))
		b = strs(b, "backends", m.Backends)
		b = flag(b, "loaded", m.Loaded)
		b = num(b, "size_bytes", m.SizeBytes)
		b = str(b, "family", m.Family)
		b = strs(b, "capabilities", m.Capabilities)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// AppendJSON appends x as canonical JSON.
func (x *Discovery) AppendJSON(dst []byte) []byte {
	b := append(dst, '{')
	b = bptr(b, "healthy", x.Healthy)
	if len(x.Models) > 0 {
		b = append(key(b, "models"), '[')
		for i := range x.Models {
			m := &x.Models[i]
			b = append(elem(b), '{')
			b = str(b, "name", m.Name)
			b = flag(b, "loaded", m.Loaded)
			b = num(b, "context_length", int64(m.ContextLength))
			b = num(b, "size_bytes", m.SizeBytes)
			b = str(b, "family", m.Family)
			b = strs(b, "capabilities", m.Capabilities)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = str(b, "version", x.Version)
	b = flag(b, "has_load", x.HasLoad)
	b = flt(b, "running", x.Running)
	b = flt(b, "waiting", x.Waiting)
	b = flt(b, "kv_cache_usage", x.KVCacheUsage)
	return append(b, '}')
}
