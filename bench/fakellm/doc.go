// Package fakellm is a simulated LLM inference backend. It speaks the real
// wire formats of two engines, so that MindRouter's tests, benchmarks and
// demo can run without a GPU:
//
//   - vLLM's OpenAI-compatible server: /v1/chat/completions (SSE streaming,
//     usage chunk, tool-call deltas, reasoning_content/reasoning),
//     /v1/completions, /v1/embeddings (float or base64), /v1/models,
//     /tokenize, /detokenize, /v1/rerank, /v1/score, /health, /ping,
//     /version and Prometheus /metrics with vLLM's metric names; errors in
//     vLLM's {"error":{"message","type","param","code"}} shape.
//   - Ollama's native API: /api/chat and /api/generate (NDJSON streaming,
//     thinking, tool calls with object arguments, done_reason and duration
//     metrics), /api/embed, /api/embeddings, /api/tags, /api/ps, /api/show,
//     /api/version; errors as {"error":"..."}.
//
// What is simulated, and how:
//
//   - Text is deterministic: the words of a completion come from a fixed
//     vocabulary, chosen by a PRNG seeded with a hash of the model name and
//     the last user message (or prompt). One word is one token. Prompt
//     tokens are the whitespace-separated words of all message contents
//     plus 4 per message (the chat template); raw prompts count words only.
//   - Limits: max_completion_tokens / max_tokens (vLLM) and
//     options.num_predict (Ollama) cut the output, with finish reason
//     "length"; otherwise the output has Config.Tokens words and ends with
//     "stop". The completions API defaults max_tokens to 16, as OpenAI's.
//   - Ollama's context: a model is loaded with num_ctx 4096 until a request
//     sends options.num_ctx (capped at the trained context, MaxModelLen,
//     which /api/show reports as model_info <arch>.context_length; /api/ps
//     reports the loaded one). A longer prompt is cut to the loaded context
//     (prompt_eval_count), or refused with 400 "the input length exceeds
//     the context length" when the request says truncate: false.
//   - JSON mode (response_format json_object/json_schema, Ollama format
//     "json" or a schema) yields valid JSON: a schema's required properties
//     filled with values of the right type, else {"answer":"..."}. It is
//     streamed in pieces that concatenate to that document.
//   - Tools: one call to the first tool (or the one tool_choice names), with
//     arguments built from its parameter schema. vLLM streams it as OpenAI
//     does (a first delta with id, type and name, then argument fragments);
//     Ollama sends it whole, arguments as an object. As in vLLM, the finish
//     reason is "tool_calls" for tool_choice auto/required and "stop" for a
//     named tool; Ollama always says "stop". After a tool's result the
//     model answers in text; Config.ToolTurns bounds the tool calls of a
//     conversation (agents then end their task).
//   - Reasoning for models named like qwen3, deepseek-r1 or gpt-oss when
//     asked (vLLM chat_template_kwargs.enable_thinking or reasoning_effort;
//     Ollama think). Reasoning tokens count against the token limit. With
//     Config.ThinkInContent the reasoning leads the content as
//     <think>…</think> (tags cut across tokens), as from vLLM without a
//     reasoning parser.
//   - vLLM n > 1 (that many identical choices, streamed one event per
//     choice per token) and logprobs/top_logprobs in OpenAI's shape; Ollama
//     logprobs as its top-level array (Ollama >= 0.12.11).
//   - Timing: Config.TTFT before the first token, then Config.TPS tokens
//     per second per stream, paced by time: each token's due time counts
//     from the start, and the stream sleeps (one timer per stream) only
//     when it is ahead by more than 250 µs, so a high TPS costs no timer
//     per token. At most
//     Config.MaxConcurrent requests generate at once; the rest queue in
//     arrival order, as vLLM's scheduler does, and show in
//     vllm:num_requests_waiting. A client that disconnects frees its slot.
//   - Faults: Config.ErrorRate answers 500 in the engine's error shape,
//     Config.HangRate never answers, Config.DropRate closes the connection
//     mid-response.
//   - Details copied from the real servers: vLLM sends stream headers at
//     once (before TTFT) and Ollama with its first chunk; the Server header
//     is uvicorn for vLLM and absent for Ollama; routing errors are
//     FastAPI's {"detail":...} and gin's "404 page not found"; Ollama
//     answers an empty prompt or message list with done_reason "load",
//     refuses think on models without thinking, lists models with a tag
//     (name:latest) and has no /metrics.
//
// Use Start (or New and Serve) to run it inside a Go test, and Stats or
// LastBody to check what the backend received. The fakellm command
// (cmd/fakellm) runs it standalone.
package fakellm
