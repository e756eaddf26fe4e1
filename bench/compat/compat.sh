#!/usr/bin/env bash
# make compat: the coding agents users run, unchanged, against a local
# gateway. Installs Claude Code, Codex and Qwen Code from npm into a cache
# directory, starts bin/fakellm as a vLLM-served and an Ollama-served
# non-thinking model and a gateway in front of them, runs each agent
# non-interactively with its default settings on a small task against each
# model, and prints agent × model → requests, 4xx, result.
#
# It passes (exit 0) when every run ends without an API error and the
# gateway answered none of the requests the agents sent with a 4xx. Not
# part of make test: it downloads a few hundred MB of npm packages.
#
#   bench/compat/compat.sh [OUTDIR]     # default OUTDIR: a new /tmp/mindrouter-compat.XXXXXX
#
# Knobs (environment): COMPAT_CACHE (.cache/compat: the npm installs),
# CLAUDE_CODE_VERSION, CODEX_VERSION, QWEN_CODE_VERSION (the versions
# pinned below), AGENTS ("claude codex qwen"), RUN_TIMEOUT (300 s a run),
# PORT_BASE (19300), TASK (the prompt).
#
# fakellm answers with made-up words and, when the request offers tools,
# one call to a tool it picks with arguments built from the tool's schema
# (then text once the tool's result comes back; one tool call a
# conversation, -tool-turns 1, so the agents end): the check is that every
# request the agents send is accepted and every answer read, not that the
# task gets done. Each agent runs with HOME and its config in OUTDIR, in
# an empty work directory there.
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=${1:-$(mktemp -d /tmp/mindrouter-compat.XXXXXX)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
CACHE=${COMPAT_CACHE:-$ROOT/.cache/compat}
CLAUDE_CODE_VERSION=${CLAUDE_CODE_VERSION:-2.1.328}
CODEX_VERSION=${CODEX_VERSION:-0.169.0}
QWEN_CODE_VERSION=${QWEN_CODE_VERSION:-0.24.4}
AGENTS=${AGENTS:-claude codex qwen}
RUN_TIMEOUT=${RUN_TIMEOUT:-300}
PB=${PORT_BASE:-19300}
P_VLLM=$((PB + 1)) P_OLLAMA=$((PB + 2)) P_GW=$((PB + 80))
KEY=mr2_compat_$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
TASK=${TASK:-"List the files in the current directory, then reply with one short sentence."}
# Non-thinking models (fakellm thinks only for qwen3-, deepseek-r1- and
# gpt-oss-like names).
VLLM_MODEL=llama-3.1-8b-instruct
OLLAMA_MODEL=llama3.2:3b

log() { printf '[compat] %s\n' "$*" >&2; }
need() { command -v "$1" >/dev/null || { log "needs $1"; exit 2; }; }
need npm
need node
need jq
need curl

PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

# 1. The agents, from npm, into the cache (reused while the versions stay).
BIN=$CACHE/agents/node_modules/.bin
want="@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION @openai/codex@$CODEX_VERSION @qwen-code/qwen-code@$QWEN_CODE_VERSION"
if [ "$(cat "$CACHE/agents/.installed" 2>/dev/null)" != "$want" ]; then
	log "npm install $want"
	mkdir -p "$CACHE/agents"
	# shellcheck disable=SC2086
	npm install --no-audit --no-fund --loglevel=error --prefix "$CACHE/agents" $want >"$OUT/npm.log" 2>&1 ||
		{ log "npm install failed: $OUT/npm.log"; exit 2; }
	echo "$want" >"$CACHE/agents/.installed"
fi

# 2. The gateway, fakellm and the plugins.
make --no-print-directory gateway fakellm plugins >"$OUT/build.log" 2>&1 || { log "build failed: $OUT/build.log"; exit 2; }
./bin/fakellm -addr 127.0.0.1:$P_VLLM -engine vllm -models $VLLM_MODEL -max-model-len 65536 -tokens 24 -tool-turns 1 \
	-log-level warn >"$OUT/fakellm-vllm.log" 2>&1 &
PIDS+=($!)
./bin/fakellm -addr 127.0.0.1:$P_OLLAMA -engine ollama -models $OLLAMA_MODEL -max-model-len 65536 -tokens 24 -tool-turns 1 \
	-log-level warn >"$OUT/fakellm-ollama.log" 2>&1 &
PIDS+=($!)
mkdir -p "$OUT/data"
cat >"$OUT/mindrouter.yaml" <<YAML
listen: 127.0.0.1:$P_GW
data_dir: $OUT/data
plugins: $ROOT/plugins.yaml
backends:
  - {name: compat-vllm, engine: vllm, url: "http://127.0.0.1:$P_VLLM"}
  - {name: compat-ollama, engine: ollama, url: "http://127.0.0.1:$P_OLLAMA"}
discovery: {interval: 2s}
log: {level: info}
YAML
ADMIN_API_KEY=$KEY ./bin/mindrouter serve --config "$OUT/mindrouter.yaml" 2>"$OUT/gateway.log" &
PIDS+=($!)
GW=http://127.0.0.1:$P_GW
for _ in $(seq 100); do
	n=$(curl -sf -H "Authorization: Bearer $KEY" "$GW/v1/models" 2>/dev/null | jq '.data | length' 2>/dev/null || echo 0)
	[ "$n" = 2 ] && break
	sleep 0.3
done
[ "$n" = 2 ] || { log "the gateway did not list both models: $OUT/gateway.log"; exit 2; }

# 3. The runs. Each one's requests are the gateway's "request" log lines
# written while it ran.
run_agent() { # agent model dir
	local agent=$1 model=$2 dir=$3
	local home=$dir/home work=$dir/work
	mkdir -p "$home" "$work"
	printf 'compat\n' >"$work/README.md"
	case $agent in
	claude)
		(cd "$work" && HOME=$home ANTHROPIC_BASE_URL=$GW ANTHROPIC_AUTH_TOKEN=$KEY ANTHROPIC_API_KEY= \
			ANTHROPIC_MODEL=$model ANTHROPIC_DEFAULT_HAIKU_MODEL=$model ANTHROPIC_DEFAULT_SONNET_MODEL=$model \
			ANTHROPIC_DEFAULT_OPUS_MODEL=$model CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 \
			timeout "$RUN_TIMEOUT" "$BIN/claude" -p "$TASK" </dev/null)
		;;
	codex)
		mkdir -p "$home/.codex"
		cat >"$home/.codex/config.toml" <<TOML
