package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mindrouter/mindrouter/core/frame"
	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk"
	"github.com/mindrouter/mindrouter/sdk/abi"
	"github.com/mindrouter/mindrouter/sdk/shape"
)

// The fused check: in a bundle holding a translator and an adapter, the
// fused ops must give exactly what the canonical two-call path on the same
// module gives, driven as the gateway drives them (core/server): the same
// status and error, the same client bytes, and as meta the union of the
// two unfused calls' meta. Requests and responses are compared for every
// golden vector of the translator (request_decode) and the adapter
// (response_decode) and the built-in samples; streams for every recorded
// stream of the adapter cut as the split check cuts it, its stream_decode
// vectors and samples, step by step as core/server/relay.go's step runs:
// every batch of framed events is decoded, and encoded only when the
// decode gave chunks or at the end call; the adapter gets FlagFirst on its
// first call, the translator on its own first call. A stream shape a
// fused call leaves (ABI 2.10, sdk/shape) is applied as the relay applies
// it, and held to its promise: the plugin's own call on the events it
// translated must give the same bytes and output estimate, nothing else,
// and the same state. Then fused ops get FuzzIterations random and mutated
// inputs: each must come back with a status.

var fusedOps = []abi.Op{abi.OpFusedRequest, abi.OpFusedResponse, abi.OpFusedStream}

// pair is a translator and an adapter of a bundle.
type pair struct{ t, a *part }

func (pr pair) String() string { return pr.t.m.Name + "+" + pr.a.m.Name }

// pairs are every translator × adapter pair of a bundle (none for a
// module of one component).
func (s *session) pairs() []pair {
	if !s.bundle {
		return nil
	}
	var out []pair
	for i := range s.parts {
		for j := range s.parts {
			if s.parts[i].m.Kind == sdk.KindTranslator && s.parts[j].m.Kind == sdk.KindAdapter {
				out = append(out, pair{&s.parts[i], &s.parts[j]})
			}
		}
	}
	return out
}

// Meta the host gives the fused ops and the translator's unfused ops.
const (
	fusedID      = "chatcmpl-conformance"
	fusedModel   = "m"
	fusedCreated = "1700000000"
	fusedContext = "32768"
)

// routeMeta is meta with the route and endpoint kind first, as the host
// sends them to translator ops (the translator's first chat route unless
// meta names one).
func routeMeta(t *part, meta []byte) []byte {
	if _, ok := abi.MetaGet(meta, abi.MetaRoute); ok {
		return meta
	}
	route, kind := "chat", string(sdk.EndpointChat)
	for _, r := range t.m.Routes {
		if r.EndpointKind() == sdk.EndpointChat {
			route, kind = r.Name, string(r.EndpointKind())
			break
		}
	}
	m := abi.AppendMeta(nil, abi.MetaRoute, route)
	m = abi.AppendMeta(m, abi.MetaKind, kind)
	return append(m, meta...)
}

// headerMeta is the meta of response and stream encodes (plugcall's
// headerMeta): route, kind, id, model, created, include_usage when asked.
func headerMeta(t *part, usage bool) []byte {
	m := routeMeta(t, nil)
	m = abi.AppendMeta(m, abi.MetaID, fusedID)
	m = abi.AppendMeta(m, abi.MetaModel, fusedModel)
	m = abi.AppendMeta(m, abi.MetaCreated, fusedCreated)
	if usage {
		m = abi.AppendMeta(m, abi.MetaIncludeUsage, "1")
	}
	return m
}

// fusedInputs are the fused calls made of the pair's inputs: the
// translator's request_decode inputs, the adapter's response_decode and
// stream_decode inputs, addressed to both.
func (s *session) fusedInputs(pr pair) []input {
	var out []input
	add := func(op abi.Op, in pluginhost.CallInput, meta []byte) {
		in.Translator, in.Adapter, in.Meta, in.State = pr.t.idx, pr.a.idx, meta, nil
		out = append(out, input{op, in})
	}
	for _, in := range partInputs(pr.t) {
		if in.op == abi.OpRequestDecode {
			add(abi.OpFusedRequest, in.in, routeMeta(pr.t, in.in.Meta))
		}
	}
	for _, in := range partInputs(pr.a) {
		switch in.op {
		case abi.OpResponseDecode:
			add(abi.OpFusedResponse, in.in, headerMeta(pr.t, false))
		case abi.OpStreamDecode:
			add(abi.OpFusedStream, in.in, headerMeta(pr.t, true))
		}
	}
	return out
}

