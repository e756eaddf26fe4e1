package thinktag

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// reference is the rule of the package comment, written plainly on a whole
// string.
func reference(content string) (reasoning, rest string) {
	const ws = " \t\r\n"
	i := len(content) - len(strings.TrimLeft(content, ws))
	if i > MaxLead || !strings.HasPrefix(content[i:], openTag) {
		return "", content
	}
	body := content[i+len(openTag):]
	k := strings.Index(body, closeTag)
	if k < 0 {
		return strings.Trim(body, ws), ""
	}
	return strings.Trim(body[:k], ws), strings.TrimLeft(body[k+len(closeTag):], ws)
}

var cases = []string{
	"",
	"Hello",
	"  Hello <think>x</think>",
	"<think>I should greet.</think>Hi!",
	"\n<think>\nI should greet.\n</think>\n\nHi!",
	"<think></think>Hi",
	"<think>\n\n</think>\n\n",
	"<think>cut off by max_tokens  ",
	"<think>cut off inside the tag </thi",
	"<thinking>not our tag</thinking>",
	"<thin",
	"   ",
	"<think>a < b and </b> and </thin k></think>done </think> again",
	"<think>日本語 🎉</think>答え",
	strings.Repeat(" ", MaxLead) + "<think>r</think>c",
	strings.Repeat(" ", MaxLead+1) + "<think>r</think>c",
	"…</think>prompt-opened form is plain in streams",
}

func TestSplitMatchesReference(t *testing.T) {
	for _, c := range cases {
		r, rest := Split(c)
		wr, wrest := reference(c)
		if r != wr || rest != wrest {
			t.Errorf("Split(%q) = %q, %q; want %q, %q", c, r, rest, wr, wrest)
		}
	}
}

// feedSplit feeds content cut at the given offsets.
func feedSplit(content string, cuts []int) (string, string) {
	var s State
	var r, c []byte
	prev := 0
	for _, k := range append(cuts, len(content)) {
		r, c = s.Feed(content[prev:k], r, c)
		prev = k
	}
	r, c = s.Flush(r, c)
	return string(r), string(c)
}

// Every way of cutting the content into two or three pieces, at any byte
// (tags included), gives the whole string's result.
func TestSplitInvariance(t *testing.T) {
	for _, c := range cases {
		wr, wc := Split(c)
		for i := 0; i <= len(c); i++ {
			for j := i; j <= len(c); j++ {
				r, rest := feedSplit(c, []int{i, j})
				if r != wr || rest != wc {
					t.Fatalf("%q cut at %d,%d: %q, %q; want %q, %q", c, i, j, r, rest, wr, wc)
				}
			}
		}
	}
}

func TestSplitRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"<think>", "</think>", "<", "/", "think", ">", " ", "\n", "a", "é", "</thi", "nk>"}
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		c := b.String()
		var cuts []int
		for k := 0; k < len(c); k++ {
			if rng.IntN(3) == 0 {
				cuts = append(cuts, k)
			}
		}
		wr, wc := reference(c)
		if r, rest := feedSplit(c, cuts); r != wr || rest != wc {
			t.Fatalf("%q cuts %v: %q, %q; want %q, %q", c, cuts, r, rest, wr, wc)
		}
	}
}

func FuzzSplit(f *testing.F) {
	for _, c := range cases {
		f.Add(c, uint64(0))
	}
	f.Fuzz(func(t *testing.T, c string, mask uint64) {
		var cuts []int
		for k := 0; k < len(c) && k < 64; k++ {
			if mask&(1<<k) != 0 {
				cuts = append(cuts, k)
			}
		}
		wr, wc := reference(c)
		if r, rest := feedSplit(c, cuts); r != wr || rest != wc {
			t.Fatalf("%q cuts %v: %q, %q; want %q, %q", c, cuts, r, rest, wr, wc)
		}
	})
}
