package fakellm

import "strconv"

// Token log probabilities in OpenAI's shape, which vLLM returns for
// logprobs=true (top_logprobs alternatives per token) and Ollama (since
// v0.12.11) as a bare array of the same entries:
// {"token","logprob","bytes","top_logprobs":[{"token","logprob","bytes"}]}.
// The values are made up but deterministic: the chosen token first, its
// alternatives less likely.

// logprobOf is a deterministic log probability for tok, in (-1, 0].
func logprobOf(tok string, rank int) float64 {
	h := hashString(uint64(rank)+1, tok)
	return -float64(h%1000)/1000 - float64(rank)
}

// appendTokenLogprob writes one entry for tok with top alternatives.
func appendTokenLogprob(b []byte, tok string, top int) []byte {
	b = appendLogprobEntry(b, tok, 0)
	b = b[:len(b)-1] // reopen the object
	b = append(b, `,"top_logprobs":[`...)
	for i := range top {
		if i > 0 {
			b = append(b, ',')
		}
		alt := tok
		if i > 0 {
			alt = tok + "~" + itoa(i)
		}
		b = appendLogprobEntry(b, alt, i)
	}
	return append(b, "]}"...)
}

func appendLogprobEntry(b []byte, tok string, rank int) []byte {
	b = append(b, `{"token":`...)
	b = appendJSONString(b, tok)
	b = append(b, `,"logprob":`...)
	b = appendFloat(b, logprobOf(tok, rank))
	b = append(b, `,"bytes":[`...)
	for i := 0; i < len(tok); i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendInt(b, int64(tok[i]))
	}
	return append(b, "]}"...)
}

// appendLogprobList writes the entries of toks as a JSON array.
func appendLogprobList(b []byte, toks []string, top int) []byte {
	b = append(b, '[')
	for i, tok := range toks {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendTokenLogprob(b, tok, top)
	}
	return append(b, ']')
}

func appendFloat(b []byte, f float64) []byte { return strconv.AppendFloat(b, f, 'f', -1, 64) }