// fusedCheck is one run of the fused check on a pinned version.
type fusedCheck struct {
	s       *session
	v       *pluginhost.Version
	errs    []error
	dropped int // errors past the first maxFusedErrors
	// What was compared.
	requests, responses, streams, runs, calls, fuzzed int
	shaped                                            int // stream events a shape translated
	res                                               pluginhost.Result
}

const maxFusedErrors = 10

func (fc *fusedCheck) fail(format string, a ...any) {
	if len(fc.errs) >= maxFusedErrors {
		fc.dropped++
		return
	}
	fc.errs = append(fc.errs, fmt.Errorf(format, a...))
}

func (s *session) checkFused() (string, error) {
	prs := s.pairs()
	if len(prs) == 0 {
		return "", skip("the bundle has no translator and adapter to fuse")
	}
	v := s.strict.Pin()
	if v == nil {
		return "", pluginhost.ErrClosed
	}
	defer v.Release()
	fc := &fusedCheck{s: s, v: v}
	rng := rand.New(rand.NewPCG(uint64(s.opts.Seed), 3))
	var names []string
	for _, pr := range prs {
		names = append(names, pr.String())
		fc.checkRequests(pr)
		fc.checkResponses(pr)
		fc.checkStreams(pr, rng)
		fc.fuzz(pr, rng)
	}
	if fc.dropped > 0 {
		fc.errs = append(fc.errs, fmt.Errorf("and %d more differences", fc.dropped))
	}
	detail := fmt.Sprintf("%s: %d requests, %d responses, %d streams in %d relay runs against the canonical path (%d calls, %d stream events by stream shapes); %d fuzzed fused calls",
		strings.Join(names, ", "), fc.requests, fc.responses, fc.streams, fc.runs, fc.calls, fc.shaped, fc.fuzzed)
	return detail, errors.Join(fc.errs...)
}

// outcome is what a call, or the canonical pair of calls, gave the host.
type outcome struct {
	status  abi.Status
	err     string
	flags   uint32 // without ResultStateKeep (the state layouts differ)
	payload []byte
	meta    map[string]string
	fatal   error
}

func (o *outcome) ok() bool { return o.fatal == nil && o.status < abi.StatusBadInput }

func (o *outcome) String() string {
	if o.fatal != nil {
		return o.fatal.Error()
	}
	if !o.ok() {
		return fmt.Sprintf("%s: %s", o.status, o.err)
	}
	return fmt.Sprintf("%s flags %#x meta %s payload %.400q", o.status, o.flags, metaString(o.meta), o.payload)
}

// call makes one call and keeps what it gave.
func (fc *fusedCheck) call(op abi.Op, in pluginhost.CallInput) outcome {
	fc.calls++
	in.RequestID = 7
	err := fc.v.Call(fc.s.ctx, op, in, &fc.res)
	var se *pluginhost.StatusError
	if err != nil && !errors.As(err, &se) {
		return outcome{fatal: fmt.Errorf("%s: %w", op, err)}
	}
	r := &fc.res
	return outcome{status: r.Status, err: string(r.Err), flags: r.Flags &^ abi.ResultStateKeep,
		payload: bytes.Clone(r.Payload), meta: metaMap(r.Meta)}
}

// then is the canonical pair's outcome: the second call's, with the union
// of both calls' meta.
func then(first, second outcome) outcome {
	if !second.ok() {
		return second
	}
	m := make(map[string]string, len(first.meta)+len(second.meta))
	for k, v := range first.meta {
		m[k] = v
	}
	for k, v := range second.meta {
		if w, ok := m[k]; ok && w != v {
			v = w + " | " + v // a conflict the fused op cannot reproduce: reported as a difference
		}
		m[k] = v
	}
	second.meta = m
	return second
}

