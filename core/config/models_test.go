package config

import (
	"strings"
	"testing"
)

// A model's thinking default: its exact entry, else the most specific
// matching pattern, else the built-in defaults (models that cannot turn
// thinking off), else off.
func TestModelPolicy_ThinkingDefault(t *testing.T) {
	c, err := Parse([]byte(`models:
  "qwen3:8b": {thinking_default: on}
  "qwen3*": {thinking_default: model}
  "*": {thinking_default: off}
  "*coder*": {thinking_default: "on"}
  "gpt-oss:120b": {thinking_default: off}
`), ".")
	if err != nil {
		t.Fatal(err)
	}
	p := NewModelPolicy(c.Models)
	for model, want := range map[string]string{
		"qwen3:8b":           "on",    // exact
		"qwen3:4b":           "model", // qwen3* (5 literal bytes) over * (0)
		"qwen3-coder:30b":    "on",    // qwen3* and *coder* both 5: the patterns' order decides ("*" sorts first), the same every time
		"llama3.2:3b":        "off",   // *
		"openai/gpt-oss-20b": "off",   // the operator's "*" is an entry for every model: it wins over the built-ins
		"gpt-oss:120b":       "off",   // exact
	} {
		if got := p.ThinkingDefault(model); got != want {
			t.Errorf("%s: %q, want %q", model, got, want)
		}
	}
	empty := NewModelPolicy(nil)
	for model, want := range map[string]string{"qwen3-8b": "off", "gpt-oss:20b": "model", "openai/gpt-oss-120b": "model",
		"deepseek-r1:7b": "model", "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B": "model", "llama3.2:3b": "off"} {
		if got := empty.ThinkingDefault(model); got != want {
			t.Errorf("no config, %s: %q, want %q", model, got, want)
		}
	}
	if _, err := Parse([]byte("models: {qwen3: {thinking_default: maybe}}\n"), "."); err == nil || !strings.Contains(err.Error(), `models["qwen3"].thinking_default`) {
		t.Errorf("bad value: %v", err)
	}
}

func TestGlobMatch(t *testing.T) {
	for _, c := range []struct {
		p, n string
		ok   bool
	}{
		{"*", "", true}, {"a*", "a", true}, {"a*", "ba", false}, {"*a", "ba", true}, {"*gpt-oss*", "openai/gpt-oss-20b", true},
		{"a*b*c", "abc", true}, {"a*b*c", "axbxc", true}, {"a*b*c", "acb", false}, {"ab*ba", "aba", false}, {"x", "x", true}, {"x", "y", false},
	} {
		if got := globMatch(strings.Split(c.p, "*"), c.n); got != c.ok {
			t.Errorf("globMatch(%q, %q) = %v", c.p, c.n, got)
		}
	}
}
