package ollama

import (
	"strconv"
	"time"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
	"github.com/valyala/fastjson"
)

// DecodeResponse parses a non-streamed /api/chat response. The response id
// is left empty: the gateway assigns ids.
func (a *Adapter) DecodeResponse(c *sdk.Call, body []byte, resp *canon.ChatResponse) error {
	v, err := a.parseObject(body, "response")
	if err != nil {
		return err
	}
	if e := v.Get("error"); e != nil && e.Type() != fastjson.TypeNull {
		return sdk.BadInput("backend error: " + errorText(e))
	}
	resp.Model = string(v.GetStringBytes("model"))
	resp.Created = parseCreated(v.GetStringBytes("created_at"))
	resp.Choices = make([]canon.Choice, 1)
	ch := &resp.Choices[0]
	m := &ch.Message
	m.Role = canon.RoleAssistant
	if msg := v.Get("message"); msg != nil && msg.Type() != fastjson.TypeNull {
		if msg.Type() != fastjson.TypeObject {
			return sdk.BadInput("ollama response: message is not an object")
		}
		if s := msg.GetStringBytes("content"); len(s) > 0 {
			m.Content = []canon.Part{{Type: canon.PartText, Text: string(s)}}
		}
		m.Reasoning = string(msg.GetStringBytes("thinking"))
		calls, err := toolCalls(msg)
		if err != nil {
			return err
		}
		if len(calls) > 0 {
			m.ToolCalls = make([]canon.ToolCall, len(calls))
			for i, tc := range calls {
				t := &m.ToolCalls[i]
				t.ID, t.Name, t.Arguments, err = a.toolCall(tc, i)
				if err != nil {
					return err
				}
			}
		}
	}
	ch.FinishReason = finishReason(len(m.ToolCalls) > 0, v.GetStringBytes("done_reason"))
	resp.Usage = usage(v)
	return nil
}

// parseObject parses one JSON object with the adapter's parser. Strings read
// from the result alias the parser and must be copied before the next parse.
func (a *Adapter) parseObject(b []byte, what string) (*fastjson.Value, error) {
	v, err := a.p.ParseBytes(b)
	if err != nil {
		return nil, sdk.BadInput("ollama " + what + ": invalid JSON: " + err.Error())
	}
	if v.Type() != fastjson.TypeObject {
		return nil, sdk.BadInput("ollama " + what + ": not a JSON object")
	}
	return v, nil
}

// toolCalls returns message.tool_calls (nil when absent or null).
func toolCalls(msg *fastjson.Value) ([]*fastjson.Value, error) {
	v := msg.Get("tool_calls")
	if v == nil || v.Type() == fastjson.TypeNull {
		return nil, nil
	}
	calls, err := v.Array()
	if err != nil {
		return nil, sdk.BadInput("ollama: message.tool_calls is not an array")
	}
	return calls, nil
}

// toolCall reads one Ollama tool call. Ollama sends arguments as a JSON
// object; canonical arguments are JSON text, so the object is re-encoded
// compactly. A call without an id gets "call_<n>".
func (a *Adapter) toolCall(v *fastjson.Value, n int) (id, name, args string, err error) {
	fn := v.Get("function")
	if fn == nil || fn.Type() != fastjson.TypeObject {
		return "", "", "", sdk.BadInput("ollama: tool_calls[" + strconv.Itoa(n) + "].function is not an object")
	}
	nb := fn.GetStringBytes("name")
	if len(nb) == 0 {
		return "", "", "", sdk.BadInput("ollama: tool_calls[" + strconv.Itoa(n) + "].function.name is missing")
	}
	name = string(nb)
	switch av := fn.Get("arguments"); {
	case av == nil || av.Type() == fastjson.TypeNull:
		args = "{}"
	case av.Type() == fastjson.TypeString:
		args = string(av.GetStringBytes())
	default:
		a.scratch = appendCompact(a.scratch[:0], av)
		args = string(a.scratch)
	}
	if idb := v.GetStringBytes("id"); len(idb) > 0 {
		id = string(idb)
	} else {
		id = "call_" + strconv.Itoa(n)
	}
	return id, name, args, nil
}

