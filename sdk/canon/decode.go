package canon

import "encoding/json"

// Each type's decode fills the value from the object at tape index i. The
// member loop is the same everywhere: keys at j, values at j+1, and an error
// is located by the member's key.

// DecodeJSON resets x and fills it from canonical JSON.
func (x *ChatRequest) DecodeJSON(data []byte) error {
	*x = ChatRequest{}
	d, err := start(data)
	if err == nil {
		err = x.decode(d, 0)
	}
	return d.finish("chat request", err)
}

// reqOptional holds a request's optional values, so that they take one
// allocation however many are set.
type reqOptional struct {
	temperature, topP, minP, repetitionPenalty, frequencyPenalty, presencePenalty float64

	topK              int
	seed              int64
	parallelToolCalls bool
	responseFormat    ResponseFormat
	toolChoice        ToolChoice
}

// Bits of the reqOptional fields that are set.
const (
	optTemperature uint16 = 1 << iota
	optTopP
	optMinP
	optRepetitionPenalty
	optFrequencyPenalty
	optPresencePenalty
	optTopK
	optSeed
	optParallelToolCalls
	optResponseFormat
	optToolChoice
)

// setIf sets or clears bit in set.
func setIf(set *uint16, bit uint16, ok bool) {
	if ok {
		*set |= bit
	} else {
		*set &^= bit
	}
}

func (d *decoder) optFloat(i int, p *float64, set *uint16, bit uint16) error {
	f, ok, err := d.float(i, 64)
	*p = f
	setIf(set, bit, ok)
	return err
}

func (x *ChatRequest) decode(d *decoder, i int) error {
	var o reqOptional
	var set uint16
	j, end, err := d.object(i)
	for ; j < end; j = d.next(j + 1) {
		switch v := j + 1; d.key(j) {
		case "model":
			x.Model, err = d.str(v)
		case "messages":
			// Slabs pay off from two arrays on; count elements, not arrays,
			// which is as good and cheaper.
			parts, calls := d.countMessages(v)
			if parts > 1 {
				d.parts = make([]Part, parts)
			}
			if calls > 1 {
				d.calls = make([]ToolCall, calls)
			}
			x.Messages, err = slice(d, v, (*Message).decode)
		case "prompt":
			x.Prompt, err = d.strings(v)
		case "stream":
			x.Stream, err = d.boolean(v)
		case "include_usage":
			x.IncludeUsage, err = d.boolean(v)
		case "max_tokens":
			x.MaxTokens, err = d.int(v)
		case "temperature":
			err = d.optFloat(v, &o.temperature, &set, optTemperature)
		case "top_p":
			err = d.optFloat(v, &o.topP, &set, optTopP)
		case "top_k":
			var n int64
			var ok bool
			if n, ok, err = d.int64(v); err == nil && int64(int(n)) != n {
				err = errRange
			}
			o.topK = int(n)
			setIf(&set, optTopK, ok && err == nil)
		case "min_p":
			err = d.optFloat(v, &o.minP, &set, optMinP)
		case "repetition_penalty":
			err = d.optFloat(v, &o.repetitionPenalty, &set, optRepetitionPenalty)
		case "frequency_penalty":
			err = d.optFloat(v, &o.frequencyPenalty, &set, optFrequencyPenalty)
		case "presence_penalty":
			err = d.optFloat(v, &o.presencePenalty, &set, optPresencePenalty)
		case "seed":
			var ok bool
			o.seed, ok, err = d.int64(v)
			setIf(&set, optSeed, ok)
		case "stop":
			x.Stop, err = d.strings(v)
		case "n":
			x.N, err = d.int(v)
		case "logprobs":
			x.Logprobs, err = d.boolean(v)
		case "top_logprobs":
			x.TopLogprobs, err = d.int(v)
		case "response_format":
			setIf(&set, optResponseFormat, d.t[v].kind != kNull)
			o.responseFormat = ResponseFormat{}
			err = o.responseFormat.decode(d, v)
		case "think":
			var s string
			s, err = d.str(v)
			x.Think = Think(s)
		case "think_budget":
			x.ThinkBudget, err = d.int(v)
		case "think_optional":
			x.ThinkOptional, err = d.boolean(v)
		case "tools":
			x.Tools, err = slice(d, v, (*Tool).decode)
		case "tool_choice":
			setIf(&set, optToolChoice, d.t[v].kind != kNull)
			o.toolChoice = ToolChoice{}
			err = o.toolChoice.decode(d, v)
		case "parallel_tool_calls":
			setIf(&set, optParallelToolCalls, d.t[v].kind != kNull)
			o.parallelToolCalls, err = d.boolean(v)
		case "user":
			x.User, err = d.str(v)
		case "truncate_oldest":
			x.TruncateOldest, err = d.boolean(v)
		case "context_length":
			x.ContextLength, err = d.int(v)
		}
		if err != nil {
			return d.field(j, err)
		}
	}
	if err == nil && set != 0 {
		x.setOptional(&o, set)
	}
	return err
}

