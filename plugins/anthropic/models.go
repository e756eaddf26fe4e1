package anthropic

import (
	"time"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// EncodeModels writes a models list page
// (https://docs.claude.com/en/api/models-list): {"data":[{"type":"model",
// "id","display_name","created_at"}],"has_more":false,"first_id",
// "last_id"}. The whole list is one page (the gateway serves a handful of
// models), so limit, before_id and after_id need no answer. The display
// name is the id (backends have no other); a known context window is added
// as max_input_tokens, the field Anthropic uses for it.
func (t *Translator) EncodeModels(c *sdk.Call, list *canon.ModelList, out *sdk.Output) error {
	b := append(out.Body, `{"data":[`...)
	for i := range list.Models {
		m := &list.Models[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"model","id":`...)
		b = jsonw.String(b, m.ID)
		b = append(b, `,"display_name":`...)
		b = jsonw.String(b, m.ID)
		b = append(b, `,"created_at":"`...)
		b = time.Unix(min(max(m.Created, 0), maxUnix), 0).UTC().AppendFormat(b, time.RFC3339)
		b = append(b, '"')
		if m.ContextLength > 0 {
			b = append(b, `,"max_input_tokens":`...)
			b = jsonw.Int(b, int64(m.ContextLength))
		}
		b = append(b, '}')
	}
	b = append(b, `],"has_more":false,"first_id":`...)
	if n := len(list.Models); n > 0 {
		b = jsonw.String(b, list.Models[0].ID)
		b = append(b, `,"last_id":`...)
		b = jsonw.String(b, list.Models[n-1].ID)
	} else {
		b = append(b, `null,"last_id":null`...)
	}
	out.Body = append(b, '}')
	return nil
}

// maxUnix is 9999-12-31T23:59:59Z, the last second RFC 3339 can write.
const maxUnix = 253402300799
