package gemini

import (
	"strconv"
	"strings"

	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonr"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// modelName is the request's model: the path's capture (the host routed
// on it), without a "models/" a client may repeat.
func modelName(c *sdk.Call) string {
	return strings.TrimPrefix(c.Meta(abi.MetaCapturePrefix+"model"), "models/")
}

// DecodeRequest reads a GenerateContentRequest (or a countTokens body,
// whose contents may be wrapped in generateContentRequest).
func (t *Translator) DecodeRequest(c *sdk.Call, body []byte, req *canon.ChatRequest) error {
	v, err := t.p.ParseBytes(body)
	if err != nil {
		return sdk.BadInput("invalid JSON: " + err.Error())
	}
	r := t.rd.Reset(v)
	route := c.Meta(abi.MetaRoute)
	if route == routeCount {
		if g := r.OptObject("generateContentRequest"); g.Exists() {
			r = g
		}
	}
	req.Model = modelName(c)
	req.Stream = route == routeStreamSSE || route == routeStreamJSON
	req.IncludeUsage = req.Stream // every Gemini stream ends with usageMetadata
	if sys := r.OptObject("systemInstruction"); sys.Exists() {
		var m canon.Message
		m.Role = canon.RoleSystem
		readParts(sys.Array("parts"), &m, nil)
		req.Messages = append(req.Messages, m)
	}
	calls := callIDs{}
	contents := r.Array("contents")
	if contents.Len() == 0 && route != routeCount {
		r.Get("contents").Fail("must not be empty")
	}
	for _, content := range contents.All() {
		role := canon.RoleUser
		switch s, _ := content.OptString("role"); s {
		case "", "user", "function", "tool":
		case "model":
			role = canon.RoleAssistant
		default:
			content.Get("role").Fail(`must be "user" or "model"`)
		}
		m := canon.Message{Role: role}
		tools := readParts(content.Array("parts"), &m, &calls)
		if len(m.Content) > 0 || len(m.ToolCalls) > 0 || m.Reasoning != "" {
			req.Messages = append(req.Messages, m)
		}
		req.Messages = append(req.Messages, tools...)
	}
	readTools(r, req)
	readConfig(r.OptObject("generationConfig"), req)
	if err := r.Err(); err != nil {
		return sdk.BadInput(err.Error())
	}
	return nil
}

// callIDs names function calls, which Gemini's older clients send without
// ids: a functionResponse answers the earliest unanswered call of its
// name.
type callIDs struct {
	open []canon.ToolCall
	n    int
}

func (ci *callIDs) call(id, name string) string {
	if id == "" {
		ci.n++
		id = "call_" + strconv.Itoa(ci.n)
	}
	ci.open = append(ci.open, canon.ToolCall{ID: id, Name: name})
	return id
}

func (ci *callIDs) answer(id, name string) string {
	for i, c := range ci.open {
		if id != "" && c.ID == id || id == "" && c.Name == name {
			ci.open = append(ci.open[:i], ci.open[i+1:]...)
			return c.ID
		}
	}
	if id == "" {
		id = "call_" + name
	}
	return id
}

// readParts reads a content's parts into m, returning the tool messages
// its functionResponse parts become (calls nil: a system instruction,
// text only).
func readParts(parts jsonr.Array, m *canon.Message, calls *callIDs) []canon.Message {
	var tools []canon.Message
	for _, p := range parts.All() {
		switch {
		case p.Opt("text").Exists():
			text := p.String("text")
			if thought, _ := p.OptBool("thought"); thought {
				m.Reasoning += text
				continue
			}
			m.Content = append(m.Content, canon.Part{Type: canon.PartText, Text: text})
		case p.Opt("inlineData").Exists() && calls != nil:
			d := p.Object("inlineData")
			mt := d.String("mimeType")
			if !strings.HasPrefix(mt, "image/") {
				d.Get("mimeType").Fail("only image data is supported")
			}
			m.Content = append(m.Content, canon.Part{Type: canon.PartImage, MediaType: mt, Data: d.String("data")})
		case p.Opt("fileData").Exists() && calls != nil:
			d := p.Object("fileData")
			mt, _ := d.OptString("mimeType")
			m.Content = append(m.Content, canon.Part{Type: canon.PartImage, MediaType: mt, URL: d.String("fileUri")})
		case p.Opt("functionCall").Exists() && calls != nil:
			f := p.Object("functionCall")
			id, _ := f.OptString("id")
			name := f.String("name")
			args := f.OptRaw(nil, "args")
			if len(args) == 0 {
				args = []byte("{}")
			}
			m.ToolCalls = append(m.ToolCalls, canon.ToolCall{ID: calls.call(id, name), Name: name, Arguments: string(args)})
		case p.Opt("functionResponse").Exists() && calls != nil:
			f := p.Object("functionResponse")
			id, _ := f.OptString("id")
			name := f.String("name")
			resp := f.OptRaw(nil, "response")
			tools = append(tools, canon.Message{Role: canon.RoleTool, Name: name, ToolCallID: calls.answer(id, name),
				Content: []canon.Part{{Type: canon.PartText, Text: string(resp)}}})
		default:
			p.Fail("unsupported part: expected text, inlineData, fileData, functionCall or functionResponse")
		}
	}
	return tools
}

// readTools reads tools[].functionDeclarations and toolConfig.
func readTools(r jsonr.Value, req *canon.ChatRequest) {
	for _, tool := range r.OptArray("tools").All() {
		for _, f := range tool.OptArray("functionDeclarations").All() {
			ct := canon.Tool{Name: f.String("name")}
			ct.Description, _ = f.OptString("description")
			if js := f.Opt("parametersJsonSchema"); js.Exists() {
				ct.Parameters = js.AsRaw(nil)
			} else if ps := f.Opt("parameters"); ps.Exists() {
				ct.Parameters = openAPISchema(nil, ps.JSON())
			}
			req.Tools = append(req.Tools, ct)
		}
	}
	fc := r.OptObject("toolConfig").OptObject("functionCallingConfig")
	if !fc.Exists() {
		return
	}
	mode, _ := fc.OptString("mode")
	allowed := fc.OptArray("allowedFunctionNames")
	switch strings.ToUpper(mode) {
	case "", "AUTO", "VALIDATED", "MODE_UNSPECIFIED":
		req.ToolChoice = &canon.ToolChoice{Mode: canon.ToolChoiceAuto}
	case "NONE":
		req.ToolChoice = &canon.ToolChoice{Mode: canon.ToolChoiceNone}
	case "ANY":
		req.ToolChoice = &canon.ToolChoice{Mode: canon.ToolChoiceRequired}
		if allowed.Len() == 1 {
			req.ToolChoice = &canon.ToolChoice{Mode: canon.ToolChoiceFunction, Name: allowed.At(0).AsString()}
		}
	default:
		fc.Get("mode").Fail("must be AUTO, ANY, NONE or VALIDATED")
	}
}

// readConfig reads generationConfig.
func readConfig(g jsonr.Value, req *canon.ChatRequest) {
	if !g.Exists() {
		return
	}
	optFloat := func(key string) *float64 {
		if f, ok := g.OptFloat(key); ok {
			return &f
		}
		return nil
	}
	req.Temperature, req.TopP = optFloat("temperature"), optFloat("topP")
	req.PresencePenalty, req.FrequencyPenalty = optFloat("presencePenalty"), optFloat("frequencyPenalty")
	if k, ok := g.OptInt("topK", 1, 1<<20); ok {
		req.TopK = &k
	}
	if s, ok := g.OptInt("seed", -1<<31, 1<<31-1); ok {
		seed := int64(s)
		req.Seed = &seed
	}
	req.N, _ = g.OptInt("candidateCount", 1, 8)
	req.MaxTokens, _ = g.OptInt("maxOutputTokens", 1, 1<<24)
	for _, s := range g.OptArray("stopSequences").All() {
		req.Stop = append(req.Stop, s.AsString())
	}
	if mt, _ := g.OptString("responseMimeType"); mt == "application/json" {
		req.ResponseFormat = &canon.ResponseFormat{Type: canon.FormatJSONObject}
		if js := g.Opt("responseJsonSchema"); js.Exists() {
			req.ResponseFormat = &canon.ResponseFormat{Type: canon.FormatJSONSchema, Name: "response", Schema: js.AsRaw(nil)}
		} else if s := g.Opt("responseSchema"); s.Exists() {
			req.ResponseFormat = &canon.ResponseFormat{Type: canon.FormatJSONSchema, Name: "response", Schema: openAPISchema(nil, s.JSON())}
		}
	}
	if tc := g.OptObject("thinkingConfig"); tc.Exists() {
		req.ThinkOptional = true // a model that cannot think answers without
		if b, ok := tc.OptInt("thinkingBudget", -1, 1<<24); ok {
			switch {
			case b == 0:
				req.Think = canon.ThinkOff
			case b < 0:
				req.Think = canon.ThinkOn
			default:
				req.Think, req.ThinkBudget = canon.ThinkOn, b
			}
		}
		switch lvl, _ := tc.OptString("thinkingLevel"); strings.ToUpper(lvl) {
		case "LOW", "MINIMAL":
			req.Think = canon.ThinkLow
		case "MEDIUM":
			req.Think = canon.ThinkMedium
		case "HIGH":
			req.Think = canon.ThinkHigh
		}
		if inc, ok := tc.OptBool("includeThoughts"); ok && inc && req.Think == canon.ThinkUnset {
			req.Think = canon.ThinkOn
		}
	}
}

// openAPISchema writes Gemini's Schema (an OpenAPI 3.0 subset with
// upper-case type names: "OBJECT", "STRING") as JSON Schema: type names
// lower-cased, "nullable": true as a "null" alternative, Gemini's own
// "propertyOrdering" dropped.
func openAPISchema(dst []byte, v *fastjson.Value) []byte {
	switch v.Type() {
	case fastjson.TypeObject:
		o, _ := v.Object()
		nullable := o.Get("nullable") != nil && o.Get("nullable").Type() == fastjson.TypeTrue
		dst = append(dst, '{')
		first := true
		o.Visit(func(k []byte, x *fastjson.Value) {
			key := string(k)
			if key == "nullable" || key == "propertyOrdering" {
				return
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = jsonw.String(dst, key)
			dst = append(dst, ':')
			switch {
			case key == "type" && x.Type() == fastjson.TypeString:
				t := strings.ToLower(string(x.GetStringBytes()))
				if nullable {
					dst = append(dst, `["`+t+`","null"]`...)
				} else {
					dst = jsonw.String(dst, t)
				}
			case key == "properties" && x.Type() == fastjson.TypeObject:
				// Property names are the client's, never schema keywords.
				po, _ := x.Object()
				dst = append(dst, '{')
				pf := true
				po.Visit(func(pk []byte, pv *fastjson.Value) {
					if !pf {
						dst = append(dst, ',')
					}
					pf = false
					dst = jsonw.String(dst, string(pk))
					dst = append(dst, ':')
					dst = openAPISchema(dst, pv)
				})
				dst = append(dst, '}')
			default:
				dst = openAPISchema(dst, x)
			}
		})
		return append(dst, '}')
	case fastjson.TypeArray:
		a, _ := v.Array()
		dst = append(dst, '[')
		for i, x := range a {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = openAPISchema(dst, x)
		}
		return append(dst, ']')
	}
	return v.MarshalTo(dst)
}