func same(a, b *outcome) bool {
	return a.fatal == nil && b.fatal == nil && a.status == b.status && a.err == b.err && a.flags == b.flags &&
		bytes.Equal(a.payload, b.payload) && metaString(a.meta) == metaString(b.meta)
}

func (fc *fusedCheck) compare(what string, fused, canonical *outcome) {
	if fused.fatal != nil || canonical.fatal != nil {
		fc.fail("%s: %v", what, errors.Join(fused.fatal, canonical.fatal))
		return
	}
	if !same(fused, canonical) {
		fc.fail("%s: fused and canonical paths differ\n fused     %s\n canonical %s", what, fused, canonical)
	}
}

// checkRequests: fused_request against request_decode then
// request_encode, with and without a context length.
func (fc *fusedCheck) checkRequests(pr pair) {
	for i, in := range partInputs(pr.t) {
		if in.op != abi.OpRequestDecode {
			continue
		}
		fc.requests++
		rmeta := routeMeta(pr.t, in.in.Meta)
		for _, ctxLen := range []string{"", fusedContext} {
			var cmeta []byte
			if ctxLen != "" {
				cmeta = abi.AppendMeta(nil, abi.MetaContextLength, ctxLen)
			}
			ci := pluginhost.CallInput{Translator: pr.t.idx, Adapter: pr.a.idx, Meta: rmeta, Payload: in.in.Payload}
			want := fc.call(abi.OpRequestDecode, ci)
			if want.ok() {
				ci.Meta, ci.Payload = cmeta, want.payload
				want = then(want, fc.call(abi.OpRequestEncode, ci))
			}
			fmeta := append(append([]byte(nil), rmeta...), cmeta...)
			got := fc.call(abi.OpFusedRequest, pluginhost.CallInput{Translator: pr.t.idx, Adapter: pr.a.idx, Meta: fmeta, Payload: in.in.Payload})
			fc.compare(fmt.Sprintf("%s fused_request, input %d (%.60q) context_length %q", pr, i, in.in.Payload, ctxLen), &got, &want)
		}
	}
}

// checkResponses: fused_response against response_decode then
// response_encode.
func (fc *fusedCheck) checkResponses(pr pair) {
	hmeta := headerMeta(pr.t, false)
	for i, in := range partInputs(pr.a) {
		if in.op != abi.OpResponseDecode {
			continue
		}
		fc.responses++
		ci := pluginhost.CallInput{Translator: pr.t.idx, Adapter: pr.a.idx, Payload: in.in.Payload}
		want := fc.call(abi.OpResponseDecode, ci)
		if want.ok() {
			ci.Meta, ci.Payload = hmeta, want.payload
			want = then(want, fc.call(abi.OpResponseEncode, ci))
		}
		got := fc.call(abi.OpFusedResponse, pluginhost.CallInput{Translator: pr.t.idx, Adapter: pr.a.idx, Meta: hmeta, Payload: in.in.Payload})
		fc.compare(fmt.Sprintf("%s fused_response, input %d (%.60q)", pr, i, in.in.Payload), &got, &want)
	}
}

// checkStreams: relay runs of fused_stream against stream_decode then
// stream_encode, for every recorded stream of the adapter and every cut
// the split check makes, and for its stream_decode vectors and samples
// (each call's events one batch).
func (fc *fusedCheck) checkStreams(pr pair, rng *rand.Rand) {
	s := fc.s
	run := 0
	compare := func(what string, feed func(d *driver)) bool {
		meta := headerMeta(pr.t, run%2 == 1) // every other run with include_usage
		run++
		fc.runs++
		want := &driver{fc: fc, pr: pr, meta: meta, aFirst: true, tFirst: true}
		got := &driver{fc: fc, pr: pr, meta: meta, aFirst: true, tFirst: true, fused: true}
		feed(want)
		feed(got)
		if d := got.diff(want); d != "" {
			fc.fail("%s stream %s: %s", pr, what, d)
			return false
		}
		return true
	}
	for _, path := range pr.a.streamFiles() {
		data, err := os.ReadFile(path)
		if err != nil {
			fc.fail("%s: %v", pr, err)
			continue
		}
		fc.streams++
		fr := pr.a.framingOf(path)
		name := filepath.Base(path)
		for _, c := range cuts(data, s.opts, rng) {
			if !compare(name+" "+c.what, func(d *driver) { d.feedBytes(fr, c.parts) }) {
				break // one difference per stream is enough
			}
		}
	}
	// The adapter's stream_decode calls as batches of one stream: each
	// vector's steps, then the samples.
	var batches [][]byte
	flush := func(what string) {
		if len(batches) > 0 {
			fc.streams++
			compare(what, func(d *driver) { d.feedBatches(batches) })
		}
		batches = nil
	}
	for _, v := range pr.a.vectors {
		for _, st := range v.steps {
			if st.op == abi.OpStreamDecode && len(st.in) > 0 {
				batches = append(batches, st.in)
			}
		}
		flush("vector " + v.name)
	}
	for _, in := range samples(&pr.a.m) {
		if in.op == abi.OpStreamDecode && len(in.in.Payload) > 0 {
			batches = append(batches, in.in.Payload)
		}
	}
	flush("of the samples")
}

