package responses

import (
	"github.com/valyala/fastjson"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// The Response object repeats the request: its instructions, limits,
// sampling, tools and the rest, as OpenAI's does (clients check store,
// tools and max_output_tokens there). The canonical response carries no
// request, so DecodeRequest leaves the translator a note (sdk.Call.SetEcho,
// ABI 2.9) that the host hands back to every encode of the same request:
//
//	byte    echoVersion
//	string  pre:  "instructions":…,"max_output_tokens":…,"metadata":…
//	string  post: "parallel_tool_calls":… up to "truncation":…
//	string  user: the user value (null when none)
//	uvarint n, then n × (flat, namespace, name): the namespaced tools
//	        flattened for the model, so their calls are named back
//
// Each value is the request's own JSON, or OpenAI's default when the
// request left the field out. A host older than 2.9 passes no note: the
// defaults are written, and flattened names are not mapped back.
const echoVersion = 1

// maxEchoTools bounds the tools a note repeats (their JSON's bytes).
const maxEchoTools = 64 << 10

// Default fragments, for a request without the field (or without a note).
const (
	defaultPre  = `"instructions":null,"max_output_tokens":null,"metadata":{}`
	defaultPost = `"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"store":true,"temperature":1,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1,"truncation":"disabled"`
	defaultUser = `null`
)

// echoNote is a decoded note; its strings view the call's meta.
type echoNote struct {
	pre, post, user string
	names           []byte // the names part, scanned by unflat
}

// read decodes the note of call c (defaults when it has none or it does
// not parse).
func (e *echoNote) read(c *sdk.Call) {
	*e = echoNote{pre: defaultPre, post: defaultPost, user: defaultUser}
	b, ok := c.MetaBytes(abi.MetaEcho)
	if !ok || len(b) == 0 || b[0] != echoVersion {
		return
	}
	r := sdk.StateReader{B: b[1:]}
	pre, post, user := bytesOf(&r), bytesOf(&r), bytesOf(&r)
	if r.Err() != nil || pre == "" || post == "" || user == "" {
		return
	}
	e.pre, e.post, e.user, e.names = pre, post, user, r.B
}

// unflat returns the namespace and name of a flattened tool name, or
// ("", flat) for a name no namespace gave.
func (e *echoNote) unflat(flat string) (namespace, name string) {
	r := sdk.StateReader{B: e.names}
	n := r.Uint()
	for range n {
		f, ns, nm := bytesOf(&r), bytesOf(&r), bytesOf(&r)
		if r.Err() != nil {
			break
		}
		if f == flat {
			return ns, nm
		}
	}
	return "", flat
}

// writeEcho builds the note of request f (its tools read into tl) and
// leaves it on c.
func writeEcho(c *sdk.Call, f *reqFields, tl *toolList, w *sdk.StateWriter, scratch []byte) []byte {
	b := append(scratch[:0], `"instructions":`...)
	b = appendRaw(b, f.instructions, "null")
	b = append(b, `,"max_output_tokens":`...)
	b = appendRaw(b, f.maxOutputTokens, "null")
	b = append(b, `,"metadata":`...)
	b = appendRaw(b, f.metadata, "{}")
	nPre := len(b)
	b = append(b, `"parallel_tool_calls":`...)
	b = appendRaw(b, f.parallelToolCalls, "true")
	b = append(b, `,"previous_response_id":`...)
	if id, ok := c.MetaBytes(abi.MetaKeptPrefix + "previous_response_id"); ok {
		b = jsonw.String(b, view(id)) // the host's keeper took it out of the body
	} else {
		b = appendRaw(b, f.previousResponseID, "null")
	}
	if id, ok := c.MetaBytes(abi.MetaKeptPrefix + "conversation"); ok {
		b = append(b, `,"conversation":{"id":`...)
		b = append(jsonw.String(b, view(id)), '}')
	}
	b = append(b, `,"reasoning":`...)
	b = appendReasoning(b, f.reasoning)
	b = append(b, `,"store":`...)
	b = appendRaw(b, f.store, "true")
	b = append(b, `,"temperature":`...)
	b = appendRaw(b, f.temperature, "1")
	b = append(b, `,"text":`...)
	b = appendText(b, f.text)
	b = append(b, `,"tool_choice":`...)
	b = appendRaw(b, f.toolChoice, `"auto"`)
	b = append(b, `,"tools":`...)
	if n := len(b); f.tools != nil && f.tools.Type() != fastjson.TypeNull {
		// A note that large would cost every stream call a copy: the
		// tools (its bulk) are then echoed as none.
		if b = f.tools.MarshalTo(b); len(b)-n > maxEchoTools {
			b = append(b[:n], "[]"...)
		}
	} else {
		b = append(b, "[]"...)
	}
	b = append(b, `,"top_p":`...)
	b = appendRaw(b, f.topP, "1")
	b = append(b, `,"truncation":`...)
	b = appendRaw(b, f.truncation, `"disabled"`)
	nPost := len(b)
	b = appendRaw(b, f.user, "null")
	w.B = append(w.B[:0], echoVersion)
	w.String(view(b[:nPre]))
	w.String(view(b[nPre:nPost]))
	w.String(view(b[nPost:]))
	w.Uint(uint64(len(tl.names)))
	for _, n := range tl.names {
		w.String(n.flat)
		w.String(n.namespace)
		w.String(n.name)
	}
	c.SetEcho(w.B)
	return b
}

// appendRaw writes v's JSON as the request had it (compact), or def when
// it is absent or null.
func appendRaw(b []byte, v *fastjson.Value, def string) []byte {
	if v == nil || v.Type() == fastjson.TypeNull {
		return append(b, def...)
	}
	return v.MarshalTo(b)
}

// appendReasoning writes {"effort","summary"}: the request's values (the
// summary as asked, though the engines here show the reasoning itself),
// null for those it left out.
func appendReasoning(b []byte, v *fastjson.Value) []byte {
	var effort, summary *fastjson.Value
	if v != nil && v.Type() == fastjson.TypeObject {
		effort, summary = v.Get("effort"), v.Get("summary")
		if summary == nil {
			summary = v.Get("generate_summary") // its deprecated spelling
		}
	}
	b = append(b, `{"effort":`...)
	b = appendRaw(b, effort, "null")
	b = append(b, `,"summary":`...)
	b = appendRaw(b, summary, "null")
	return append(b, '}')
}

// appendText writes {"format"[,"verbosity"]}: the request's format, or
// plain text.
func appendText(b []byte, v *fastjson.Value) []byte {
	var format, verbosity *fastjson.Value
	if v != nil && v.Type() == fastjson.TypeObject {
		format, verbosity = v.Get("format"), v.Get("verbosity")
	}
	b = append(b, `{"format":`...)
	b = appendRaw(b, format, `{"type":"text"}`)
	if verbosity != nil && verbosity.Type() != fastjson.TypeNull {
		b = append(b, `,"verbosity":`...)
		b = verbosity.MarshalTo(b)
	}
	return append(b, '}')
}
