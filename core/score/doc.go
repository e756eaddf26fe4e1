// Package score places requests on backends: it filters them by hard
// constraints and orders the rest by a weighted score. A Scorer is the
// scheduler's sched.Placer; it does no I/O and, unless a decision is being
// recorded, no allocation (its working storage is pooled).
//
// # Hard constraints
//
// A backend is a candidate only if, in this order (the first it fails is
// what the decision records, by the Fail* names):
//
//   - it serves the model (Status.Serves, Ollama's ":latest" included) —
//     FailModel; known (else 404) is whether any backend does;
//   - an admin has not disabled or drained it — FailDisabled, FailDraining;
//   - discovery found it healthy — FailUnhealthy — and an adapter plugin
//     serves its engine — FailNoAdapter;
//   - its circuit breaker lets a request through (closed, or half-open
//     with its one probe not yet out) — FailBreaker: a backend failing
//     live requests gets none but its probe, so neither a first attempt
//     nor a retry is placed on it while it is open;
//   - the model can do what the request needs (Needs), as far as discovery
//     knows the model's capabilities: an embeddings request needs
//     "embedding" (FailEmbedding); a generation request may not go to an
//     embedding-only model (FailCompletion); image input needs "vision"
//     (FailVision), tool definitions "tools" (FailTools), a JSON object or
//     schema "structured_output" or "completion" (FailStructured). A model
//     whose capabilities discovery does not report (vLLM's /v1/models
//     says nothing about them) passes: the backend itself answers 400 if
//     it cannot, which is what the client would get anyway. When every
//     backend that could serve the model now fails only on capabilities,
//     Unmet (sched.NeedsExplainer) names what is missing and the
//     scheduler answers 400 model_capability instead of 503;
//   - the model fits (FailMemory): a model not loaded, whose size
//     discovery knows, must not be larger than the total memory of the
//     backend's GPUs when the sidecar reports it. Total, not free: vLLM
//     reserves most of a GPU's memory up front and Ollama evicts idle
//     models to load another, so free memory says nothing about whether a
//     model can be loaded, but a model larger than the GPUs never will.
//
// Capacity is not a constraint here: a backend at max_concurrent is still
// ranked (the scheduler waits for or skips full backends), and recorded
// with an "at_capacity" mark.
//
// # Soft score
//
// Each candidate gets eight parts, each normalised to [0, 1] (1 is best),
// and its score is their weighted sum, Σ wᵢ·pᵢ (Weights; DefaultWeights
// sum to 100, so a score reads as a percentage):
//
//	loaded      1 if the model is in GPU memory (vLLM: always; Ollama: /api/ps), else 0
//	gpu_util    1 − mean SM utilisation of the backend's GPUs (sidecar)
//	queue_depth 1 / (1 + (in_flight + waiting) / max_concurrent): 1 idle, ½ full
//	latency     L_min / L: the fastest candidate 1, one twice as slow ½; L is the
//	            time-to-first-byte EMA when every candidate with a latency has one,
//	            else the whole-response EMA (backend.Telemetry)
//	throughput  T / T_max: real generated tokens/s EMA, relative to the fastest
//	priority    clamp(admin priority, 0, 10) / 10
//	kv_cache    1 − KV-cache usage (vLLM /metrics)
//	waiting     1 / (1 + requests waiting in the engine) (vLLM /metrics)
//
// A figure nobody measured (no sidecar, no request served yet, an Ollama
// backend's KV cache) is neutral: that part is the mean of the part over
// the candidates that have it, or ½ when none has, so it neither favours
// nor penalises the backend against the others.
//
// # Order
//
// Candidates the request has already tried (Request.Exclude) come after
// all others, whatever their score. Among the rest, a backend whose
// circuit breaker waits for its half-open probe (backend.ProbeDue) comes
// first, whatever its score: the next request that may go there is the
// probe, so a backend that came back is back in service within one
// cool-down rather than when its peers happen to be full (the breaker's
// doc in core/backend). Otherwise the higher score first; on equal
// scores, the lower in-flight share of capacity; then the order of the
// backends given (configuration order): the ranking is a function of the
// backends' state, never of chance or map order.
//
// # Decisions
//
// When d.Record is set, Rank appends one sched.Candidate per backend: the
// ranked ones first, in order, with each part's weighted contribution in
// Parts (parts whose weight is zero are left out) and two marks that are
// not contributions — "at_capacity": 1 for a backend whose slots are all
// taken, "excluded": 1 for one in Request.Exclude, "probe": 1 for one
// placed first for its breaker's probe; then those that failed a
// constraint, with Failed set.
package score
