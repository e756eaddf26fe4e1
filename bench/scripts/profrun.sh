#!/usr/bin/env bash
# profrun.sh VARIANT CONC DUR [PROFILE_OUT]: one gateway on fakellm (vLLM,
# non-streamed) under bench/loadgen at concurrency CONC for DUR, printing
# loadgen's summary (req/s, latency, the gateway's CPU a request from
# --pid) and, with PROFILE_OUT, a CPU profile from /debug/pprof. VARIANT:
# default, off (audit off), nocontent. BIN (default bin/) and ROOT (the
# tree whose plugins.yaml it loads) select the build; PLUGINS another
# plugins.yaml. Needs `make gateway plugins fakellm` and
# `go build -o bin/loadgen ./bench/loadgen`. Ports 19301/19390/19391.
set -euo pipefail
V=${1:-default} C=${2:-64} D=${3:-8s} P=${4:-}
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${BIN:-$ROOT/bin}
W=${WDIR:-/tmp}/prof-$V; rm -rf "$W"; mkdir -p "$W"
KEY=mr2_bench_0123456789abcdef0123
"$BIN/fakellm" --addr 127.0.0.1:19301 --engine vllm --models bench-vllm --tokens 200 --log-level warn >"$W/fk.log" 2>&1 &
FK=$!
EXTRA=""
[ "$V" = off ] && EXTRA="audit: {enabled: false}"
[ "$V" = nocontent ] && EXTRA="audit: {content: false}"
cat >"$W/gw.yaml" <<Y
listen: 127.0.0.1:19390
plugins: ${PLUGINS:-$ROOT/plugins.yaml}
data_dir: $W/data
$EXTRA
metrics: {listen: "127.0.0.1:19391", key: mk, pprof: true}
backends:
  - {name: fast-vllm, engine: vllm, url: "http://127.0.0.1:19301", max_concurrent: 256, models: [bench-vllm]}
discovery: {interval: 30s, timeout: 5s}
log: {level: warn}
Y
(cd "$ROOT" && env ADMIN_API_KEY=$KEY "$BIN/mindrouter" serve --config "$W/gw.yaml" >"$W/gw.log" 2>&1) &
for _ in $(seq 1 120); do curl -fsS -o /dev/null http://127.0.0.1:19390/readyz 2>/dev/null && break; sleep 0.25; done
GWPID=$(pgrep -f "mindrouter serve --config $W/gw.yaml" | head -1)
LG=("$BIN/loadgen" --url http://127.0.0.1:19390/v1/chat/completions --key $KEY --model bench-vllm --max-tokens 16 --concurrency "$C" --pid "$GWPID")
"${LG[@]}" --warmup 1s --duration 2s >/dev/null 2>&1
if [ -n "$P" ]; then
	curl -s -H "Authorization: Bearer mk" "http://127.0.0.1:19391/debug/pprof/profile?seconds=${PSEC:-6}" -o "$P" &
	CP=$!
fi
"${LG[@]}" --warmup 0.5s --duration "$D" --out "$W/lg.json" 2>&1 | tail -3
[ -n "$P" ] && wait $CP
curl -s -H "Authorization: Bearer mk" http://127.0.0.1:19391/metrics >"$W/metrics.txt" || true
kill $FK 2>/dev/null || true
kill -9 "$GWPID" 2>/dev/null || true
wait 2>/dev/null || true
