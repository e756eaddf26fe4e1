package sdk

import (
	"strconv"

	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Patch is a same-dialect fast path for one translator and one adapter of
// a bundle whose client dialect and backend wire format are the same (an
// OpenAI client and vLLM's OpenAI-compatible server): the fused ops of that
// pair rewrite the bytes, passing the client's or backend's JSON through
// with only what differs rewritten, instead of decoding it into canonical
// values and encoding them again. Attach one with Component.Patch.
//
// Each method either handles its call completely or declines by returning
// false; the SDK then runs the call through the two components as if there
// were no patch, discarding what the method wrote (body, meta, states,
// Done). A patch may handle a call only when it gives what the components
// give, driven as the fused op drives them: the same body, meta, state
// blobs and result flags. It never handles a call the components would
// fail (it cannot return an error), and declines whatever it cannot be sure
// of: the patch is an optimisation, and correctness comes first.
//
// Each method gets the fused op's Call: its Op is the fused op, its Flags
// and meta the host's (the translator's meta, with abi.MetaContextLength
// on a request).
type Patch interface {
	// PatchRequest writes the backend request for the client's body to
	// out.Body, with the adapter's meta (path, method, content type), and
	// sets the routing fields of req that request_decode reports (Model,
	// Stream, IncludeUsage, MaxTokens); the SDK writes their meta during
	// the call and keeps nothing of req (Model may alias body).
	PatchRequest(c *Call, body []byte, req *canon.ChatRequest, out *Output) bool
	// PatchResponse writes the client's response for the backend's body to
	// out and reports, in r, what the adapter's decode would have: the
	// usage and the first choice's finish reason.
	PatchResponse(c *Call, body []byte, r *PatchReport, out *Output) bool
	// PatchStream writes the client's bytes for a batch of backend events,
	// updates the components' states as they would (st), calls c.Done when
	// the adapter would, and reports the batch's usage and choice 0's
	// finish reason (the last ones seen) in r.
	PatchStream(c *Call, st *PatchStream, events [][]byte, r *PatchReport, out *Output) bool
}

// PatchReport is what a response or stream patch reports for the host, as
// the adapter's decode would: the SDK turns it into the usage and finish
// reason meta.
type PatchReport struct {
	Usage        canon.Usage
	HasUsage     bool
	FinishReason canon.FinishReason // of choice 0; "" for none
	// OutputTokens is the estimate of the output the call passed on, as
	// the SDK counts it (OutputTokens per delta or message).
	OutputTokens int
}

// PatchStream is a fused stream's state as a patch sees it: the adapter's
// and the translator's blobs (State.In; State.Set replaces one, as the
// component would), and whether the translator has been called on the
// stream. The fused op calls the translator when the adapter gave chunks
// or the call ends the stream; a patch standing for such a call sets
// Started (the translator's own FlagFirst is !Started on entry).
type PatchStream struct {
	Adapter, Translator *State
	Started             bool
}

// patchEntry is a Patch for the pair (translator t, adapter a).
type patchEntry struct {
	t, a uint16
	p    Patch
}

// Patch returns c, a translator part, with p as the same-dialect patch of
// its fused ops with the adapter component named adapter (in the bundle
// NewBundle makes). It panics when c is not a translator part.
func (c Component) Patch(adapter string, p Patch) Component {
	if c.t == nil {
		panic("sdk: Patch: component " + strconv.Quote(c.m.Name) + " is not a translator")
	}
	c.patches = append(c.patches[:len(c.patches):len(c.patches)], namedPatch{adapter, p})
	return c
}

type namedPatch struct {
	adapter string
	p       Patch
}

// resolvePatches turns the parts' named patches into patchEntry values.
func resolvePatches(bundle string, parts []Component) []patchEntry {
	var out []patchEntry
	for i := range parts {
		for _, np := range parts[i].patches {
			j := -1
			for k := range parts {
				if parts[k].a != nil && parts[k].m.Name == np.adapter {
					j = k
				}
			}
			if j < 0 {
				panic("sdk: bundle " + bundle + ": " + parts[i].m.Name + " has a patch for " +
					strconv.Quote(np.adapter) + ", which is not an adapter of the bundle")
			}
			out = append(out, patchEntry{uint16(i), uint16(j), np.p})
		}
	}
	return out
}

// patchFor returns the patch of the pair (t, a), or nil.
func (p *Plugin) patchFor(t, a uint16) Patch {
	for i := range p.patches {
		if e := &p.patches[i]; e.t == t && e.a == a {
			return e.p
		}
	}
	return nil
}

// patchRequest runs pt on a fused request; false: it declined, and
// nothing it wrote remains.
func (p *Plugin) patchRequest(pt Patch, c *Call, payload []byte) bool {
	p.req = canon.ChatRequest{}
	if !pt.PatchRequest(c, payload, &p.req, &p.out) {
		p.out.Body, p.out.meta = p.out.Body[:0], p.out.meta[:0]
		return false
	}
	p.patchMeta(nil)
	return true
}

// patchResponse runs pt on a fused response.
func (p *Plugin) patchResponse(pt Patch, c *Call, payload []byte) bool {
	r := &p.report // a field: an interface call's arguments escape
	*r = PatchReport{}
	if !pt.PatchResponse(c, payload, r, &p.out) {
		p.out.Body, p.out.meta = p.out.Body[:0], p.out.meta[:0]
		return false
	}
	p.patchMeta(r)
	return true
}

// patchStream runs pt on a fused stream batch whose parsed state is fs;
// on success p.state, p.tstate and *started hold the outcome.
func (p *Plugin) patchStream(pt Patch, c *Call, fs *fusedState, events [][]byte, started *bool) bool {
	p.state.In, p.state.out, p.state.set = fs.adapter, p.state.out[:0], false
	p.tstate.In, p.tstate.out, p.tstate.set = fs.translator, p.tstate.out[:0], false
	st, r := &p.pstream, &p.report
	*st, *r = PatchStream{Adapter: &p.state, Translator: &p.tstate, Started: fs.started}, PatchReport{}
	if !pt.PatchStream(c, st, events, r, &p.out) {
		p.out.Body, p.out.meta = p.out.Body[:0], p.out.meta[:0]
		p.state.out, p.state.set = p.state.out[:0], false
		p.tstate.out, p.tstate.set = p.tstate.out[:0], false
		c.done = false
		return false
	}
	p.patchMeta(r)
	*started = st.Started
	return true
}

// patchMeta puts, before the meta the patch wrote, what the host learns
// from the call, as the fused op writes them: for a request (r nil) its
// routing fields, for a response or stream batch the usage and finish
// reason the patch reported.
func (p *Plugin) patchMeta(r *PatchReport) {
	p.ameta = append(p.ameta[:0], p.out.meta...)
	p.out.meta = p.out.meta[:0]
	switch {
	case r == nil:
		p.requestMeta()
	case r.HasUsage:
		p.usageMeta(&r.Usage, r.FinishReason)
		p.outputMeta(r.OutputTokens)
	default:
		p.usageMeta(nil, r.FinishReason)
		p.outputMeta(r.OutputTokens)
	}
	p.out.meta = append(p.out.meta, p.ameta...)
}
