package ollamaapi

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"

	"github.com/mindrouter/mindrouter/plugins/internal/jsonread"
)

// reqFields holds the top-level fields of an /api/chat or /api/generate
// body this translator reads (nil: absent or null). Anything else is
// ignored, as Ollama ignores unknown fields.
type reqFields struct {
	model, messages, tools, format, options, stream, keepAlive, think *fastjson.Value
	prompt, suffix, system, template, raw, images                     *fastjson.Value
}

func (f *reqFields) set(k []byte, v *fastjson.Value) {
	switch string(k) {
	case "model":
		f.model = v
	case "messages":
		f.messages = v
	case "tools":
		f.tools = v
	case "format":
		f.format = v
	case "options":
		f.options = v
	case "stream":
		f.stream = v
	case "keep_alive":
		f.keepAlive = v
	case "think":
		f.think = v
	case "prompt":
		f.prompt = v
	case "suffix":
		f.suffix = v
	case "system":
		f.system = v
	case "template":
		f.template = v
	case "raw":
		f.raw = v
	case "images":
		f.images = v
	}
}

// DecodeRequest parses an /api/chat or /api/generate body (meta route
// says which; none means chat) into req.
func (t *Translator) DecodeRequest(c *sdk.Call, body []byte, req *canon.ChatRequest) error {
	route, _ := c.MetaBytes(abi.MetaRoute)
	generate := string(route) == RouteGenerate
	if len(route) > 0 && !generate && string(route) != RouteChat {
		return sdk.BadInput("route " + string(route) + " has no chat request to decode")
	}
	o, err := jsonread.Object(&t.p, body)
	if err != nil {
		return err
	}
	var f reqFields
	jsonread.Visit(o, f.set)
	if req.Model, err = jsonread.Model(f.model); err != nil {
		return err
	}
	if generate {
		err = decodeGenerate(&f, req)
	} else {
		err = decodeChat(&f, req)
	}
	if err != nil {
		return err
	}
	// Ollama streams unless told not to.
	req.Stream = true
	if f.stream != nil {
		var ok bool
		if req.Stream, ok = jsonread.Bool(f.stream); !ok {
			return jsonread.ErrType("stream", "a boolean")
		}
	}
	// The final done line always carries the counts, so the adapters'
	// usage is always wanted.
	req.IncludeUsage = true
	if err := decodeKeepAlive(f.keepAlive); err != nil {
		return err
	}
	if err := decodeFormat(f.format, req); err != nil {
		return err
	}
	if err := decodeOptions(f.options, req); err != nil {
		return err
	}
	if f.think != nil {
		if req.Think, err = decodeThink(f.think); err != nil {
			return err
		}
	}
	return nil
}

// decodeChat reads /api/chat's messages and tools.
func decodeChat(f *reqFields, req *canon.ChatRequest) error {
	if err := decodeMessages(f.messages, req); err != nil {
		return err
	}
	return decodeTools(f.tools, req)
}

