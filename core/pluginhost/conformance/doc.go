// Package conformance is the plugin conformance kit: it runs a plugin's
// .wasm through the production loader (package pluginhost) and checks that
// it is fit for the gateway's hot path. Use it from any go test:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, "openai.wasm", conformance.Options{GoldenDir: "testdata/golden"})
//	}
//	func FuzzOpenAI(f *testing.F) { conformance.FuzzOps(f, "openai.wasm", conformance.Options{}) }
//
// or from a CLI through Check, whose Report prints one line per check.
//
// # Checks
//
//   - abi: exports and their signatures, imports (allowlist), ABI version,
//     mr_init, the host's self-test, and manifest fields (name, version,
//     kind — Options.Kind if set —, format, abi, framing, routes, probes).
//   - load: the plugin loads in strict and in trusted mode with Options.Config.
//   - golden: golden vectors (below) on strict instances.
//   - split (adapters): each recorded upstream stream (Options.Streams and
//     GoldenDir/*.sse, *.ndjson, *.jsonl) is framed as the gateway frames it
//     (package core/frame; the framing comes from Options.Framing, the file
//     extension or the manifest) and decoded with OpStreamDecode, the state
//     blob carried from call to call. Cut at every byte boundary of the first
//     Options.MaxSplitPrefix bytes (2 KiB), at Options.RandomSplits random
//     boundaries beyond, and into random 1–64 byte pieces 20 times, the
//     concatenated canonical output (and the stream-done flag) must equal
//     that of the uncut stream.
//   - fuzz: Options.FuzzIterations (300) random and mutated inputs — seeds
//     are the golden inputs and built-in samples of every op — with random
//     flags, meta and state blobs, to every op of the plugin's kind and to an
//     unknown op: each must come back with a status (an unknown op with
//     unsupported), never a trap, a timeout or a malformed result.
//   - determinism: every input on a warm pooled instance and on a fresh one
//     gives identical results.
//   - budget: Options.BudgetCalls (2000) calls on one trusted instance; p99
//     must be under Options.Budget (2 ms, deliberately loose to avoid flaky
//     CI: it catches pathological plugins, and the report gives the
//     measured p50/p99/max).
//   - memory: after those calls the instance's linear memory is under the
//     pool's recycle threshold (pluginhost.DefaultPoolRecycleMB, at most
//     75% of Options.MemoryMB) and does not grow steadily across four
//     samples (more than 4 MiB).
//
// # Bundles
//
// A bundle (a module of several components, sdk.NewBundle) is checked per
// component: abi checks every component's manifest fields (errors name the
// component), then golden, split, fuzz, determinism, budget and memory run
// once per component, named "<component>/<check>", every call addressed to
// the component by its index in the call header. A component's golden
// vectors and streams are in GoldenDir/<component> (or Options.Parts);
// Options.Streams go to the adapters of their framing. The fuzz check also
// sends headers naming components out of range or of the other kind.
//
//   - fused (bundles with a translator and an adapter): for every
//     translator × adapter pair, the fused ops give exactly what the
//     canonical two-call path on the same module gives — status, error,
//     client bytes and meta (the union of both calls') — for every
//     request_decode vector of the translator (with and without a context
//     length), every response_decode vector of the adapter, and every
//     recorded stream cut as the split check cuts it, its stream_decode
//     vectors and the samples. Streams are driven as core/server/relay.go
//     drives them: each read's framed events are one batch; the adapter
//     decodes every batch (FlagFirst on its first call), the translator
//     encodes only when the batch gave chunks or at the end call (FlagFirst
//     on its own first call); reads stop once the backend said it is done,
//     and a stream that never says so ends without an end call. Compared
//     step by step. Then FuzzIterations random and mutated fused calls
//     must each come back with a status.
//
// Functional checks run in strict mode with a per-call deadline
// (Options.CallTimeout, 1 s), so a plugin that loops fails instead of
// hanging the run; budgets are measured in trusted mode, as first-party
// plugins run in production.
//
// # Golden vectors
//
// A golden vector is a file NAME.vector.json in Options.GoldenDir:
//
//	{
//	  "op": "stream_encode",                // abi.Op name (or number)
//	  "meta": {"route": "chat", "id": "r1"}, // call meta, optional
//	  "flags": ["first"],                   // "first", "end", or a number; optional
//	  "input": {"any": "JSON"},             // the payload: a JSON value's bytes as
//	                                        // written, or a JSON string's content
//	  "items": [{"...": 1}, "raw"],         // instead of input: a list payload
//	                                        // (u32-length-prefixed items)
//	  "want": {
//	    "status": "ok",                     // abi.Status name; default ok
//	    "payload": {"id": "r1"},            // JSON value: compared as JSON (key order,
//	                                        // spacing ignored); JSON string: exact bytes
//	    "items": ["data: ...\n\n"],         // instead of payload: the exact list payload
//	    "meta": {"path": "/v1/chat"},       // pairs that must be in the result meta
//	    "flags": ["stream_done"],           // result flags that must be set
//	    "error_contains": "model"           // for error statuses
//	  }
//	}
//
// A stream is a vector with "steps": a list of objects with the same fields
// (op and meta default to the top level's); the state blob returned by one
// step is passed to the next. Unknown fields are errors.
//
// The three-file form is also accepted: NAME.op (the op name),
// NAME.in.json (the payload) and NAME.out.json (the expected payload,
// compared as JSON; status ok).
package conformance
