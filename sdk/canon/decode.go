package canon

import (
	"github.com/valyala/fastjson"
)

type jv = fastjson.Value

// DecodeJSON resets x and fills it from canonical JSON.
func (x *ChatRequest) DecodeJSON(data []byte) error {
	*x = ChatRequest{}
	return decode("chat request", data, x.decode)
}

func (x *ChatRequest) decode(d *decoder, v *jv) error {
	return fields(v, func(k []byte, v *jv) (err error) {
		switch string(k) {
		case "model":
			x.Model, err = getString(v)
		case "messages":
			x.Messages, err = slice(d, v, (*Message).decode)
		case "stream":
			x.Stream, err = getBool(v)
		case "include_usage":
			x.IncludeUsage, err = getBool(v)
		case "max_tokens":
			x.MaxTokens, err = getInt(d, v)
		case "temperature":
			x.Temperature, err = getFloatPtr(d, v)
		case "top_p":
			x.TopP, err = getFloatPtr(d, v)
		case "top_k":
			x.TopK, err = getIntPtr(d, v)
		case "min_p":
			x.MinP, err = getFloatPtr(d, v)
		case "repetition_penalty":
			x.RepetitionPenalty, err = getFloatPtr(d, v)
		case "frequency_penalty":
			x.FrequencyPenalty, err = getFloatPtr(d, v)
		case "presence_penalty":
			x.PresencePenalty, err = getFloatPtr(d, v)
		case "seed":
			x.Seed, err = getInt64Ptr(d, v)
		case "stop":
			x.Stop, err = getStrings(d, v)
		case "n":
			x.N, err = getInt(d, v)
		case "response_format":
			x.ResponseFormat, err = getResponseFormat(v)
		case "think":
			var s string
			s, err = getString(v)
			x.Think = Think(s)
		case "think_budget":
			x.ThinkBudget, err = getInt(d, v)
		case "tools":
			x.Tools, err = slice(d, v, (*Tool).decode)
		case "tool_choice":
			x.ToolChoice, err = getToolChoice(v)
		case "parallel_tool_calls":
			x.ParallelToolCalls, err = getBoolPtr(v)
		case "user":
			x.User, err = getString(v)
		case "context_length":
			x.ContextLength, err = getInt(d, v)
		}
		return err
	})
}

func getResponseFormat(v *jv) (*ResponseFormat, error) {
	if v.Type() == fastjson.TypeNull {
		return nil, nil
	}
	rf := new(ResponseFormat)
	return rf, fields(v, func(k []byte, v *jv) (err error) {
		switch string(k) {
		case "type":
			var s string
			s, err = getString(v)
			rf.Type = FormatType(s)
		case "name":
			rf.Name, err = getString(v)
		case "schema":
			rf.Schema, err = getRaw(v)
		case "strict":
			rf.Strict, err = getBool(v)
		}
		return err
	})
}

func getToolChoice(v *jv) (*ToolChoice, error) {
	if v.Type() == fastjson.TypeNull {
		return nil, nil
	}
	tc := new(ToolChoice)
	return tc, fields(v, func(k []byte, v *jv) (err error) {
		switch string(k) {
		case "mode":
			var s string
			s, err = getString(v)
			tc.Mode = ToolChoiceMode(s)
		case "name":
			tc.Name, err = getString(v)
		}
		return err
	})
}

func (t *Tool) decode(d *decoder, v *jv) error {
	return fields(v, func(k []byte, v *jv) (err error) {
		switch string(k) {
		case "name":
			t.Name, err = getString(v)
		case "description":
			t.Description, err = getString(v)
		case "parameters":
			t.Parameters, err = getRaw(v)
		case "strict":
			t.Strict, err = getBool(v)
		}
		return err
	})
}

// DecodeJSON resets m and fills it from canonical JSON.
func (m *Message) DecodeJSON(data []byte) error {
	*m = Message{}
	return decode("message", data, m.decode)
}

func (m *Message) decode(d *decoder, v *jv) error {
	return fields(v, func(k []byte, v *jv) (err error) {
		switch string(k) {
		case "role":
			var s string
			s, err = getString(v)
			m.Role = Role(s)
		case "content":
			m.Content, err = slice(d, v, (*Part).decode)
		case "name":
			m.Name, err = getString(v)
		case "tool_calls":
			m.ToolCalls, err = slice(d, v, (*ToolCall).decode)
		case "tool_call_id":
			m.ToolCallID, err = getString(v)
		case "reasoning":
			m.Reasoning, err = getString(v)
		}
		return err
	})
}

func (p *Part) decode(d *decoder, v *jv) error {
	return fields(v, func(k []byte, v *jv) (err error) {
		switch string(k) {
		case "type":
			var s string
			s, err = getString(v)
			p.Type = PartType(s)
		case "text":
			p.Text, err = getString(v)
		case "url":
			p.URL, err = getString(v)
		case "media_type":
			p.MediaType, err = getString(v)
		case "data":
			p.Data, err = getString(v)
		case "detail":
			p.Detail, err = getString(v)
		}
		return err
	})
}

