package ollama

import (
	"github.com/mindrouter/mindrouter/sdk/abi"
	"slices"

	"bytes"
	"strconv"
	"strings"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
	"github.com/valyala/fastjson"
)

// Log levels of sdk.Call.Log.
const logWarn = 4

// EncodeRequest writes req as an Ollama POST /api/chat body.
//
// What Ollama cannot express is handled so: n > 1 is refused (Ollama
// gives one choice); images given by URL, which Ollama cannot fetch, are
// asked of the gateway (sdk.NeedImages), which fetches them through its
// SSRF guard and calls again with them to send inline;
// tool_choice is approximated (see appendTools), and think_budget,
// parallel_tool_calls and user are not sent. logprobs and top_logprobs go
// out as Ollama's own (since v0.12.11; older servers ignore them).
func (a *Adapter) EncodeRequest(c *sdk.Call, req *canon.ChatRequest, out *sdk.Output) error {
	if req.Model == "" {
		return sdk.BadInput("model is required")
	}
	if req.N > 1 {
		return sdk.BadInput("n > 1 is not supported by Ollama backends (one choice per request)")
	}
	if len(req.Prompt) > 0 {
		return a.encodeGenerate(req, out)
	}
	if urls := imageURLs(c, req.Messages); len(urls) > 0 {
		return sdk.NeedImages(urls...)
	}
	b := append(out.Body[:0], `{"model":`...)
	b = jsonw.String(b, req.Model)
	b = append(b, `,"messages":[`...)
	var err error
	for i := range req.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendMessage(c, b, req.Messages, i); err != nil {
			return err
		}
	}
	// Ollama streams unless told otherwise, so always say which.
	b = append(b, `],"stream":`...)
	b = jsonw.Bool(b, req.Stream)
	if b, err = appendFormat(b, req.ResponseFormat); err != nil {
		return err
	}
	if b, err = appendThink(b, req.Think); err != nil {
		return err
	}
	if b, err = appendTools(b, req); err != nil {
		return err
	}
	if req.Logprobs {
		b = append(b, `,"logprobs":true`...)
		if req.TopLogprobs > 0 {
			b = append(b, `,"top_logprobs":`...)
			b = jsonw.Int(b, int64(req.TopLogprobs))
		}
	}
	b = appendOptions(b, req)
	out.Body = append(b, '}')
	out.SetMeta(abi.MetaPath, "/api/chat")
	out.SetMeta(abi.MetaMethod, "POST")
	out.SetMeta(abi.MetaContentType, "application/json")
	return nil
}

// appendMessage writes msgs[i]; earlier messages are searched for the name
// of the call a tool result answers.
func appendMessage(c *sdk.Call, b []byte, msgs []canon.Message, i int) ([]byte, error) {
	m := &msgs[i]
	if m.Role == "" {
		return b, sdk.BadInput("messages[" + strconv.Itoa(i) + "].role is empty")
	}
	b = append(b, `{"role":`...)
	b = jsonw.String(b, string(m.Role))
	b = appendText(b, m.Content)
	if m.Reasoning != "" {
		b = append(b, `,"thinking":`...)
		b = jsonw.String(b, m.Reasoning)
	}
	b, err := appendImages(c, b, m.Content, i)
	if err != nil {
		return b, err
	}
	if len(m.ToolCalls) > 0 {
		b = appendToolCalls(c, b, m.ToolCalls)
	}
	if m.Role == canon.RoleTool {
		name := toolName(msgs[:i], m.ToolCallID)
		if name == "" {
			name = m.Name
		}
		if name != "" {
			b = append(b, `,"tool_name":`...)
			b = jsonw.String(b, name)
		}
		if m.ToolCallID != "" {
			b = append(b, `,"tool_call_id":`...)
			b = jsonw.String(b, m.ToolCallID)
		}
	}
	return append(b, '}'), nil
}

// appendText writes the "content" field: the text parts joined by newlines.
func appendText(b []byte, parts []canon.Part) []byte {
	b = append(b, `,"content":"`...)
	first := true
	for i := range parts {
		if parts[i].Type != canon.PartText {
			continue
		}
		if !first {
			b = append(b, '\\', 'n')
		}
		first = false
		b = jsonw.Escaped(b, parts[i].Text)
	}
	return append(b, '"')
}

