package canon

// TokenCount is what a tokenize route answers (ABI 2.2): the tokens of
// the request's input as the gateway counted them, and the model's
// context window.
type TokenCount struct {
	Count       int
	MaxModelLen int  // 0: unknown
	Estimate    bool // counted with a generic tokenizer, not the model's own
}

// AppendJSON appends x as canonical JSON.
func (x *TokenCount) AppendJSON(dst []byte) []byte {
	b := append(dst, '{')
	b = num(b, "count", int64(x.Count))
	b = num(b, "max_model_len", int64(x.MaxModelLen))
	b = flag(b, "estimate", x.Estimate)
	return append(b, '}')
}

// DecodeJSON resets x and fills it from canonical JSON.
func (x *TokenCount) DecodeJSON(data []byte) error {
	*x = TokenCount{}
	d, err := start(data)
	if err == nil {
		j, end, err2 := d.object(0)
		err = err2
		for ; err == nil && j < end; j = d.next(j + 1) {
			switch v := j + 1; d.key(j) {
			case "count":
				x.Count, err = d.int(v)
			case "max_model_len":
				x.MaxModelLen, err = d.int(v)
			case "estimate":
				x.Estimate, err = d.boolean(v)
			}
			if err != nil {
				err = d.field(j, err)
			}
		}
	}
	return d.finish("token count", err)
}
