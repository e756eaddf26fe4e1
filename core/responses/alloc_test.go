//go:build !race

package responses

import (
	"bytes"
	"context"
	"testing"
)

// Serves runs on every request the gateway gets; a Turn's Write on every
// stream chunk. Neither allocates in the steady state.
func TestAllocs_HotPath(t *testing.T) {
	k := New(nil, Options{}, nil)
	method, chat, state := []byte("POST"), []byte("/v1/chat/completions"), []byte("/v1/conversations/conv_1/items/msg_1")
	if n := testing.AllocsPerRun(100, func() {
		_ = k.Serves(method, chat)
		_ = k.Serves([]byte("GET"), state)
	}); n != 0 {
		t.Errorf("Serves: %.1f allocs/op, want 0", n)
	}
	delta := []byte("event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"word \"}\n\n")
	s := sseScan{max: 1 << 20}
	s.feed(delta) // the buffers' first growth
	if n := testing.AllocsPerRun(100, func() {
		s.feed(delta[:20])
		s.feed(delta[20:])
	}); n != 0 {
		t.Errorf("sseScan.feed of a delta: %.1f allocs/op, want 0", n)
	}
}

// Begin with no history is on every Responses request's path to its
// first token: the Turn is all it allocates (nothing with store false).
func TestAllocs_BeginNoHistory(t *testing.T) {
	k := New(nil, Options{}, nil)
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() {
		if _, _, err := k.Begin(ctx, alice, "chatcmpl-0", noHistoryBody); err != nil {
			t.Fatal(err)
		}
	}); n != 1 {
		t.Errorf("Begin, store true: %.1f allocs/op, want 1 (the Turn)", n)
	}
	unstored := bytes.Replace(noHistoryBody, []byte(`"model":"m"`), []byte(`"model":"m","store":false`), 1)
	if n := testing.AllocsPerRun(100, func() {
		if _, tn, err := k.Begin(ctx, alice, "chatcmpl-0", unstored); err != nil || tn != nil {
			t.Fatal(tn, err)
		}
	}); n != 0 {
		t.Errorf("Begin, store false: %.1f allocs/op, want 0", n)
	}
}
