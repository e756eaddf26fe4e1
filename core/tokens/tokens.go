// Package tokens counts the tokens of a canonical request with a generic
// BPE tokenizer (tiktoken's cl100k_base, read from files embedded in the
// binary: nothing is downloaded at run time). A model's own tokenizer
// counts differently, so a count from here is an estimate: close for
// English text (within ~10–20% of Llama and Qwen tokenizers), rougher for
// other scripts and code. Exact counts need the backend's own tokenizer
// (vLLM /tokenize), which context capping asks near the limit when the
// backend's adapter can build the request (the count ops of ABI 2.7; sent
// and memoised by core/tokencount), with this count as the fallback.
package tokens

import (
	"errors"
	"fmt"
	"sync"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Per-message and per-request overheads of OpenAI's chat format
// (cookbook "How to count tokens with tiktoken"), and a flat cost for an
// image (OpenAI's low-detail tile): what a chat template adds around the
// text, which no generic count sees.
const (
	perMessage = 3
	perName    = 1
	perReply   = 3
	perImage   = 85
)

// ErrTooLong: the input is longer than the counter counts (the BPE's
// regular expression costs time linear in the text, with a large constant).
var ErrTooLong = errors.New("tokens: input too long to count")

// Counter counts tokens. The zero value is not usable; call New. It is
// safe for concurrent use; the tokenizer loads on first use (~0.2 s).
type Counter struct {
	maxChars int
	once     sync.Once
	enc      *tiktoken.Tiktoken
	err      error
}

// New returns a Counter that refuses inputs of more than maxChars bytes of
// text in total.
func New(maxChars int) *Counter { return &Counter{maxChars: maxChars} }

// loaderOnce sets tiktoken's loader, a package variable of tiktoken's,
// once per process: every Counter's first use setting it raced with
// another Counter's load (two gateways in one process, as the tests run).
var loaderOnce sync.Once

func (c *Counter) load() error {
	c.once.Do(func() {
		loaderOnce.Do(func() { tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader()) })
		c.enc, c.err = tiktoken.GetEncoding(tiktoken.MODEL_CL100K_BASE)
		if c.err != nil {
			c.err = fmt.Errorf("tokens: load cl100k_base: %w", c.err)
		}
	})
	return c.err
}

// Text counts the tokens of s (special-token text counts as ordinary text).
func (c *Counter) Text(s string) (int, error) {
	if len(s) > c.maxChars {
		return 0, ErrTooLong
	}
	if err := c.load(); err != nil {
		return 0, err
	}
	return len(c.enc.EncodeOrdinary(s)), nil
}

// Chat counts a chat request's input: every message's text, name,
// reasoning and tool calls, the tool definitions, the format overheads,
// and a flat cost per image.
func (c *Counter) Chat(req *canon.ChatRequest) (int, error) {
	if err := c.load(); err != nil {
		return 0, err
	}
	chars := 0
	var texts []string
	add := func(s string) {
		if s != "" {
			chars += len(s)
			texts = append(texts, s)
		}
	}
	n := perReply
	for i := range req.Messages {
		m := &req.Messages[i]
		n += perMessage
		add(string(m.Role))
		if m.Name != "" {
			n += perName
			add(m.Name)
		}
		for j := range m.Content {
			if m.Content[j].Type == canon.PartImage {
				n += perImage
			} else {
				add(m.Content[j].Text)
			}
		}
		add(m.Reasoning)
		for _, tc := range m.ToolCalls {
			add(tc.Name)
			add(tc.Arguments)
		}
	}
	for _, p := range req.Prompt { // a legacy text completion
		add(p)
	}
	for i := range req.Tools {
		add(req.Tools[i].Name)
		add(req.Tools[i].Description)
		add(string(req.Tools[i].Parameters))
	}
	if chars > c.maxChars {
		return 0, ErrTooLong
	}
	for _, s := range texts {
		n += len(c.enc.EncodeOrdinary(s))
	}
	return n, nil
}
