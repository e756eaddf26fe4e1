// Package simple is an example translator for a small made-up chat
// dialect, written as a plugin author's first plugin would be (see
// sdk/README.md for the walk-through):
//
//	POST /simple/v1/chat   {"model","prompt","system","max_tokens","stream"}
//	   -> {"id","model","text","finish","usage":{"prompt_tokens","completion_tokens"}}
//	   or, streamed, NDJSON lines {"delta":"..."} then {"done":true,"finish",...,"usage"}
//	GET  /simple/v1/models -> {"models":["id", ...]}
//	errors                 -> {"error":{"message","status"}}
package simple

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonr"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// Manifest tells the gateway what the plugin serves. Routing says where
// the fields the gateway routes on are, so it reads them before any call.
func Manifest() sdk.Manifest {
	return sdk.Manifest{
		Name: "simple", Version: "0.1.0", Kind: sdk.KindTranslator, Format: "simple",
		Routes: []sdk.Route{
			{Name: "chat", Kind: sdk.EndpointChat, Method: "POST", Path: "/simple/v1/chat",
				StreamContentType: "application/x-ndjson",
				Routing:           &sdk.Routing{Model: "model", Stream: "stream", MaxTokens: []string{"max_tokens"}}},
			{Name: "models", Kind: sdk.EndpointModels, Method: "GET", Path: "/simple/v1/models"},
		},
		StateVersion: stateVersion,
	}
}

// Translator is stateless between calls (stream state lives in the blob
// the host keeps); it only reuses its parser and reader.
type Translator struct {
	sdk.Unimplemented // EncodeModels etc. are overridden below
	p                 fastjson.Parser
	rd                jsonr.Reader
}

// New returns a Translator.
func New() *Translator { return &Translator{} }

// DecodeRequest reads the client's body into the canonical request.
func (t *Translator) DecodeRequest(c *sdk.Call, body []byte, req *canon.ChatRequest) error {
	v, err := t.p.ParseBytes(body)
	if err != nil {
		return sdk.BadInput("invalid JSON: " + err.Error())
	}
	r := t.rd.Reset(v)
	req.Model = r.String("model")
	if sys, ok := r.OptString("system"); ok {
		req.Messages = append(req.Messages, text(canon.RoleSystem, sys))
	}
	if prompt := r.String("prompt"); prompt != "" {
		req.Messages = append(req.Messages, text(canon.RoleUser, prompt))
	} else {
		r.Get("prompt").Fail("must not be empty")
	}
	req.MaxTokens, _ = r.OptInt("max_tokens", 1, 1<<20)
	req.Stream, _ = r.OptBool("stream")
	req.IncludeUsage = req.Stream // the final line always reports usage
	if err := r.Err(); err != nil {
		return sdk.BadInput(err.Error())
	}
	return nil
}

func text(role canon.Role, s string) canon.Message {
	return canon.Message{Role: role, Content: []canon.Part{{Type: canon.PartText, Text: s}}}
}

// EncodeResponse writes a complete response. The id and model are the
// gateway's (meta), not the backend's.
func (t *Translator) EncodeResponse(c *sdk.Call, resp *canon.ChatResponse, out *sdk.Output) error {
	var msg canon.Message
	var finish canon.FinishReason
	if len(resp.Choices) > 0 {
		msg, finish = resp.Choices[0].Message, resp.Choices[0].FinishReason
	}
	b := append(out.Body, `{"id":`...)
	b = jsonw.String(b, c.Meta(abi.MetaID))
	b = append(b, `,"model":`...)
	b = jsonw.String(b, c.Meta(abi.MetaModel))
	b = append(b, `,"text":`...)
	b = jsonw.String(b, msg.Text())
	out.Body = append(appendEnd(b, finish, resp.Usage), '}')
	return nil
}

// appendEnd appends the members that close a response: finish and usage.
func appendEnd(b []byte, finish canon.FinishReason, u *canon.Usage) []byte {
	b = append(b, `,"finish":`...)
	b = jsonw.String(b, string(finish))
	if u != nil {
		b = append(b, `,"usage":{"prompt_tokens":`...)
		b = jsonw.Int(b, int64(u.PromptTokens))
		b = append(b, `,"completion_tokens":`...)
		b = append(jsonw.Int(b, int64(u.CompletionTokens)), '}')
	}
	return b
}

// EncodeError writes {"error":{"message","status"}}; ending an open
// stream, the same object as one NDJSON line.
func (t *Translator) EncodeError(c *sdk.Call, e *canon.Error, out *sdk.Output) error {
	b := append(out.Body, `{"error":{"message":`...)
	b = jsonw.String(b, e.Message)
	b = append(b, `,"status":`...)
	b = jsonw.Int(b, int64(e.Status))
	b = append(b, "}}"...)
	if c.Meta(abi.MetaStream) == "1" {
		b = append(b, '\n')
	}
	out.Body = b
	return nil
}

// EncodeModels writes {"models":["id", ...]}.
func (t *Translator) EncodeModels(c *sdk.Call, list *canon.ModelList, out *sdk.Output) error {
	b := append(out.Body, `{"models":[`...)
	for i := range list.Models {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonw.String(b, list.Models[i].ID)
	}
	out.Body = append(b, "]}"...)
	return nil
}