// appendImages writes the "images" field (base64 strings) when the message
// has inline images. An image given by URL is refused, never dropped.
func appendImages(c *sdk.Call, b []byte, parts []canon.Part, msg int) ([]byte, error) {
	n := 0
	for j := range parts {
		p := &parts[j]
		switch p.Type {
		case canon.PartText:
			continue
		case canon.PartImage:
		default:
			return b, sdk.BadInput("messages[" + strconv.Itoa(msg) + "].content[" + strconv.Itoa(j) +
				"]: part type " + strconv.Quote(string(p.Type)) + " is not supported by Ollama")
		}
		data := p.Data
		if data == "" {
			data = dataURIPayload(p.URL)
		}
		if data == "" {
			if p.URL == "" {
				return b, sdk.BadInput("messages[" + strconv.Itoa(msg) + "].content[" + strconv.Itoa(j) +
					"]: image has neither data nor url")
			}
			// Ollama cannot fetch: the gateway did (imageURLs asked).
			_, b64, ok := c.Image(p.URL)
			if !ok {
				return b, sdk.BadInput("messages[" + strconv.Itoa(msg) + "].content[" + strconv.Itoa(j) +
					"]: the image URL was not fetched")
			}
			data = b64
		}
		if n == 0 {
			b = append(b, `,"images":[`...)
		} else {
			b = append(b, ',')
		}
		n++
		b = jsonw.String(b, data)
	}
	if n > 0 {
		b = append(b, ']')
	}
	return b, nil
}

// dataURIPayload returns the base64 payload of a "data:...;base64,..." URI,
// or "" for anything else.
func dataURIPayload(u string) string {
	if !strings.HasPrefix(u, "data:") {
		return ""
	}
	const marker = ";base64,"
	i := strings.Index(u, marker)
	if i < 0 {
		return ""
	}
	return u[i+len(marker):]
}

// appendToolCalls writes an assistant message's "tool_calls" with each
// call's arguments as a JSON object, as Ollama expects.
func appendToolCalls(c *sdk.Call, b []byte, calls []canon.ToolCall) []byte {
	b = append(b, `,"tool_calls":[`...)
	for j := range calls {
		tc := &calls[j]
		if j > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		if tc.ID != "" {
			b = append(b, `"id":`...)
			b = jsonw.String(b, tc.ID)
			b = append(b, ',')
		}
		b = append(b, `"function":{"name":`...)
		b = jsonw.String(b, tc.Name)
		b = append(b, `,"arguments":`...)
		if args := strings.TrimSpace(tc.Arguments); isJSONObject(args) {
			b = append(b, args...)
		} else {
			if args != "" {
				c.Log(logWarn, "ollama: tool call arguments are not a JSON object; sent {} instead")
			}
			b = append(b, "{}"...)
		}
		b = append(b, "}}"...)
	}
	return append(b, ']')
}

// isJSONObject reports whether s is one valid JSON object.
func isJSONObject(s string) bool {
	return len(s) > 0 && s[0] == '{' && fastjson.Validate(s) == nil
}

// toolName returns the function name of the most recent call with id among
// the assistant messages in msgs, or "".
func toolName(msgs []canon.Message, id string) string {
	if id == "" {
		return ""
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		for j := range msgs[i].ToolCalls {
			if tc := &msgs[i].ToolCalls[j]; tc.ID == id {
				return tc.Name
			}
		}
	}
	return ""
}

// appendFormat writes "format": "json" for JSON mode or the schema object
// for structured output.
func appendFormat(b []byte, rf *canon.ResponseFormat) ([]byte, error) {
	if rf == nil {
		return b, nil
	}
	switch rf.Type {
	case "", canon.FormatText:
		return b, nil
	case canon.FormatJSONObject:
		return append(b, `,"format":"json"`...), nil
	case canon.FormatJSONSchema:
		schema := bytes.TrimSpace(rf.Schema)
		if len(schema) == 0 {
			return append(b, `,"format":"json"`...), nil
		}
		if schema[0] != '{' || fastjson.ValidateBytes(schema) != nil {
			return b, sdk.BadInput("response_format.schema is not a JSON object")
		}
		b = append(b, `,"format":`...)
		return append(b, schema...), nil
	}
	return b, sdk.BadInput("response_format.type " + strconv.Quote(string(rf.Type)) + " is not supported by Ollama")
}

// appendThink writes Ollama's top-level "think": a boolean, or an effort
// level string.
func appendThink(b []byte, t canon.Think) ([]byte, error) {
	switch t {
	case canon.ThinkUnset:
		return b, nil
	case canon.ThinkOn:
		return append(b, `,"think":true`...), nil
	case canon.ThinkOff:
		return append(b, `,"think":false`...), nil
	case canon.ThinkLow, canon.ThinkMedium, canon.ThinkHigh:
		b = append(b, `,"think":"`...)
		b = append(b, t...)
		return append(b, '"'), nil
	}
	return b, sdk.BadInput("think " + strconv.Quote(string(t)) + " is not supported")
}

