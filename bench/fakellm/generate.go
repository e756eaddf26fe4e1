package fakellm

import (
	"strings"

	"github.com/valyala/fastjson"
)

// genRequest is a generation request after parsing, engine independent.
type genRequest struct {
	ms           *modelState
	reqModel     string // the model name as the client wrote it
	stream       bool
	maxTokens    int // 0 = no limit
	promptTokens int
	seedText     string // last user message or prompt: seeds the text
	think        bool
	hideThinking bool   // vLLM include_reasoning=false
	jsonContent  string // when set, the content is this JSON document
	tool         *toolPlan
	toolNamed    bool   // vLLM: a named tool_choice finishes with "stop"
	nullContent  bool   // vLLM: content is null when a tool is called with tool_choice auto
	echoText     string // vLLM completions echo: the prompt, prepended to the text
	continuation bool   // raw completion: the text continues the prompt after a space

	includeUsage, continuousUsage bool
	fault                         faultKind

	n           int // vLLM: choices (0 or 1: one)
	logprobs    bool
	topLogprobs int
}

type toolPlan struct {
	name   string
	args   string   // the arguments JSON object
	pieces []string // args split into tokens (at least 3 when possible)
}

// plan is the token sequence a request produces: reasoning, then content or
// one tool call (a header token and the argument pieces), cut at the token
// budget.
type plan struct {
	reasoning  []string
	content    []string
	tool       *toolPlan
	toolArgs   int    // argument pieces within budget
	finish     string // "stop", "length" or "tool_calls"
	completion int    // tokens produced
}

const reasoningSalt = 0x7265_6173_6f6e_696e

// makePlan builds the plan of r: its natural output cut at r.maxTokens.
func (s *Server) makePlan(r *genRequest) *plan {
	p := &plan{}
	seed := textSeed(r.ms.name, r.seedText)
	if r.think {
		p.reasoning = appendTextTokens(make([]string, 0, s.cfg.ReasoningTokens), seed^reasoningSalt, s.cfg.ReasoningTokens)
	}
	var inContent []string // Config.ThinkInContent: the reasoning, tagged, leads the content
	if s.cfg.ThinkInContent && len(p.reasoning) > 0 {
		inContent = append(append([]string{"<th", "ink>\n"}, p.reasoning...), "\n</", "think>\n\n")
		p.reasoning = nil
	}
	toolTokens := 0
	switch {
	case r.tool != nil:
		p.tool = r.tool
		p.toolArgs = len(r.tool.pieces)
		toolTokens = 1 + len(r.tool.pieces)
	case r.jsonContent != "":
		p.content = chopPieces(r.jsonContent, 4, 1)
	default:
		p.content = appendTextTokens(make([]string, 0, s.cfg.Tokens), seed, s.cfg.Tokens)
		if r.continuation && len(p.content) > 0 {
			p.content[0] = " " + p.content[0]
		}
	}
	if inContent != nil {
		p.content = append(inContent, p.content...)
	}
	total := len(p.reasoning) + len(p.content) + toolTokens
	budget := r.maxTokens
	if budget <= 0 || budget >= total {
		p.completion = total
		p.finish = "stop"
		if p.tool != nil && !r.toolNamed {
			p.finish = "tool_calls"
		}
		return p
	}
	p.finish = "length"
	p.completion = budget
	n := min(len(p.reasoning), budget)
	p.reasoning = p.reasoning[:n]
	budget -= n
	n = min(len(p.content), budget)
	p.content = p.content[:n]
	budget -= n
	if p.tool != nil {
		if budget == 0 {
			p.tool = nil
			p.toolArgs = 0
		} else {
			p.toolArgs = budget - 1
		}
	}
	return p
}

// toolArgsText is the argument text the plan emits (cut when truncated).
func (p *plan) toolArgsText() string {
	if p.tool == nil {
		return ""
	}
	if p.toolArgs == len(p.tool.pieces) {
		return p.tool.args
	}
	return strings.Join(p.tool.pieces[:p.toolArgs], "")
}

// --- shared request parsing -------------------------------------------------

