//go:build !race

package sdk

import (
	"testing"

	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// quietAdapter and quietTranslator allocate nothing once warm, so what
// allocates in the fused ops is the SDK's.
type quietAdapter struct {
	Unimplemented
	choices []canon.ChunkChoice
	resp    []canon.Choice
	usage   canon.Usage
}

func (a *quietAdapter) EncodeRequest(c *Call, req *canon.ChatRequest, out *Output) error {
	out.Body = append(out.Body, req.Model...)
	out.SetMeta(abi.MetaPath, "/v1/chat/completions")
	return nil
}

func (a *quietAdapter) DecodeResponse(c *Call, body []byte, resp *canon.ChatResponse) error {
	resp.Choices, resp.Usage = a.resp, &a.usage
	return nil
}

func (a *quietAdapter) DecodeStream(c *Call, st *State, events [][]byte, chunks *[]canon.ChatChunk) error {
	for range events {
		*chunks = append(*chunks, canon.ChatChunk{Choices: a.choices, Usage: &a.usage})
	}
	st.Set(st.In)
	return nil
}

type quietTranslator struct{ Unimplemented }

func (quietTranslator) DecodeRequest(c *Call, body []byte, req *canon.ChatRequest) error {
	req.Model, req.MaxTokens = "m", 100
	return nil
}

func (quietTranslator) EncodeResponse(c *Call, resp *canon.ChatResponse, out *Output) error {
	out.Body = append(out.Body, resp.Choices[0].Message.Role...)
	return nil
}

func (quietTranslator) EncodeStream(c *Call, st *State, chunks []canon.ChatChunk, out *Output) error {
	for i := range chunks {
		out.Body = append(out.Body, chunks[i].Choices[0].Delta.Content...)
	}
	st.Set(st.In)
	return nil
}

// The fused ops allocate nothing of their own once the Plugin's buffers are
// warm.
func TestFused_NoAllocs(t *testing.T) {
	a := &quietAdapter{
		choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: "tok"}, FinishReason: canon.FinishStop}},
		resp:    []canon.Choice{{Message: canon.Message{Role: canon.RoleAssistant}, FinishReason: canon.FinishStop}},
		usage:   canon.Usage{PromptTokens: 10, CompletionTokens: 20, ReasoningTokens: 3, CachedTokens: 4},
	}
	p := NewBundle("b", "1", TranslatorPart(Manifest{Name: "t"}, quietTranslator{}), AdapterPart(Manifest{Name: "a"}, a))
	var events []byte
	for range 20 {
		events = abi.AppendItem(events, []byte("event"))
	}
	meta := metaList(abi.MetaRoute, "chat", abi.MetaKind, "chat", abi.MetaContextLength, "4096", abi.MetaID, "x")
	state := appendFusedState(nil, true, []byte("adapter"), []byte("translator"))
	for _, tc := range []struct {
		op    abi.Op
		state []byte
		flags uint32
	}{
		{abi.OpFusedRequest, nil, 0},
		{abi.OpFusedResponse, nil, 0},
		{abi.OpFusedStream, state, 0},
		{abi.OpFusedStream, nil, abi.FlagFirst | abi.FlagEnd},
	} {
		in := callIdx(0, 1, tc.flags, tc.state, meta, events)
		allocs := testing.AllocsPerRun(100, func() {
			if r, _ := abi.ParseResult(p.Call(tc.op, in)); r.Status != abi.StatusOK {
				t.Fatalf("%s: %s %s", tc.op, r.Status, r.Error)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocs per call, want 0", tc.op, allocs)
		}
	}
}