// appendCompact writes v as compact JSON. fastjson's own MarshalTo passes
// raw string bytes through unchecked and re-quotes with strconv, which is
// not JSON for every input, so strings go through jsonw.
func appendCompact(b []byte, v *fastjson.Value) []byte {
	switch v.Type() {
	case fastjson.TypeObject:
		o, _ := v.Object()
		b = append(b, '{')
		first := true
		o.Visit(func(k []byte, v *fastjson.Value) {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = jsonw.Bytes(b, k)
			b = append(b, ':')
			b = appendCompact(b, v)
		})
		return append(b, '}')
	case fastjson.TypeArray:
		arr, _ := v.Array()
		b = append(b, '[')
		for i, e := range arr {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCompact(b, e)
		}
		return append(b, ']')
	case fastjson.TypeString:
		return jsonw.Bytes(b, v.GetStringBytes())
	case fastjson.TypeNumber:
		return appendNumber(b, v)
	case fastjson.TypeTrue:
		return append(b, "true"...)
	case fastjson.TypeFalse:
		return append(b, "false"...)
	}
	return append(b, "null"...)
}

// appendNumber copies a number's text when it is valid JSON; fastjson also
// accepts forms such as "1e", "+1" or "NaN", which are normalized or nulled.
func appendNumber(b []byte, v *fastjson.Value) []byte {
	n := len(b)
	b = v.MarshalTo(b)
	if validNumber(b[n:]) {
		return b
	}
	f, err := strconv.ParseFloat(string(b[n:]), 64)
	if err != nil {
		return append(b[:n], "null"...)
	}
	return jsonw.Float(b[:n], f)
}

// validNumber reports whether s matches the JSON number grammar.
func validNumber(s []byte) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	return i == len(s)
}

// finishReason maps Ollama's done_reason ("stop", "length", "load", ...)
// to the canonical vocabulary; tool calls win.
func finishReason(tools bool, doneReason []byte) canon.FinishReason {
	switch {
	case tools:
		return canon.FinishToolCalls
	case string(doneReason) == "length":
		return canon.FinishLength
	}
	return canon.FinishStop
}

// usage reads the token counts of a final (done) Ollama message.
func usage(v *fastjson.Value) *canon.Usage {
	p, e := count(v, "prompt_eval_count"), count(v, "eval_count")
	return &canon.Usage{PromptTokens: p, CompletionTokens: e, TotalTokens: p + e}
}

// count reads a non-negative token count; anything else counts as 0.
func count(v *fastjson.Value, key string) int {
	n := v.GetInt(key)
	if n < 0 || int64(n) > 1<<40 {
		return 0
	}
	return n
}

// parseCreated turns Ollama's created_at (RFC 3339 with nanoseconds) into
// unix seconds; 0 when absent or malformed. It runs once per stream line, so
// Ollama's usual form is read directly and anything else goes to time.Parse.
func parseCreated(s []byte) int64 {
	if len(s) == 0 {
		return 0
	}
	if t, ok := parseRFC3339(s); ok {
		return t
	}
	t, err := time.Parse(time.RFC3339Nano, string(s))
	if err != nil {
		return 0
	}
	return t.Unix()
}

// parseRFC3339 reads YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM).
func parseRFC3339(s []byte) (int64, bool) {
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return 0, false
	}
	year, month, day := digits(s[0:4]), digits(s[5:7]), digits(s[8:10])
	hour, minute, sec := digits(s[11:13]), digits(s[14:16]), digits(s[17:19])
	if year < 0 || month < 1 || month > 12 || day < 1 || day > daysIn(month, year) ||
		hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return 0, false
	}
	i := 19
	if s[i] == '.' {
		j := i + 1
		for i = j; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		}
		if i == j || i-j > 9 {
			return 0, false
		}
	}
	var offset int64
	switch rest := s[i:]; {
	case len(rest) == 1 && rest[0] == 'Z':
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, om := digits(rest[1:3]), digits(rest[4:6])
		if oh < 0 || oh > 23 || om < 0 || om > 59 {
			return 0, false
		}
		offset = oh*3600 + om*60
		if rest[0] == '-' {
			offset = -offset
		}
	default:
		return 0, false
	}
	return daysSinceEpoch(year, month, day)*86400 + hour*3600 + minute*60 + sec - offset, true
}

// digits parses ASCII decimal digits; -1 if any byte is not one.
func digits(b []byte) int64 {
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

func daysIn(month, year int64) int64 {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysSinceEpoch is the number of days from 1970-01-01 to the given date of
// the proleptic Gregorian calendar (Howard Hinnant's days_from_civil).
func daysSinceEpoch(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// errorText returns an "error" member's message: the string itself, an
// object's "message", or the compact JSON of anything else.
func errorText(e *fastjson.Value) string {
	switch e.Type() {
	case fastjson.TypeString:
		return string(e.GetStringBytes())
	case fastjson.TypeObject:
		if m := e.GetStringBytes("message"); m != nil {
			return string(m)
		}
	}
	return string(appendCompact(nil, e))
}