// setOptional points x's optional fields that set says into one copy of o.
func (x *ChatRequest) setOptional(o *reqOptional, set uint16) {
	h := new(reqOptional)
	*h = *o
	if set&optTemperature != 0 {
		x.Temperature = &h.temperature
	}
	if set&optTopP != 0 {
		x.TopP = &h.topP
	}
	if set&optMinP != 0 {
		x.MinP = &h.minP
	}
	if set&optRepetitionPenalty != 0 {
		x.RepetitionPenalty = &h.repetitionPenalty
	}
	if set&optFrequencyPenalty != 0 {
		x.FrequencyPenalty = &h.frequencyPenalty
	}
	if set&optPresencePenalty != 0 {
		x.PresencePenalty = &h.presencePenalty
	}
	if set&optTopK != 0 {
		x.TopK = &h.topK
	}
	if set&optSeed != 0 {
		x.Seed = &h.seed
	}
	if set&optParallelToolCalls != 0 {
		x.ParallelToolCalls = &h.parallelToolCalls
	}
	if set&optResponseFormat != 0 {
		x.ResponseFormat = &h.responseFormat
	}
	if set&optToolChoice != 0 {
		x.ToolChoice = &h.toolChoice
	}
}

func (rf *ResponseFormat) decode(d *decoder, i int) error {
	j, end, err := d.object(i)
	for ; j < end; j = d.next(j + 1) {
		switch v := j + 1; d.key(j) {
		case "type":
			var s string
			s, err = d.str(v)
			rf.Type = FormatType(s)
		case "name":
			rf.Name, err = d.str(v)
		case "schema":
			rf.Schema, err = d.raw(v)
		case "strict":
			rf.Strict, err = d.boolean(v)
		}
		if err != nil {
			return d.field(j, err)
		}
	}
	return err
}

func (tc *ToolChoice) decode(d *decoder, i int) error {
	j, end, err := d.object(i)
	for ; j < end; j = d.next(j + 1) {
		switch v := j + 1; d.key(j) {
		case "mode":
			var s string
			s, err = d.str(v)
			tc.Mode = ToolChoiceMode(s)
		case "name":
			tc.Name, err = d.str(v)
		}
		if err != nil {
			return d.field(j, err)
		}
	}
	return err
}

func (t *Tool) decode(d *decoder, i int) error {
	j, end, err := d.object(i)
	for ; j < end; j = d.next(j + 1) {
		switch v := j + 1; d.key(j) {
		case "name":
			t.Name, err = d.str(v)
		case "description":
			t.Description, err = d.str(v)
		case "parameters":
			t.Parameters, err = d.raw(v)
		case "strict":
			t.Strict, err = d.boolean(v)
		}
		if err != nil {
			return d.field(j, err)
		}
	}
	return err
}