func (tc *ToolCall) decode(d *decoder, v *jv) error {
	return fields(v, func(k []byte, v *jv) (err error) {
		switch string(k) {
		case "id":
			tc.ID, err = getString(v)
		case "name":
			tc.Name, err = getString(v)
		case "arguments":
			tc.Arguments, err = getString(v)
		}
		return err
	})
}

// DecodeJSON resets u and fills it from canonical JSON.
func (u *Usage) DecodeJSON(data []byte) error {
	*u = Usage{}
	return decode("usage", data, u.decode)
}

func (u *Usage) decode(d *decoder, v *jv) error {
	return fields(v, func(k []byte, v *jv) (err error) {
		switch string(k) {
		case "prompt_tokens":
			u.PromptTokens, err = getInt(d, v)
		case "completion_tokens":
			u.CompletionTokens, err = getInt(d, v)
		case "total_tokens":
			u.TotalTokens, err = getInt(d, v)
		case "reasoning_tokens":
			u.ReasoningTokens, err = getInt(d, v)
		case "cached_tokens":
			u.CachedTokens, err = getInt(d, v)
		}
		return err
	})
}

func getUsage(d *decoder, v *jv) (*Usage, error) {
	if v.Type() == fastjson.TypeNull {
		return nil, nil
	}
	u := new(Usage)
	return u, u.decode(d, v)
}

func getFinish(v *jv) (FinishReason, error) {
	s, err := getString(v)
	return FinishReason(s), err
}

// DecodeJSON resets x and fills it from canonical JSON.
func (x *ChatResponse) DecodeJSON(data []byte) error {
	*x = ChatResponse{}
	return decode("chat response", data, x.decode)
}

func (x *ChatResponse) decode(d *decoder, v *jv) error {
	return fields(v, func(k []byte, v *jv) (err error) {
		switch string(k) {
		case "id":
			x.ID, err = getString(v)
		case "model":
			x.Model, err = getString(v)
		case "created":
			x.Created, _, err = getInt64(d, v)
		case "choices":
			x.Choices, err = slice(d, v, (*Choice).decode)
		case "usage":
			x.Usage, err = getUsage(d, v)
		}
		return err
	})
}

func (c *Choice) decode(d *decoder, v *jv) error {
	return fields(v, func(k []byte, v *jv) (err error) {
		switch string(k) {
		case "index":
			c.Index, err = getInt(d, v)
		case "message":
			c.Message = Message{}
			err = c.Message.decode(d, v)
		case "finish_reason":
			c.FinishReason, err = getFinish(v)
		}
		return err
	})
}

// DecodeJSON resets x and fills it from canonical JSON.
func (x *ChatChunk) DecodeJSON(data []byte) error {
	*x = ChatChunk{}
	return decode("chat chunk", data, x.decode)
}

func (x *ChatChunk) decode(d *decoder, v *jv) error {
	return fields(v, func(k []byte, v *jv) (err error) {
		switch string(k) {
		case "id":
			x.ID, err = getString(v)
		case "model":
			x.Model, err = getString(v)
		case "created":
			x.Created, _, err = getInt64(d, v)
		case "choices":
			x.Choices, err = slice(d, v, (*ChunkChoice).decode)
		case "usage":
			x.Usage, err = getUsage(d, v)
		}
		return err
	})
}

func (c *ChunkChoice) decode(d *decoder, v *jv) error {
	return fields(v, func(k []byte, v *jv) (err error) {
		switch string(k) {
		case "index":
			c.Index, err = getInt(d, v)
		case "delta":
			c.Delta = Delta{}
			err = c.Delta.decode(d, v)
		case "finish_reason":
			c.FinishReason, err = getFinish(v)
		}
		return err
	})
}

func (dl *Delta) decode(d *decoder, v *jv) error {
	return fields(v, func(k []byte, v *jv) (err error) {
		switch string(k) {
		case "role":
			var s string
			s, err = getString(v)
			dl.Role = Role(s)
		case "content":
			dl.Content, err = getString(v)
		case "reasoning":
			dl.Reasoning, err = getString(v)
		case "tool_calls":
			dl.ToolCalls, err = slice(d, v, (*ToolCallDelta).decode)
		}
		return err
	})
}

func (tc *ToolCallDelta) decode(d *decoder, v *jv) error {
	return fields(v, func(k []byte, v *jv) (err error) {
		switch string(k) {
		case "index":
			tc.Index, err = getInt(d, v)
		case "id":
			tc.ID, err = getString(v)
		case "name":
			tc.Name, err = getString(v)
		case "arguments":
			tc.Arguments, err = getString(v)
		}
		return err
	})
}