model = "$model"
model_provider = "mindrouter"

[model_providers.mindrouter]
name = "MindRouter"
base_url = "$GW/v1"
env_key = "MINDROUTER_API_KEY"
wire_api = "responses"
TOML
		(cd "$work" && HOME=$home CODEX_HOME=$home/.codex MINDROUTER_API_KEY=$KEY \
			timeout "$RUN_TIMEOUT" "$BIN/codex" exec --skip-git-repo-check "$TASK" </dev/null)
		;;
	qwen)
		(cd "$work" && HOME=$home OPENAI_BASE_URL=$GW/v1 OPENAI_API_KEY=$KEY OPENAI_MODEL=$model \
			timeout "$RUN_TIMEOUT" "$BIN/qwen" -p "$TASK" </dev/null)
		;;
	esac
}

api_error() { # agent output: an API error the agent reported
	grep -Eiq 'API Error|turn\.failed|^ERROR:|\[API Error|status code [45][0-9][0-9]|Request failed with status' "$1"
}

RESULTS=$OUT/results.tsv
: >"$RESULTS"
fail=0
for agent in $AGENTS; do
	for model in $VLLM_MODEL $OLLAMA_MODEL; do
		dir=$OUT/runs/$agent-${model//[:\/]/_}
		mkdir -p "$dir"
		from=$(wc -l <"$OUT/gateway.log")
		log "$agent × $model"
		set +e
		run_agent "$agent" "$model" "$dir" >"$dir/out.log" 2>&1
		rc=$?
		set -e
		sleep 0.5 # the last request's log line
		tail -n +"$((from + 1))" "$OUT/gateway.log" | jq -c 'select(.msg == "request")' >"$dir/requests.jsonl" 2>/dev/null || true
		reqs=$(wc -l <"$dir/requests.jsonl")
		jq -c 'select(.status >= 400 and .status < 500) | {route, status, error}' "$dir/requests.jsonl" >"$dir/4xx.jsonl"
		n4=$(wc -l <"$dir/4xx.jsonl")
		result=ok
		if [ "$rc" != 0 ]; then
			result="exit $rc"
		elif api_error "$dir/out.log"; then
			result="API error"
		fi
		if [ "$reqs" = 0 ]; then
			result="$result, no request"
		fi
		[ "$result" = ok ] && [ "$n4" = 0 ] || fail=1
		printf '%s\t%s\t%s\t%s\t%s\n' "$agent" "$model" "$reqs" "$n4" "$result" >>"$RESULTS"
	done
done

# 4. The table, and what each 4xx was.
{
	printf '| agent | model | requests | 4xx | result |\n|---|---|---|---|---|\n'
	while IFS=$'\t' read -r a m r n s; do printf '| %s | %s | %s | %s | %s |\n' "$a" "$m" "$r" "$n" "$s"; done <"$RESULTS"
	for f in "$OUT"/runs/*/4xx.jsonl; do
		[ -s "$f" ] || continue
		printf '\n%s:\n' "$(basename "$(dirname "$f")")"
		sort "$f" | uniq -c | sed 's/^/  /'
	done
} | tee "$OUT/summary.md"
log "outputs in $OUT"
if [ "$fail" != 0 ]; then
	log "FAIL"
	exit 1
fi
log "PASS"