// DecodeJSON resets m and fills it from canonical JSON.
func (m *Message) DecodeJSON(data []byte) error {
	*m = Message{}
	d, err := start(data)
	if err == nil {
		err = m.decode(d, 0)
	}
	return d.finish("message", err)
}

func (m *Message) decode(d *decoder, i int) error {
	j, end, err := d.object(i)
	for ; j < end; j = d.next(j + 1) {
		switch v := j + 1; d.key(j) {
		case "role":
			var s string
			s, err = d.str(v)
			m.Role = Role(s)
		case "content":
			m.Content, err = sliceFrom(d, v, &d.parts, (*Part).decode)
		case "name":
			m.Name, err = d.str(v)
		case "tool_calls":
			m.ToolCalls, err = sliceFrom(d, v, &d.calls, (*ToolCall).decode)
		case "tool_call_id":
			m.ToolCallID, err = d.str(v)
		case "reasoning":
			m.Reasoning, err = d.str(v)
		}
		if err != nil {
			return d.field(j, err)
		}
	}
	return err
}

func (p *Part) decode(d *decoder, i int) error {
	j, end, err := d.object(i)
	for ; j < end; j = d.next(j + 1) {
		switch v := j + 1; d.key(j) {
		case "type":
			var s string
			s, err = d.str(v)
			p.Type = PartType(s)
		case "text":
			p.Text, err = d.str(v)
		case "url":
			p.URL, err = d.str(v)
		case "media_type":
			p.MediaType, err = d.str(v)
		case "data":
			p.Data, err = d.str(v)
		case "detail":
			p.Detail, err = d.str(v)
		}
		if err != nil {
			return d.field(j, err)
		}
	}
	return err
}

func (tc *ToolCall) decode(d *decoder, i int) error {
	j, end, err := d.object(i)
	for ; j < end; j = d.next(j + 1) {
		switch v := j + 1; d.key(j) {
		case "id":
			tc.ID, err = d.str(v)
		case "name":
			tc.Name, err = d.str(v)
		case "arguments":
			tc.Arguments, err = d.str(v)
		}
		if err != nil {
			return d.field(j, err)
		}
	}
	return err
}

// DecodeJSON resets u and fills it from canonical JSON.
func (u *Usage) DecodeJSON(data []byte) error {
	*u = Usage{}
	d, err := start(data)
	if err == nil {
		err = u.decode(d, 0)
	}
	return d.finish("usage", err)
}

func (u *Usage) decode(d *decoder, i int) error {
	j, end, err := d.object(i)
	for ; j < end; j = d.next(j + 1) {
		switch v := j + 1; d.key(j) {
		case "prompt_tokens":
			u.PromptTokens, err = d.int(v)
		case "completion_tokens":
			u.CompletionTokens, err = d.int(v)
		case "total_tokens":
			u.TotalTokens, err = d.int(v)
		case "reasoning_tokens":
			u.ReasoningTokens, err = d.int(v)
		case "cached_tokens":
			u.CachedTokens, err = d.int(v)
		}
		if err != nil {
			return d.field(j, err)
		}
	}
	return err
}

func (d *decoder) usage(i int) (*Usage, error) {
	if d.t[i].kind == kNull {
		return nil, nil
	}
	u := new(Usage)
	return u, u.decode(d, i)
}

func (d *decoder) finishReason(i int) (FinishReason, error) {
	s, err := d.str(i)
	return FinishReason(s), err
}

// DecodeJSON resets x and fills it from canonical JSON.
func (x *ChatResponse) DecodeJSON(data []byte) error {
	*x = ChatResponse{}
	d, err := start(data)
	if err == nil {
		err = x.decode(d, 0)
	}
	return d.finish("chat response", err)
}

func (x *ChatResponse) decode(d *decoder, i int) error {
	return decodeResponse(d, i, &x.ID, &x.Model, &x.Created, &x.Choices, &x.Usage, (*Choice).decode)
}