// cut is one way a recorded stream arrives: its bytes in reads.
type cut struct {
	what  string
	parts [][]byte
}

// cuts are the ways the split check cuts a stream: whole, at every byte of
// the first MaxSplitPrefix, at RandomSplits random boundaries after, and
// in random 1-64 byte pieces 20 times.
func cuts(data []byte, o *Options, rng *rand.Rand) []cut {
	out := []cut{{"uncut", [][]byte{data}}}
	for k := 1; k < len(data) && k <= o.MaxSplitPrefix; k++ {
		out = append(out, cut{fmt.Sprintf("cut at %d", k), [][]byte{data[:k], data[k:]}})
	}
	if len(data) > o.MaxSplitPrefix+1 {
		for range o.RandomSplits {
			k := o.MaxSplitPrefix + 1 + rng.IntN(len(data)-o.MaxSplitPrefix-1)
			out = append(out, cut{fmt.Sprintf("cut at %d", k), [][]byte{data[:k], data[k:]}})
		}
	}
	for range 20 {
		var parts [][]byte
		for rest := data; len(rest) > 0; {
			n := min(1+rng.IntN(64), len(rest))
			parts, rest = append(parts, rest[:n]), rest[n:]
		}
		out = append(out, cut{fmt.Sprintf("in %d random pieces", len(parts)), parts})
	}
	return out
}

// driver relays one stream as core/server/relay.go does, fused or by the
// canonical pair of calls, and records what each step gave the client.
type driver struct {
	fc    *fusedCheck
	pr    pair
	fused bool
	meta  []byte

	aFirst, tFirst         bool
	astate, tstate, fstate []byte
	done, truncated        bool
	shape                  shape.Shape // fused: the last call's stream shape
	shapeBuf               []byte
	steps                  []relayStep
	failed                 *outcome // the call that failed the stream
	framing                error
}

// relayStep is what one step wrote to the client and told the host.
type relayStep struct {
	out  []byte
	meta map[string]string
	done bool
}

// feedBytes frames reads as the relay does: each read's complete events
// are one batch; reads stop once the backend said it is done; the
// splitter's end gives a last batch; a stream that never said done is
// truncated (no end call); else the end call.
func (d *driver) feedBytes(fr sdk.Framing, parts [][]byte) {
	var sp frame.Splitter = frame.NewNDJSON(0)
	if fr == sdk.FramingSSE {
		sp = frame.NewSSE(0)
	}
	var list []byte
	emit := func(ev []byte) { list = abi.AppendItem(list, ev) }
	for _, p := range parts {
		if d.done {
			break
		}
		list = list[:0]
		if err := sp.Feed(p, emit); err != nil {
			d.framing = err
			return
		}
		if len(list) > 0 && !d.step(list, false) {
			return
		}
	}
	if !d.done {
		list = list[:0]
		_ = sp.End(emit)
		if len(list) > 0 && !d.step(list, false) {
			return
		}
	}
	d.finish()
}

// feedBatches relays ready-made batches (lists of framed events).
func (d *driver) feedBatches(batches [][]byte) {
	for _, b := range batches {
		if d.done {
			break
		}
		if !d.step(b, false) {
			return
		}
	}
	d.finish()
}

func (d *driver) finish() {
	if !d.done {
		d.truncated = true
		return
	}
	d.step(nil, true)
}