// decodeGenerate turns /api/generate's system and prompt (and images) into
// a chat: a system message, then one user message. The model's own
// template is applied by the backend, as Ollama applies it.
func decodeGenerate(f *reqFields, req *canon.ChatRequest) error {
	raw := false
	if f.raw != nil {
		var ok bool
		if raw, ok = jsonread.Bool(f.raw); !ok {
			return jsonread.ErrType("raw", "a boolean")
		}
	}
	for _, s := range [...]struct {
		v    *fastjson.Value
		name string
		why  string
	}{
		{f.suffix, "suffix", "fill-in-the-middle completion is not available through this gateway"},
		{f.template, "template", "the backend applies the model's own prompt template"},
	} {
		if s.v == nil {
			continue
		}
		str, ok := jsonread.Str(s.v)
		if !ok {
			return jsonread.ErrType(s.name, "a string")
		}
		if str != "" { // the official Go client always sends them, empty
			return sdk.BadInput(s.name + " is not supported: " + s.why)
		}
	}
	var system, prompt string
	var ok bool
	if f.system != nil {
		if system, ok = jsonread.Str(f.system); !ok {
			return jsonread.ErrType("system", "a string")
		}
	}
	if f.prompt != nil {
		if prompt, ok = jsonread.Str(f.prompt); !ok {
			return jsonread.ErrType("prompt", "a string")
		}
	}
	if raw {
		// raw: the prompt goes to the model as it is, without its template:
		// a canonical text completion (Prompt), which the Ollama adapter
		// sends as raw /api/generate and the vLLM one to /v1/completions.
		// Ollama ignores system in raw mode; images need a template.
		if f.images != nil && f.images.Type() != fastjson.TypeNull && len(f.images.GetArray()) > 0 {
			return sdk.BadInput("images are not supported with raw: true")
		}
		if prompt == "" {
			return sdk.BadInput("prompt is required: this gateway does not support Ollama's load-only requests (an empty prompt)")
		}
		req.Prompt = []string{prompt}
		return nil
	}
	user := canon.Message{Role: canon.RoleUser}
	if err := decodeImages(f.images, "images", &user); err != nil {
		return err
	}
	if prompt == "" && len(user.Content) == 0 {
		// Ollama answers an empty prompt by loading the model; every
		// request here goes to a backend for a completion.
		return sdk.BadInput("prompt is required: this gateway does not support Ollama's load-only requests (an empty prompt)")
	}
	if prompt != "" {
		user.Content = append(user.Content, canon.Part{Type: canon.PartText, Text: prompt})
	}
	req.Messages = make([]canon.Message, 0, 2)
	if system != "" {
		req.Messages = append(req.Messages, canon.Message{Role: canon.RoleSystem,
			Content: []canon.Part{{Type: canon.PartText, Text: system}}})
	}
	req.Messages = append(req.Messages, user)
	return nil
}

// decodeKeepAlive checks keep_alive ("5m", a number of seconds, or a
// negative number for forever). Backends manage residency themselves, so
// the value is not passed on.
func decodeKeepAlive(v *fastjson.Value) error {
	if v == nil {
		return nil
	}
	switch v.Type() {
	case fastjson.TypeString, fastjson.TypeNumber:
		return nil
	}
	return jsonread.ErrType("keep_alive", "a duration string or a number of seconds")
}

// decodeFormat reads format: "json" or a JSON schema object ("" is none).
func decodeFormat(v *fastjson.Value, req *canon.ChatRequest) error {
	if v == nil {
		return nil
	}
	switch v.Type() {
	case fastjson.TypeString:
		b, _ := v.StringBytes()
		switch string(b) {
		case "":
			return nil
		case "json":
			req.ResponseFormat = &canon.ResponseFormat{Type: canon.FormatJSONObject}
			return nil
		}
		return sdk.BadInput(`format "` + string(b) + `" is not supported (use "json" or a JSON schema object)`)
	case fastjson.TypeObject:
		req.ResponseFormat = &canon.ResponseFormat{Type: canon.FormatJSONSchema, Schema: appendCompact(nil, v)}
		return nil
	}
	return jsonread.ErrType("format", `"json" or a JSON schema object`)
}

// decodeThink reads think: a boolean or "low" | "medium" | "high".
func decodeThink(v *fastjson.Value) (canon.Think, error) {
	if b, ok := jsonread.Bool(v); ok {
		if b {
			return canon.ThinkOn, nil
		}
		return canon.ThinkOff, nil
	}
	if v.Type() == fastjson.TypeString {
		b, _ := v.StringBytes()
		switch string(b) {
		case "low":
			return canon.ThinkLow, nil
		case "medium":
			return canon.ThinkMedium, nil
		case "high":
			return canon.ThinkHigh, nil
		}
		return "", sdk.BadInput(`invalid think value: "` + string(b) + `" (must be "high", "medium", "low", true, or false)`)
	}
	return "", jsonread.ErrType("think", `a boolean or one of "high", "medium", "low"`)
}
