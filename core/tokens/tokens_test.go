package tokens

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Known cl100k_base counts (tiktoken, openai/tiktoken's tests and the
// cookbook): "hello world" is 2 tokens, "tiktoken is great!" 6.
func TestText(t *testing.T) {
	c := New(1 << 20)
	for s, want := range map[string]int{"": 0, "hello world": 2, "tiktoken is great!": 6, "<|endoftext|>": 7} {
		if n, err := c.Text(s); err != nil || n != want {
			t.Errorf("%q: %d, %v (want %d)", s, n, err, want)
		}
	}
	if _, err := New(5).Text("hello world"); !errors.Is(err, ErrTooLong) {
		t.Errorf("over the limit: %v", err)
	}
}

// The cookbook's example: two messages, 3 per message plus 3 for the reply.
func TestChat(t *testing.T) {
	c := New(1 << 20)
	req := &canon.ChatRequest{Messages: []canon.Message{
		{Role: canon.RoleSystem, Content: []canon.Part{{Type: canon.PartText, Text: "hello world"}}},
		{Role: canon.RoleUser, Content: []canon.Part{{Type: canon.PartText, Text: "tiktoken is great!"}, {Type: canon.PartImage, URL: "x"}}},
	}}
	// system (1) + user (1) + 2 + 6 + 3+3 per message + 3 reply + 85 image.
	if n, err := c.Chat(req); err != nil || n != 1+1+2+6+3+3+3+85 {
		t.Fatalf("n = %d, %v", n, err)
	}
	req.Tools = []canon.Tool{{Name: "get_weather", Parameters: []byte(`{"type":"object"}`)}}
	if n, _ := c.Chat(req); n <= 1+1+2+6+3+3+3+85 {
		t.Fatalf("tools not counted: %d", n)
	}
	long := &canon.ChatRequest{Messages: []canon.Message{{Role: canon.RoleUser, Content: []canon.Part{{Type: canon.PartText, Text: strings.Repeat("a", 100)}}}}}
	if _, err := New(50).Chat(long); !errors.Is(err, ErrTooLong) {
		t.Fatalf("over the limit: %v", err)
	}
}

func TestConcurrent(t *testing.T) {
	c := New(1 << 20)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if n, err := c.Text("hello world"); err != nil || n != 2 {
				t.Errorf("%d %v", n, err)
			}
		}()
	}
	wg.Wait()
}

func BenchmarkText(b *testing.B) {
	c := New(1 << 20)
	s := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 100)
	if _, err := c.Text("warm"); err != nil { // the tokenizer loads once
		b.Fatal(err)
	}
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		if _, err := c.Text(s); err != nil {
			b.Fatal(err)
		}
	}
}

// A legacy text completion's prompt counts as input.
func TestChat_Prompt(t *testing.T) {
	c := New(1 << 20)
	n0, err := c.Chat(&canon.ChatRequest{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.Chat(&canon.ChatRequest{Prompt: []string{"hello world, hello world"}})
	if err != nil || n-n0 < 5 {
		t.Errorf("prompt counted %d (base %d): %v", n, n0, err)
	}
}

// Two Counters loading at once (two gateways in one process) share
// tiktoken's package state: under -race, each setting tiktoken's loader
// on its first use was a data race.
func TestCountersLoadConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	for range 4 {
		c := New(1 << 20)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if n, err := c.Text("hello world"); err != nil || n != 2 {
				t.Errorf("Text = %d, %v", n, err)
			}
		}()
	}
	wg.Wait()
}