// messageStats counts the prompt tokens of a chat (words of every text
// content, plus 4 per message for the chat template, plus the words of
// promptExtras) and returns the text of the last user message (of the last
// message when no user spoke). vLLM's /tokenize counts the same tokens
// (vllm_tokenize.go), as real vLLM's two counts agree.
func messageStats(msgs []*fastjson.Value) (tokens int, lastUser string) {
	lastAny := ""
	for _, m := range msgs {
		tokens += templateTokens
		text := messageText(m.Get("content"))
		tokens += countWords(text)
		promptExtras(m, func(b []byte) { tokens += countWordsBytes(b) })
		lastAny = text
		if string(m.GetStringBytes("role")) == "user" {
			lastUser = text
		}
	}
	if lastUser == "" {
		lastUser = lastAny
	}
	return tokens, lastUser
}

// templateTokens is the chat template's tokens around each message:
// <|im_start|>, the role, a newline before the content and <|im_end|>.
const templateTokens = 4

// promptExtras calls f with each text of message m beyond its content that
// the simulated chat template puts in the prompt: the reasoning and the
// arguments of earlier assistant turns. Both the chat path (messageStats)
// and /tokenize count through it, so they cannot drift apart.
func promptExtras(m *fastjson.Value, f func([]byte)) {
	if b := m.GetStringBytes("thinking"); len(b) > 0 {
		f(b)
	}
	for _, tc := range m.GetArray("tool_calls") {
		if a := tc.Get("function", "arguments"); a != nil {
			if a.Type() == fastjson.TypeString {
				f(a.GetStringBytes())
			} else {
				f(a.MarshalTo(nil))
			}
		}
	}
}

// messageText returns the text of a message content: a string, or the text
// parts of an OpenAI content array joined by newlines.
func messageText(c *fastjson.Value) string {
	if c == nil {
		return ""
	}
	switch c.Type() {
	case fastjson.TypeString:
		return string(c.GetStringBytes())
	case fastjson.TypeArray:
		var sb strings.Builder
		for _, part := range c.GetArray() {
			t := part.GetStringBytes("text")
			if t == nil {
				continue
			}
			if sb.Len() > 0 {
				sb.WriteByte('\n')
			}
			sb.Write(t)
		}
		return sb.String()
	}
	return ""
}

// pickTool chooses the tool to call: the one named by choice, else the
// first. It returns nil when tools is empty; notFound is set when choice
// names a tool that is not in tools.
func pickTool(tools []*fastjson.Value, name string, seed uint64) (tp *toolPlan, notFound bool) {
	if len(tools) == 0 {
		return nil, false
	}
	var pick *fastjson.Value
	if name != "" {
		for _, t := range tools {
			if string(t.GetStringBytes("function", "name")) == name {
				pick = t
				break
			}
		}
		if pick == nil {
			return nil, true
		}
	} else {
		pick = tools[0]
	}
	fn := pick.Get("function")
	if fn == nil {
		fn = pick // tolerate {"name":..., "parameters":...}
	}
	tname := string(fn.GetStringBytes("name"))
	args := jsonFromSchema(fn.Get("parameters"), hashString(seed, tname))
	return &toolPlan{name: tname, args: args, pieces: chopPieces(args, 4, 3)}, false
}

// jtype is v.Type() that treats a missing value (nil) as null.
func jtype(v *fastjson.Value) fastjson.Type {
	if v == nil {
		return fastjson.TypeNull
	}
	return v.Type()
}

// toolTurnsUsed reports whether a chat request's history already holds
// max assistant turns with tool calls (max 0: never).
func toolTurnsUsed(req *fastjson.Value, max int) bool {
	if max <= 0 {
		return false
	}
	n := 0
	for _, m := range req.GetArray("messages") {
		if string(m.GetStringBytes("role")) == "assistant" && len(m.GetArray("tool_calls")) > 0 {
			n++
		}
	}
	return n >= max
}

// lastRoleTool reports whether a tool's result came after the chat
// request's last assistant message.
func lastRoleTool(req *fastjson.Value) bool {
	msgs := req.GetArray("messages")
	// Since the last answer: agents (Claude Code) send a tool's result
	// with text after it (reminders), which the translators make a user
	// message following the tool message.
	for i := len(msgs) - 1; i >= 0; i-- {
		switch string(msgs[i].GetStringBytes("role")) {
		case "tool":
			return true
		case "assistant":
			return false
		}
	}
	return false
}
