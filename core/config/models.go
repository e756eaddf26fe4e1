package config

import (
	"sort"
	"strings"
)

// ModelSettings are what the operator sets per model (config models, keyed
// by a model name or a pattern with "*" for any text: "qwen3*",
// "*gpt-oss*", "*" for every model). A model takes the entry of its exact
// name, else of the matching pattern with the most literal characters.
type ModelSettings struct {
	// ThinkingDefault is the thinking a request gets when it does not say
	// (no think, thinking, reasoning, reasoning_effort or
	// chat_template_kwargs.enable_thinking): ThinkingOff (the default:
	// clients pay for thinking's tokens and latency only when they ask for
	// it; vLLM gets chat_template_kwargs.enable_thinking false, Ollama
	// think false), ThinkingOn, or ThinkingModel (nothing is sent: the
	// model's own default). Models that cannot turn thinking off
	// (builtinModels) default to ThinkingModel. A model whose capabilities
	// lack thinking is sent nothing either way.
	ThinkingDefault string `yaml:"thinking_default"`
}

// Values of ModelSettings.ThinkingDefault.
const (
	ThinkingOff   = "off"
	ThinkingOn    = "on"
	ThinkingModel = "model"
)

// builtinModels are the defaults below the operator's entries: models
// that reason whatever they are told (gpt-oss's harmony format has effort
// levels but no off; DeepSeek-R1 and its distills always open <think>), so
// telling them "off" would only pretend.
var builtinModels = map[string]ModelSettings{
	"*gpt-oss*":     {ThinkingDefault: ThinkingModel},
	"*deepseek-r1*": {ThinkingDefault: ThinkingModel},
	"*DeepSeek-R1*": {ThinkingDefault: ThinkingModel},
}

// ModelPolicy answers a model's settings from config models, compiled
// once: an exact lookup, then the operator's patterns most specific
// first, then builtinModels.
type ModelPolicy struct {
	exact    map[string]ModelSettings
	patterns []patternSetting
}

type patternSetting struct {
	pattern string
	parts   []string // pattern split at "*", once: a lookup allocates nothing
	s       ModelSettings
}

// NewModelPolicy compiles models (validated).
func NewModelPolicy(models map[string]ModelSettings) *ModelPolicy {
	p := &ModelPolicy{exact: map[string]ModelSettings{}}
	p.patterns = appendPatterns(p.patterns, models, p.exact)
	p.patterns = appendPatterns(p.patterns, builtinModels, nil)
	return p
}

// appendPatterns appends models' patterns to dst, most specific first,
// and puts its exact names in exact (nil: it has none).
func appendPatterns(dst []patternSetting, models map[string]ModelSettings, exact map[string]ModelSettings) []patternSetting {
	start := len(dst)
	for k, s := range models {
		if strings.Contains(k, "*") {
			dst = append(dst, patternSetting{k, strings.Split(k, "*"), s})
		} else if exact != nil {
			exact[k] = s
		}
	}
	added := dst[start:]
	sort.Slice(added, func(i, j int) bool {
		li, lj := len(added[i].pattern)-strings.Count(added[i].pattern, "*"), len(added[j].pattern)-strings.Count(added[j].pattern, "*")
		if li != lj {
			return li > lj
		}
		return added[i].pattern < added[j].pattern
	})
	return dst
}

// ThinkingDefault is model's thinking default: "off" (also when nothing
// matches), "on" or "model".
func (p *ModelPolicy) ThinkingDefault(model string) string {
	if s, ok := p.exact[model]; ok && s.ThinkingDefault != "" {
		return s.ThinkingDefault
	}
	for _, ps := range p.patterns {
		if ps.s.ThinkingDefault != "" && globMatch(ps.parts, model) {
			return ps.s.ThinkingDefault
		}
	}
	return ThinkingOff
}

// globMatch reports whether name matches the pattern split at its "*"s
// into parts: each "*" stands for any text (none included), every other
// byte is literal.
func globMatch(parts []string, name string) bool {
	if len(parts) == 1 {
		return parts[0] == name
	}
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(name, mid)
		if i < 0 {
			return false
		}
		name = name[i+len(mid):]
	}
	return len(name) >= len(last) && strings.HasSuffix(name, last)
}

func (c *Config) validateModels(add func(string, ...any)) {
	for k, s := range c.Models {
		if k == "" {
			add("models: a key must be a model name or a pattern with *")
		}
		switch s.ThinkingDefault {
		case "", ThinkingOff, ThinkingOn, ThinkingModel:
		default:
			add("models[%q].thinking_default: %q must be off, on or model", k, s.ThinkingDefault)
		}
	}
}
