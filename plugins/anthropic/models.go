package anthropic

import (
	"time"

	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/canon"
	"github.com/mindrouter/mindrouter/sdk/jsonw"
)

// EncodeModels writes a models list page
// (https://docs.claude.com/en/api/models-list): {"data":[{"type":"model",
// "id","display_name","created_at"}],"has_more":false,"first_id",
// "last_id"}, or on a one-model route (models/{id}, which the host answers
// 404 for an unknown model) that model's object alone
// (https://docs.claude.com/en/api/models). The whole list is one page (the
// gateway serves a handful of models), so limit, before_id and after_id
// need no answer. The display name is the id (backends have no other); a
// known context window is added as max_input_tokens, the field Anthropic
// uses for it.
func (t *Translator) EncodeModels(c *sdk.Call, list *canon.ModelList, out *sdk.Output) error {
	if r := c.Meta(abi.MetaRoute); r == RouteModel || r == RouteModelRoot {
		if len(list.Models) > 0 {
			out.Body = appendModelInfo(out.Body, &list.Models[0])
		}
		return nil
	}
	b := append(out.Body, `{"data":[`...)
	for i := range list.Models {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendModelInfo(b, &list.Models[i])
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

// appendModelInfo appends one ModelInfo object.
func appendModelInfo(b []byte, m *canon.Model) []byte {
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
	return append(b, '}')
}

// maxUnix is 9999-12-31T23:59:59Z, the last second RFC 3339 can write.
const maxUnix = 253402300799
