#!/usr/bin/env bash
# holdprof.sh [PROFILE_OUT]: one gateway (default configuration; EXTRA adds
# YAML, e.g. EXTRA='audit: {enabled: false}') on a slow vLLM fakellm (40
# tokens at 5 tokens/s), HOLD (1000) concurrent streams through it from
# bench/loadgen, and, with PROFILE_OUT, a 5 s CPU profile from
# /debug/pprof taken mid-hold (PROF_KIND=heap: the heap profile then;
# PROF_KIND=strace: strace -c's syscall counts for 5 s). Prints loadgen's summary (CPU a chunk, RSS
# a stream, stalls). BIN (default bin/) selects the build. Needs `make
# gateway plugins fakellm` and `go build -o bin/loadgen ./bench/loadgen`.
# Ports 19303/19392/19393.
set -euo pipefail
P=${1:-}
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${BIN:-$ROOT/bin}
HOLD=${HOLD:-1000}
W=${WDIR:-/tmp}/holdprof; rm -rf "$W"; mkdir -p "$W"
KEY=mr2_bench_0123456789abcdef0123
ulimit -n 20000
"$BIN/fakellm" --addr 127.0.0.1:19303 --engine vllm --models bench-slow --tps 5 --tokens 40 --log-level warn >"$W/fk.log" 2>&1 &
FK=$!
cat >"$W/gw.yaml" <<Y
listen: 127.0.0.1:19392
plugins: $ROOT/plugins.yaml
data_dir: $W/data
${EXTRA:-}
metrics: {listen: "127.0.0.1:19393", key: mk, pprof: true}
backends:
  - {name: slow-vllm, engine: vllm, url: "http://127.0.0.1:19303", max_concurrent: 2000, models: [bench-slow]}
discovery: {interval: 30s, timeout: 5s}
log: {level: warn}
Y
(cd "$ROOT" && env ADMIN_API_KEY=$KEY "$BIN/mindrouter" serve --config "$W/gw.yaml" >"$W/gw.log" 2>&1) &
for _ in $(seq 1 120); do curl -fsS -o /dev/null http://127.0.0.1:19392/readyz 2>/dev/null && break; sleep 0.25; done
GWPID=$(pgrep -f "mindrouter serve --config $W/gw.yaml" | head -1)
LG=("$BIN/loadgen" --url http://127.0.0.1:19392/v1/chat/completions --key $KEY --model bench-slow --stream --expect-interval 200ms)
"${LG[@]}" --hold-streams 16 --ramp 0s --timeout 60s >/dev/null 2>&1 # warm the pools and connections
sleep 1
if [ -n "$P" ] && [ "${PROF_KIND:-}" = strace ]; then
	# Syscall counts for 5 s mid-hold (strace -c: the counts, not the times, are to be trusted).
	(sleep 3; timeout -s INT 5 strace -c -f -p "$GWPID" -o "$P" >/dev/null 2>&1) &
	CP=$!
elif [ -n "$P" ]; then
	(sleep 3; curl -s -H "Authorization: Bearer mk" "http://127.0.0.1:19393/debug/pprof/${PROF_KIND:-profile?seconds=5}" -o "$P") &
	CP=$!
fi
"${LG[@]}" --hold-streams "$HOLD" --ramp 2s --stall-factor 5 --timeout 120s --pid "$GWPID" --out "$W/lg.json" 2>&1 | tail -4
[ -n "$P" ] && wait $CP
kill $FK 2>/dev/null || true
kill -9 "$GWPID" 2>/dev/null || true
wait 2>/dev/null || true
