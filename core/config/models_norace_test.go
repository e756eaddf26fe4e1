//go:build !race

package config

import "testing"

// A lookup, done for every chat request, allocates nothing.
func TestModelPolicy_NoAlloc(t *testing.T) {
	p := NewModelPolicy(map[string]ModelSettings{"qwen3*": {ThinkingDefault: ThinkingModel}, "x": {ThinkingDefault: ThinkingOn}})
	if n := testing.AllocsPerRun(100, func() { _ = p.ThinkingDefault("openai/gpt-oss-20b") }); n != 0 {
		t.Errorf("%v allocations a lookup", n)
	}
}