func flagsOf(first, end bool) uint32 {
	var f uint32
	if first {
		f |= abi.FlagFirst
	}
	if end {
		f |= abi.FlagEnd
	}
	return f
}

// step is relay.go's step: one batch (or the end call).
func (d *driver) step(list []byte, end bool) bool {
	fc, t, a := d.fc, d.pr.t.idx, d.pr.a.idx
	if d.fused {
		return d.fusedStep(list, end)
	}
	dec := fc.call(abi.OpStreamDecode, pluginhost.CallInput{Flags: flagsOf(d.aFirst, end), Translator: t, Adapter: a,
		State: d.astate, Payload: list})
	if !dec.ok() {
		d.failed = &dec
		return false
	}
	d.aFirst = false
	d.astate = append(d.astate[:0], fc.res.State...)
	done := dec.flags&abi.ResultStreamDone != 0
	d.done = d.done || done
	if len(dec.payload) == 0 && !end {
		d.steps = append(d.steps, relayStep{nil, dec.meta, done})
		return true
	}
	enc := fc.call(abi.OpStreamEncode, pluginhost.CallInput{Flags: flagsOf(d.tFirst, end), Translator: t, Adapter: a,
		State: d.tstate, Meta: d.meta, Payload: dec.payload})
	if !enc.ok() {
		d.failed = &enc
		return false
	}
	d.tFirst = false
	d.tstate = append(d.tstate[:0], fc.res.State...)
	enc = then(dec, enc)
	d.steps = append(d.steps, relayStep{enc.payload, enc.meta, done})
	return true
}

// fusedStep is relay.go's step on the fused path (core/server
// translation.go and shape.go): the batch's leading events that match the
// stream shape the last call left are translated by it, their output first
// and their output estimate added to the call's; the rest go to the
// plugin, whose result replaces the shape or drops it.
func (d *driver) fusedStep(list []byte, end bool) bool {
	fc, t, a := d.fc, d.pr.t.idx, d.pr.a.idx
	var pre []byte
	tokens := 0
	if !end && d.shape.Valid() {
		var rest []byte
		var n int
		pre, rest, n, tokens = d.shape.ApplyList(nil, list)
		if k := len(list) - len(rest); k > 0 {
			fc.shaped += n
			d.checkShape(list[:k], pre, tokens)
			if list = rest; len(list) == 0 {
				d.steps = append(d.steps, relayStep{pre, map[string]string{abi.MetaOutputTokens: fmt.Sprint(tokens)}, false})
				return true
			}
		}
	}
	o := fc.call(abi.OpFusedStream, pluginhost.CallInput{Flags: flagsOf(d.aFirst, end), Translator: t, Adapter: a,
		State: d.fstate, Meta: d.meta, Payload: list})
	if !o.ok() {
		d.failed = &o
		return false
	}
	d.aFirst = false
	d.fstate = append(d.fstate[:0], fc.res.State...)
	d.shape.Reset()
	if v, ok := abi.MetaGet(fc.res.Meta, abi.MetaStreamShape); ok {
		if err := d.shape.Parse(v); err != nil {
			fc.fail("%s: a stream shape the host refuses: %v", d.pr, err)
		}
		d.shapeBuf = d.shape.Clone(d.shapeBuf)
		delete(o.meta, abi.MetaStreamShape)
	}
	if tokens > 0 {
		n := 0
		fmt.Sscan(o.meta[abi.MetaOutputTokens], &n)
		o.meta[abi.MetaOutputTokens] = fmt.Sprint(n + tokens)
	}
	o.payload = append(pre, o.payload...)
	done := o.flags&abi.ResultStreamDone != 0
	d.done = d.done || done
	d.steps = append(d.steps, relayStep{o.payload, o.meta, done})
	return true
}

