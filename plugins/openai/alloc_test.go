//go:build !race

package openai

import (
	"testing"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// TestEncodeStream_NoAllocs holds the per-chunk op to zero allocations once
// buffers are warm.
func TestEncodeStream_NoAllocs(t *testing.T) {
	var w sdk.StateWriter
	state := (&streamState{roles: 1, tools: 1, named: 1}).encode(&w)
	tr := New()
	chunks := []canon.ChatChunk{
		{Choices: []canon.ChunkChoice{{Delta: canon.Delta{Content: "tok"}}}},
		{Choices: []canon.ChunkChoice{{Delta: canon.Delta{ToolCalls: []canon.ToolCallDelta{{Index: 0, Arguments: `{"a"`}}}}}},
		{Usage: &canon.Usage{PromptTokens: 1}},
	}
	var out sdk.Output
	c := &sdk.Call{}
	allocs := testing.AllocsPerRun(100, func() {
		out.Body = out.Body[:0]
		st := sdk.State{In: state}
		if err := tr.EncodeStream(c, &st, chunks, &out); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("EncodeStream: %v allocs per call, want 0", allocs)
	}
}
