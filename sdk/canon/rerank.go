package canon

import "github.com/mindrouter/mindrouter/sdk/jsonw"

// RerankRequest asks a cross-encoder (or an embedding model) how relevant
// texts are (ABI 2.2): either documents against one query (rerank, the
// shape of vLLM's /v1/rerank, after Jina and Cohere) or text pairs (score,
// vLLM's /v1/score: Text1 holds one text, scored against every one of
// Text2, or as many texts as Text2, scored pairwise).
type RerankRequest struct {
	Model string
	// Rerank.
	Query           string
	Documents       []string
	TopN            int // 0: every document
	ReturnDocuments bool
	// Score.
	Text1, Text2 []string
	User         string
}

// Score reports whether r is a score request (text pairs) rather than a
// rerank.
func (r *RerankRequest) Score() bool { return len(r.Text2) > 0 }

// RerankResult is one document's (or pair's) relevance.
type RerankResult struct {
	Index    int // the document's (or pair's) position in the request
	Score    float64
	Document string // the document's text, when the request asked for it
}

// RerankResponse holds the results: a rerank's sorted by descending
// score (at most TopN), a score's in request order.
type RerankResponse struct {
	Model   string
	Results []RerankResult
	Usage   *Usage
}

// AppendJSON appends x as canonical JSON.
func (x *RerankRequest) AppendJSON(dst []byte) []byte {
	b := append(dst, '{')
	b = str(b, "model", x.Model)
	b = str(b, "query", x.Query)
	b = strs(b, "documents", x.Documents)
	b = num(b, "top_n", int64(x.TopN))
	b = flag(b, "return_documents", x.ReturnDocuments)
	b = strs(b, "text_1", x.Text1)
	b = strs(b, "text_2", x.Text2)
	b = str(b, "user", x.User)
	return append(b, '}')
}

// AppendJSON appends x as canonical JSON. Scores are written in full
// (zero included).
func (x *RerankResponse) AppendJSON(dst []byte) []byte {
	b := append(dst, '{')
	b = str(b, "model", x.Model)
	b = append(key(b, "results"), '[')
	for i := range x.Results {
		r := &x.Results[i]
		b = append(elem(b), `{"index":`...)
		b = jsonw.Int(b, int64(r.Index))
		b = jsonw.Float(append(b, `,"score":`...), r.Score)
		b = str(b, "document", r.Document)
		b = append(b, '}')
	}
	b = append(b, ']')
	b = usage(b, x.Usage)
	return append(b, '}')
}

// DecodeJSON resets x and fills it from canonical JSON.
func (x *RerankRequest) DecodeJSON(data []byte) error {
	*x = RerankRequest{}
	d, err := start(data)
	if err == nil {
		j, end, err2 := d.object(0)
		err = err2
		for ; err == nil && j < end; j = d.next(j + 1) {
			switch v := j + 1; d.key(j) {
			case "model":
				x.Model, err = d.str(v)
			case "query":
				x.Query, err = d.str(v)
			case "documents":
				x.Documents, err = d.strings(v)
			case "top_n":
				x.TopN, err = d.int(v)
			case "return_documents":
				x.ReturnDocuments, err = d.boolean(v)
			case "text_1":
				x.Text1, err = d.strings(v)
			case "text_2":
				x.Text2, err = d.strings(v)
			case "user":
				x.User, err = d.str(v)
			}
			if err != nil {
				err = d.field(j, err)
			}
		}
	}
	return d.finish("rerank request", err)
}

// DecodeJSON resets x and fills it from canonical JSON.
func (x *RerankResponse) DecodeJSON(data []byte) error {
	*x = RerankResponse{}
	d, err := start(data)
	if err == nil {
		j, end, err2 := d.object(0)
		err = err2
		for ; err == nil && j < end; j = d.next(j + 1) {
			switch v := j + 1; d.key(j) {
			case "model":
				x.Model, err = d.str(v)
			case "results":
				x.Results, err = slice(d, v, (*RerankResult).decode)
			case "usage":
				x.Usage, err = d.usage(v)
			}
			if err != nil {
				err = d.field(j, err)
			}
		}
	}
	return d.finish("rerank response", err)
}

func (r *RerankResult) decode(d *decoder, i int) error {
	j, end, err := d.object(i)
	for ; j < end; j = d.next(j + 1) {
		switch v := j + 1; d.key(j) {
		case "index":
			r.Index, err = d.int(v)
		case "score":
			r.Score, _, err = d.float(v, 64)
		case "document":
			r.Document, err = d.str(v)
		}
		if err != nil {
			return d.field(j, err)
		}
	}
	return err
}
