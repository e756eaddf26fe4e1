package score

import (
	"strings"

	"github.com/mindrouter/mindrouter/core/backend"
	"github.com/mindrouter/mindrouter/core/sched"
)

var _ sched.NeedsExplainer = (*Scorer)(nil)

// needPhrases names the capability behind each capability failure, in the
// order they are reported, as the client reads it in "the model "m" does
// not support …".
var needPhrases = [...]struct{ fail, phrase string }{
	{FailEmbedding, "embeddings"},
	{FailCompletion, "text generation"},
	{FailVision, "image input"},
	{FailTools, "tools"},
	{FailStructured, "structured output"},
}

// Unmet implements sched.NeedsExplainer: when some enabled, healthy
// backend with an adapter serves req.Model and every such backend fails a
// capability req.Needs asks, it names what is missing ("image input";
// "image input and tools" when the backends lack different ones), so the
// request is a 400 rather than a 503 that waiting would not cure. It
// returns "" when one of them has every capability (the model is only
// busy, or fails another constraint such as memory), or none serves the
// model.
func (s *Scorer) Unmet(req *sched.Request, all []*backend.Backend) string {
	var lacks uint8 // bit i: needPhrases[i]
	for _, b := range all {
		st := b.Status()
		m, ok := st.Model(req.Model)
		if !ok || b.State() != "enabled" || !st.Healthy || b.Adapter() == nil {
			continue
		}
		f := capabilityFailure(m.Capabilities, req.Needs)
		if f == "" {
			return ""
		}
		for i := range needPhrases {
			if needPhrases[i].fail == f {
				lacks |= 1 << i
			}
		}
	}
	var sb strings.Builder
	for i := range needPhrases {
		if lacks&(1<<i) != 0 {
			if sb.Len() > 0 {
				sb.WriteString(" and ")
			}
			sb.WriteString(needPhrases[i].phrase)
		}
	}
	return sb.String()
}