// appendTools writes "tools". Ollama has no tool_choice: "none" leaves the
// tools out, a named function sends only that tool (the model may still
// answer without calling it), and "auto" and "required" send every tool.
func appendTools(b []byte, req *canon.ChatRequest) ([]byte, error) {
	if len(req.Tools) == 0 {
		return b, nil
	}
	only := ""
	if tc := req.ToolChoice; tc != nil {
		switch tc.Mode {
		case canon.ToolChoiceNone:
			return b, nil
		case canon.ToolChoiceFunction:
			if hasTool(req.Tools, tc.Name) {
				only = tc.Name
			}
		}
	}
	b = append(b, `,"tools":[`...)
	n := 0
	for i := range req.Tools {
		t := &req.Tools[i]
		if t.Name == "" {
			return b, sdk.BadInput("tools[" + strconv.Itoa(i) + "].name is empty")
		}
		if only != "" && t.Name != only {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, `{"type":"function","function":{"name":`...)
		b = jsonw.String(b, t.Name)
		if t.Description != "" {
			b = append(b, `,"description":`...)
			b = jsonw.String(b, t.Description)
		}
		// A function without parameters takes none; chat templates render
		// the schema, so say so explicitly.
		b = append(b, `,"parameters":`...)
		if params := bytes.TrimSpace(t.Parameters); len(params) > 0 {
			if fastjson.ValidateBytes(params) != nil {
				return b, sdk.BadInput("tools[" + strconv.Itoa(i) + "].parameters is not valid JSON")
			}
			b = append(b, params...)
		} else {
			b = append(b, `{"type":"object","properties":{}}`...)
		}
		b = append(b, "}}"...)
	}
	return append(b, ']'), nil
}

func hasTool(tools []canon.Tool, name string) bool {
	for i := range tools {
		if tools[i].Name == name {
			return true
		}
	}
	return false
}

// appendOptions writes the sampling and runtime "options" that are set.
func appendOptions(b []byte, req *canon.ChatRequest) []byte {
	start := len(b)
	b = append(b, `,"options":{`...)
	o := options{b: b}
	o.float("temperature", req.Temperature)
	o.float("top_p", req.TopP)
	if req.TopK != nil {
		o.int("top_k", int64(*req.TopK))
	}
	o.float("min_p", req.MinP)
	o.float("repeat_penalty", req.RepetitionPenalty)
	o.float("frequency_penalty", req.FrequencyPenalty)
	o.float("presence_penalty", req.PresencePenalty)
	if req.Seed != nil {
		o.int("seed", *req.Seed)
	}
	if len(req.Stop) > 0 {
		o.key("stop")
		o.b = append(o.b, '[')
		for i, s := range req.Stop {
			if i > 0 {
				o.b = append(o.b, ',')
			}
			o.b = jsonw.String(o.b, s)
		}
		o.b = append(o.b, ']')
	}
	if req.MaxTokens > 0 {
		o.int("num_predict", int64(req.MaxTokens))
	}
	if req.ContextLength > 0 {
		o.int("num_ctx", int64(req.ContextLength))
	}
	if !o.any {
		return b[:start]
	}
	return append(o.b, '}')
}

// options writes the members of one JSON object; keys are plain ASCII.
type options struct {
	b   []byte
	any bool
}

func (o *options) key(k string) {
	if o.any {
		o.b = append(o.b, ',')
	}
	o.any = true
	o.b = append(o.b, '"')
	o.b = append(o.b, k...)
	o.b = append(o.b, '"', ':')
}

func (o *options) float(k string, v *float64) {
	if v != nil {
		o.key(k)
		o.b = jsonw.Float(o.b, *v)
	}
}

func (o *options) int(k string, v int64) {
	o.key(k)
	o.b = jsonw.Int(o.b, v)
}

// imageURLs lists, each once, the image URLs of msgs (not data: URIs)
// that the call does not carry the bytes of yet.
func imageURLs(c *sdk.Call, msgs []canon.Message) []string {
	var urls []string
	for i := range msgs {
		for j := range msgs[i].Content {
			p := &msgs[i].Content[j]
			if p.Type != canon.PartImage || p.Data != "" || p.URL == "" || dataURIPayload(p.URL) != "" {
				continue
			}
			if _, _, ok := c.Image(p.URL); ok || slices.Contains(urls, p.URL) {
				continue
			}
			urls = append(urls, p.URL)
		}
	}
	return urls
}