func (c *Choice) decode(d *decoder, i int) error {
	return decodeChoice(d, i, &c.Index, "message", &c.Message, (*Message).decode, &c.FinishReason, &c.Logprobs)
}

// decodeResponse decodes the object at token i into the members that
// ChatResponse and ChatChunk share; they differ only in the choice type.
func decodeResponse[C any](d *decoder, i int, id, model *string, created *int64, choices *[]C, usage **Usage, choice func(*C, *decoder, int) error) error {
	j, end, err := d.object(i)
	for ; j < end; j = d.next(j + 1) {
		switch v := j + 1; d.key(j) {
		case "id":
			*id, err = d.str(v)
		case "model":
			*model, err = d.str(v)
		case "created":
			*created, _, err = d.int64(v)
		case "choices":
			*choices, err = slice(d, v, choice)
		case "usage":
			*usage, err = d.usage(v)
		}
		if err != nil {
			return d.field(j, err)
		}
	}
	return err
}

// decodeChoice decodes the object at token i into the members that Choice
// and ChunkChoice share: the index, the finish reason, the raw logprobs and
// a body (a Message under "message" or a Delta under "delta"), which is
// reset before decoding.
func decodeChoice[B any](d *decoder, i int, index *int, bodyKey string, body *B, decodeBody func(*B, *decoder, int) error, reason *FinishReason, logprobs *json.RawMessage) error {
	j, end, err := d.object(i)
	for ; j < end; j = d.next(j + 1) {
		switch v, k := j+1, d.key(j); k {
		case "index":
			*index, err = d.int(v)
		case "finish_reason":
			*reason, err = d.finishReason(v)
		case "logprobs":
			*logprobs, err = d.raw(v)
		case bodyKey:
			var zero B
			*body = zero
			err = decodeBody(body, d, v)
		}
		if err != nil {
			return d.field(j, err)
		}
	}
	return err
}

// DecodeJSON resets x and fills it from canonical JSON.
func (x *ChatChunk) DecodeJSON(data []byte) error {
	*x = ChatChunk{}
	if x.decodeFast(data) { // fastchunk.go
		return nil
	}
	*x = ChatChunk{}
	return x.decodeJSON(data)
}

// decodeJSON is DecodeJSON without the fast path.
func (x *ChatChunk) decodeJSON(data []byte) error {
	d, err := start(data)
	if err == nil {
		err = x.decode(d, 0)
	}
	return d.finish("chat chunk", err)
}

func (x *ChatChunk) decode(d *decoder, i int) error {
	return decodeResponse(d, i, &x.ID, &x.Model, &x.Created, &x.Choices, &x.Usage, (*ChunkChoice).decode)
}

func (c *ChunkChoice) decode(d *decoder, i int) error {
	return decodeChoice(d, i, &c.Index, "delta", &c.Delta, (*Delta).decode, &c.FinishReason, &c.Logprobs)
}

func (dl *Delta) decode(d *decoder, i int) error {
	j, end, err := d.object(i)
	for ; j < end; j = d.next(j + 1) {
		switch v := j + 1; d.key(j) {
		case "role":
			var s string
			s, err = d.str(v)
			dl.Role = Role(s)
		case "content":
			dl.Content, err = d.str(v)
		case "reasoning":
			dl.Reasoning, err = d.str(v)
		case "tool_calls":
			dl.ToolCalls, err = slice(d, v, (*ToolCallDelta).decode)
		}
		if err != nil {
			return d.field(j, err)
		}
	}
	return err
}

func (tc *ToolCallDelta) decode(d *decoder, i int) error {
	j, end, err := d.object(i)
	for ; j < end; j = d.next(j + 1) {
		switch v := j + 1; d.key(j) {
		case "index":
			tc.Index, err = d.int(v)
		case "id":
			tc.ID, err = d.str(v)
		case "name":
			tc.Name, err = d.str(v)
		case "arguments":
			tc.Arguments, err = d.str(v)
		}
		if err != nil {
			return d.field(j, err)
		}
	}
	return err
}