// checkShape holds a shape to its promise (sdk/shape): the plugin's own
// call on the events it translated must write the same bytes, report the
// same output estimate and nothing else, and change no state.
func (d *driver) checkShape(evs, out []byte, tokens int) {
	fc := d.fc
	o := fc.call(abi.OpFusedStream, pluginhost.CallInput{Flags: flagsOf(false, false), Translator: d.pr.t.idx, Adapter: d.pr.a.idx,
		State: d.fstate, Meta: d.meta, Payload: evs})
	delete(o.meta, abi.MetaStreamShape)
	want := map[string]string{abi.MetaOutputTokens: fmt.Sprint(tokens)}
	if !o.ok() || o.flags&abi.ResultStreamDone != 0 || !bytes.Equal(fc.res.State, d.fstate) ||
		!bytes.Equal(o.payload, out) || metaString(o.meta) != metaString(want) {
		fc.fail("%s: the stream shape's translation differs from the plugin's own call on the same events (which must write the same bytes, count the same output, report nothing else and keep the state)\n shape  meta %s payload %.400q\n plugin %s state changed %v",
			d.pr, metaString(want), out, &o, !bytes.Equal(fc.res.State, d.fstate))
	}
}

// diff describes the first difference between two relays ("" if none).
func (d *driver) diff(o *driver) string {
	if d.framing != nil || o.framing != nil {
		if (d.framing == nil) != (o.framing == nil) {
			return fmt.Sprintf("framing: %v vs %v", d.framing, o.framing)
		}
	}
	for _, x := range []*driver{d, o} {
		if x.failed != nil && x.failed.fatal != nil {
			return x.failed.fatal.Error()
		}
	}
	n := min(len(d.steps), len(o.steps))
	for i := range n {
		a, b := &d.steps[i], &o.steps[i]
		if !bytes.Equal(a.out, b.out) {
			return fmt.Sprintf("step %d: client bytes differ\n fused     %q\n canonical %q", i, a.out, b.out)
		}
		if ma, mb := metaString(a.meta), metaString(b.meta); ma != mb || a.done != b.done {
			return fmt.Sprintf("step %d: meta %s done %v, canonical meta %s done %v", i, ma, a.done, mb, b.done)
		}
	}
	if len(d.steps) != len(o.steps) {
		return fmt.Sprintf("%d steps, canonical %d", len(d.steps), len(o.steps))
	}
	if (d.failed == nil) != (o.failed == nil) || d.failed != nil && (d.failed.status != o.failed.status || d.failed.err != o.failed.err) {
		return fmt.Sprintf("stream failure %v, canonical %v", d.failed, o.failed)
	}
	if d.truncated != o.truncated {
		return fmt.Sprintf("truncated %v, canonical %v", d.truncated, o.truncated)
	}
	return ""
}

// fuzz sends FuzzIterations random and mutated inputs to the pair's fused
// ops (and now and then to components out of range or of the wrong kind):
// each must come back with a status.
func (fc *fusedCheck) fuzz(pr pair, rng *rand.Rand) {
	seeds := fc.s.fusedInputs(pr)
	n := len(fc.s.parts)
	fatals := 0
	for i := range fc.s.opts.FuzzIterations {
		op := fusedOps[i%len(fusedOps)]
		in := fuzzInput(rng, op, seeds)
		in.Translator, in.Adapter = pr.t.idx, pr.a.idx
		if rng.IntN(8) == 0 {
			in.Translator, in.Adapter = uint16(rng.IntN(n+2)), uint16(rng.IntN(n+2))
		}
		fc.fuzzed++
		if o := fc.call(op, in); o.fatal != nil {
			if fatals++; fatals <= 5 {
				fc.fail("%s fuzz: component %d/%d flags %#x state %q meta %q payload %.200q: %v",
					pr, in.Translator, in.Adapter, in.Flags, in.State, in.Meta, in.Payload, o.fatal)
			}
		}
	}
}

// metaMap is a meta list as a map; a malformed list maps "!malformed".
func metaMap(meta []byte) map[string]string {
	m := map[string]string{}
	for len(meta) > 0 {
		k, v, rest, err := abi.NextMeta(meta)
		if err != nil {
			m["!malformed"] = fmt.Sprintf("%q", meta)
			break
		}
		if w, ok := m[string(k)]; ok && w != string(v) {
			m[string(k)] = w + " | " + string(v)
		} else {
			m[string(k)] = string(v)
		}
		meta = rest
	}
	return m
}

// metaString is a meta map in key order.
func metaString(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	b.WriteByte('}')
	return b.String()
}
