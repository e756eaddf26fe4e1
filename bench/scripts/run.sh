#!/usr/bin/env bash
# MindRouter end-to-end comparative benchmark, all on this machine, all on 127.0.0.1.
#
#   bench/scripts/run.sh [OUTDIR]        # default OUTDIR: a new /tmp/mindrouter-bench.XXXXXX
#
# Targets: direct (fakellm vLLM), nginx (proxy_pass, keepalive upstream) and
# mindrouter (the gateway), measured in interleaved rounds (A B C A B C ...);
# then the gateway's CPU per streamed chunk (OpenAI client -> Ollama backend),
# then 1,000 concurrent slow streams through a fresh gateway (memory per stream,
# stalls), then the Go micro-benchmarks. Raw results land in OUTDIR; the tables
# in OUTDIR/summary.md. See bench/README.md.
#
# Knobs (environment): ROUNDS (5) DUR (4s) WARM (1s) CPU_STREAMS (200)
# CPU_TOKENS (200) CPU_ROUNDS (3) HOLD_STREAMS (1000) HOLD_TPS (5)
# HOLD_TOKENS (40) BENCHTIME (2000x) SKIP_GOBENCH (unset) PORT_BASE (19100).
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=${1:-$(mktemp -d /tmp/mindrouter-bench.XXXXXX)}
mkdir -p "$OUT/rounds" "$OUT/cpu" "$OUT/hold" "$OUT/logs" "$OUT/conf"
OUT=$(cd "$OUT" && pwd)

ROUNDS=${ROUNDS:-5}
DUR=${DUR:-4s}
WARM=${WARM:-1s}
CPU_STREAMS=${CPU_STREAMS:-200}
CPU_TOKENS=${CPU_TOKENS:-200}
CPU_ROUNDS=${CPU_ROUNDS:-3}
HOLD_STREAMS=${HOLD_STREAMS:-1000}
HOLD_TPS=${HOLD_TPS:-5}
HOLD_TOKENS=${HOLD_TOKENS:-40}
BENCHTIME=${BENCHTIME:-2000x}
PB=${PORT_BASE:-19100}
P_VLLM=$((PB + 1)) P_OLLAMA=$((PB + 2)) P_SLOW=$((PB + 3))
P_NGINX=$((PB + 80)) P_GW=$((PB + 90)) P_GW2=$((PB + 91))
KEY=${ADMIN_API_KEY:-mr2_bench_$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')}
CLK=$(getconf CLK_TCK)
LG=$ROOT/bin/loadgen
T0=$(date +%s)

log() { printf '[%4ds] %s\n' $(($(date +%s) - T0)) "$*" | tee -a "$OUT/run.log" >&2; }
problem() { log "PROBLEM: $*"; echo "$*" >>"$OUT/problems.txt"; }

PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start NAME CMD...: run CMD in the background, logging to logs/NAME.log; sets LAST_PID.
start() {
	local name=$1
	shift
	"$@" >"$OUT/logs/$name.log" 2>&1 &
	LAST_PID=$!
	PIDS+=("$LAST_PID")
}

stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# wait_http URL [HEADER]: up to 30 s for a 2xx.
wait_http() {
	local i
	for i in $(seq 1 120); do
		if curl -fsS -o /dev/null -m 2 ${2:+-H "$2"} "$1" 2>/dev/null; then return 0; fi
		sleep 0.25
	done
	return 1
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# ---------------------------------------------------------------- machine, build
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "nproc: $(nproc)"
	echo "cpu: $(lscpu | grep 'Model name' | sed 's/Model name:[[:space:]]*//')"
	echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
	echo "kernel: $(uname -r)"
	echo "go: $(go version)"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD 2>/dev/null || echo ' (dirty tree)')"
	echo "clk_tck: $CLK"
	echo "open files: $(ulimit -n)"
	echo "loadavg at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT/machine.txt"

log "building (make gateway plugins fakellm; go build ./bench/loadgen)"
make -s gateway plugins fakellm >"$OUT/logs/build.log" 2>&1 || { cat "$OUT/logs/build.log"; exit 1; }
go build -o "$LG" ./bench/loadgen
# Run from a snapshot: other people rebuilding bin/ or plugins/*.wasm during the run
# must not hot-reload or replace what is being measured.
SNAP=$OUT/snap
mkdir -p "$SNAP/plugins"
cp bin/mindrouter bin/fakellm "$LG" "$SNAP/"
cp plugins.yaml "$SNAP/"
cp plugins/*.wasm "$SNAP/plugins/"
LG=$SNAP/loadgen
sha256sum "$SNAP"/mindrouter "$SNAP"/plugins/*.wasm | sed "s|$SNAP/||" >"$OUT/snap.sha256"

if ! command -v nginx >/dev/null; then
	log "installing nginx"
	SUDO=""
	[ "$(id -u)" -ne 0 ] && SUDO=sudo
	($SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nginx-light) >"$OUT/logs/apt.log" 2>&1 ||
		(DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nginx) >>"$OUT/logs/apt.log" 2>&1 ||
		{ echo "could not install nginx, see $OUT/logs/apt.log"; exit 1; }
fi
echo "nginx: $(nginx -v 2>&1 | sed 's/.*: //')" | tee -a "$OUT/machine.txt"

for p in $P_VLLM $P_OLLAMA $P_SLOW $P_NGINX $P_GW $P_GW2; do
	port_free "$p" || { echo "port $p is in use (set PORT_BASE)"; exit 1; }
done

# ---------------------------------------------------------------- backends, nginx, gateway
FK=$SNAP/fakellm
start fakellm-vllm "$FK" --addr 127.0.0.1:$P_VLLM --engine vllm --models bench-vllm --tokens "$CPU_TOKENS" --log-level warn
FK_VLLM=$LAST_PID
start fakellm-ollama "$FK" --addr 127.0.0.1:$P_OLLAMA --engine ollama --models bench-ollama --tokens "$CPU_TOKENS" --log-level warn
start fakellm-slow "$FK" --addr 127.0.0.1:$P_SLOW --engine vllm --models bench-slow --tps "$HOLD_TPS" --tokens "$HOLD_TOKENS" --log-level warn
FK_SLOW=$LAST_PID

NG=$OUT/conf/nginx
mkdir -p "$NG/tmp"
NGUSER=""
[ "$(id -u)" -eq 0 ] && NGUSER="user root root;"
cat >"$NG/nginx.conf" <<EOF
$NGUSER
worker_processes auto;
pid $NG/nginx.pid;
error_log $OUT/logs/nginx-error.log warn;
events { worker_connections 8192; }
http {
    access_log off;
    keepalive_requests 1000000;
    client_body_temp_path $NG/tmp/body;
    proxy_temp_path $NG/tmp/proxy;
    fastcgi_temp_path $NG/tmp/fastcgi;
    uwsgi_temp_path $NG/tmp/uwsgi;
    scgi_temp_path $NG/tmp/scgi;
    upstream fakellm {
        server 127.0.0.1:$P_VLLM;
        keepalive 64;
        keepalive_requests 1000000;
    }
    server {
        listen 127.0.0.1:$P_NGINX;
        location / {
            proxy_pass http://fakellm;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
        }
    }
}
EOF
start nginx nginx -p "$NG" -c "$NG/nginx.conf" -g 'daemon off;'

# gwconf FILE LISTEN BACKENDS...: a gateway config (log level warn: no access log, as nginx).
gwconf() {
	local f=$1 listen=$2
	shift 2
	{
		echo "listen: $listen"
		echo "plugins: $SNAP/plugins.yaml"
		echo "backends:"
		printf '  - %s\n' "$@"
		echo "discovery: {interval: 30s, timeout: 5s}"
		echo "log: {level: warn}"
	} >"$f"
}
gwconf "$OUT/conf/gateway.yaml" 127.0.0.1:$P_GW \
	"{name: fast-vllm, engine: vllm, url: \"http://127.0.0.1:$P_VLLM\", max_concurrent: 256, models: [bench-vllm]}" \
	"{name: fast-ollama, engine: ollama, url: \"http://127.0.0.1:$P_OLLAMA\", max_concurrent: 256, models: [bench-ollama]}"
gwconf "$OUT/conf/gateway-hold.yaml" 127.0.0.1:$P_GW2 \
	"{name: slow-vllm, engine: vllm, url: \"http://127.0.0.1:$P_SLOW\", max_concurrent: 2000, models: [bench-slow]}"

GW_STARTS=0
start_gw() {
	GW_STARTS=$((GW_STARTS + 1))
	GW_LOG=gateway.log
	if [ "$GW_STARTS" -gt 1 ]; then GW_LOG=gateway.$GW_STARTS.log; fi
	start "${GW_LOG%.log}" env ADMIN_API_KEY="$KEY" "$SNAP/mindrouter" serve --config "$OUT/conf/gateway.yaml"
	GW=$LAST_PID
}
start_gw

for u in http://127.0.0.1:$P_VLLM/health http://127.0.0.1:$P_OLLAMA/api/version http://127.0.0.1:$P_SLOW/health; do
	wait_http "$u" || { echo "fakellm at $u did not come up"; exit 1; }
done
wait_http "http://127.0.0.1:$P_NGINX/health" || { cat "$OUT/logs/nginx-error.log"; echo "nginx did not come up"; exit 1; }
wait_http "http://127.0.0.1:$P_GW/readyz" || { tail -20 "$OUT/logs/gateway.log"; echo "gateway not ready"; exit 1; }
# The gateway is ready once discovery saw the models; check one request of each kind.
for m in bench-vllm bench-ollama; do
	for s in false true; do
		code=$(curl -s -o "$OUT/logs/smoke-$m-$s.txt" -w '%{http_code}' -m 10 "http://127.0.0.1:$P_GW/v1/chat/completions" \
			-H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
			-d "{\"model\":\"$m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":4,\"stream\":$s}") || code=000
		[ "$code" = 200 ] || problem "smoke request model=$m stream=$s -> HTTP $code: $(head -c 300 "$OUT/logs/smoke-$m-$s.txt")"
	done
done
log "up: fakellm $FK_VLLM, nginx, gateway $GW (key in $OUT/conf/key)"
echo "$KEY" >"$OUT/conf/key"

# ---------------------------------------------------------------- 1. latency rounds
url_of() {
	case $1 in
	direct) echo "http://127.0.0.1:$P_VLLM/v1/chat/completions" ;;
	nginx) echo "http://127.0.0.1:$P_NGINX/v1/chat/completions" ;;
	mindrouter) echo "http://127.0.0.1:$P_GW/v1/chat/completions" ;;
	esac
}
scen_args() {
	case $1 in
	1-plain-c1) echo "--concurrency 1" ;;
	2-plain-c64) echo "--concurrency 64" ;;
	3-stream-c1) echo "--concurrency 1 --stream" ;;
	esac
}
# exit_desc PID: reap a dead child and describe how it ended.
exit_desc() {
	local rc=0
	wait "$1" 2>/dev/null || rc=$?
	if [ "$rc" -gt 128 ]; then echo "killed by signal $((rc - 128)) (SIG$(kill -l $((rc - 128)) 2>/dev/null))"; else echo "exit status $rc"; fi
}
# gw_check WHERE: true if the gateway runs; if it died, record how (and its last log
# lines), restart it (at most twice per run) and return false for this measurement.
gw_check() {
	kill -0 "$GW" 2>/dev/null && return 0
	problem "gateway pid $GW found dead before $1: $(exit_desc "$GW"); last lines of logs/$GW_LOG: $(tail -n 3 "$OUT/logs/$GW_LOG" | tr '\n' ' ' | cut -c1-600)"
	if [ "$GW_STARTS" -lt 3 ]; then
		start_gw
		wait_http "http://127.0.0.1:$P_GW/readyz" && log "gateway restarted as pid $GW (logs/$GW_LOG)" ||
			problem "restarted gateway not ready"
	fi
	return 1
}

log "latency rounds: $ROUNDS x {1-plain-c1 2-plain-c64 3-stream-c1} x {direct nginx mindrouter}, $WARM + $DUR each"
for r in $(seq 1 "$ROUNDS"); do
	for s in 1-plain-c1 2-plain-c64 3-stream-c1; do
		for t in direct nginx mindrouter; do
			extra=()
			if [ "$t" = mindrouter ]; then
				gw_check "round $r $s" || continue
				extra=(--pid "$GW" --clk-tck "$CLK")
			fi
			# shellcheck disable=SC2046
			"$LG" --url "$(url_of $t)" --key "$KEY" --model bench-vllm --max-tokens 16 $(scen_args $s) \
				--warmup "$WARM" --duration "$DUR" --timeout 10s "${extra[@]}" \
				--target $t --scenario $s --round "$r" --out "$OUT/rounds/$s.$t.r$r.json" \
				>>"$OUT/rounds/loadgen.txt" 2>&1 || problem "loadgen failed: $t $s round $r (see rounds/loadgen.txt)"
		done
	done
	log "round $r done ($(cut -d' ' -f1 /proc/loadavg) load)"
done
"$LG" report --json "$OUT/rounds/summary.json" "$OUT/rounds" >"$OUT/rounds/summary.md" || problem "report failed"

# ---------------------------------------------------------------- 2. CPU per streamed chunk
# OpenAI client -> gateway -> Ollama backend (NDJSON in, SSE out), CPU_STREAMS streams
# of CPU_TOKENS tokens, gateway utime+stime before/after. A run of 10-token streams
# gives the per-request part, so (long - short) / (chunks long - chunks short) is
# the marginal cost of one chunk. Same for the vLLM backend (SSE in, SSE out).
log "CPU per streamed chunk: $CPU_ROUNDS x ($CPU_STREAMS streams x $CPU_TOKENS tokens, and x 10 tokens), ollama and vllm backends"
cpu_run() { # NAME MODEL TOKENS ROUND
	gw_check "cpu run $1 $3 tokens round $4" || return 0
	"$LG" --url "$(url_of mindrouter)" --key "$KEY" --model "$2" --stream --max-tokens "$3" \
		--concurrency 4 --warmup 0.5s --duration 120s --requests "$CPU_STREAMS" --timeout 30s \
		--pid "$GW" --clk-tck "$CLK" --target "$1" --scenario "cpu-$3" \
		--out "$OUT/cpu/$1.t$3.r$4.json" >>"$OUT/cpu/loadgen.txt" 2>&1 ||
		problem "loadgen failed: cpu $1 tokens $3 round $4"
}
for r in $(seq 1 "$CPU_ROUNDS"); do
	for b in ollama vllm; do
		cpu_run "$b" "bench-$b" "$CPU_TOKENS" "$r"
		cpu_run "$b" "bench-$b" 10 "$r"
	done
done
for b in ollama vllm; do
	for r in $(seq 1 "$CPU_ROUNDS"); do
		L=$OUT/cpu/$b.t$CPU_TOKENS.r$r.json S=$OUT/cpu/$b.t10.r$r.json
		[ -s "$L" ] && [ -s "$S" ] || continue
		jq -n --slurpfile l "$L" --slurpfile s "$S" --arg b "$b" --argjson r "$r" '
			($l[0]) as $l | ($s[0]) as $s |
			{backend: $b, round: $r, streams: $l.ok, chunks: $l.chunks.sum, chunks_per_stream: $l.chunks.p50,
			 errors: (($l.errors|add // 0) + ($s.errors|add // 0)),
			 cpu_s: $l.proc.cpu_seconds, gross_us_per_chunk: $l.proc.cpu_per_chunk_us,
			 us_per_request_short: $s.proc.cpu_per_request_us,
			 marginal_us_per_chunk: (if ($l.chunks.sum - $s.chunks.sum) > 0
			   then ((($l.proc.cpu_seconds - $s.proc.cpu_seconds) * 1e6 / ($l.chunks.sum - $s.chunks.sum)) * 100 | round / 100)
			   else null end)}'
	done
done | jq -s '.' >"$OUT/cpu/summary.json"

# ---------------------------------------------------------------- 3. many concurrent streams
log "holding $HOLD_STREAMS streams ($HOLD_TOKENS tokens at $HOLD_TPS tok/s) through a fresh gateway"
start gateway-hold env ADMIN_API_KEY="$KEY" "$SNAP/mindrouter" serve --config "$OUT/conf/gateway-hold.yaml"
GW2=$LAST_PID
HOLD_URL=http://127.0.0.1:$P_GW2/v1/chat/completions
INTERVAL_MS=$((1000 / HOLD_TPS))
if wait_http "http://127.0.0.1:$P_GW2/readyz"; then
	# Warm the fresh gateway (plugin pools, connections) with a few streams, then settle.
	"$LG" --url "$HOLD_URL" --key "$KEY" --model bench-slow --stream --hold-streams 16 --ramp 0s \
		--expect-interval ${INTERVAL_MS}ms --timeout 60s >"$OUT/hold/warm.txt" 2>&1 || problem "hold warm-up failed"
	sleep 2
	"$LG" --url "$HOLD_URL" --key "$KEY" --model bench-slow --stream --hold-streams "$HOLD_STREAMS" --ramp 2s \
		--expect-interval ${INTERVAL_MS}ms --stall-factor 5 --timeout 120s --pid "$GW2" --clk-tck "$CLK" \
		--target mindrouter --scenario hold --out "$OUT/hold/mindrouter.json" | tee "$OUT/hold/mindrouter.txt" ||
		problem "loadgen failed: hold through the gateway"
	kill -0 "$GW2" 2>/dev/null || problem "hold gateway pid $GW2 died: $(exit_desc "$GW2"); see logs/gateway-hold.log"
else
	problem "hold gateway did not become ready; see logs/gateway-hold.log"
fi
stop "$GW2"
# Baseline: the same streams straight to fakellm (stalls here are the machine's or the loader's).
"$LG" --url "http://127.0.0.1:$P_SLOW/v1/chat/completions" --model bench-slow --stream --hold-streams "$HOLD_STREAMS" \
	--ramp 2s --expect-interval ${INTERVAL_MS}ms --stall-factor 5 --timeout 120s --pid "$FK_SLOW" --clk-tck "$CLK" \
	--target direct --scenario hold --out "$OUT/hold/direct.json" | tee "$OUT/hold/direct.txt" ||
	problem "loadgen failed: hold direct"

# ---------------------------------------------------------------- stop servers, micro-benchmarks
kill -0 "$GW" 2>/dev/null || problem "gateway pid $GW died during the run: $(exit_desc "$GW"); see logs/$GW_LOG"
cleanup
PIDS=()
if [ -z "${SKIP_GOBENCH:-}" ]; then
	log "Go micro-benchmarks (-benchtime=$BENCHTIME)"
	pkgs=()
	for p in ./core/pluginhost ./core/frame ./sdk/canon ./plugins/ollama ./plugins/openai ./plugins/vllm; do
		[ -d "$p" ] && grep -qs '^func Benchmark' "$p"/*_test.go && pkgs+=("$p")
	done
	echo "packages: ${pkgs[*]}" >"$OUT/gobench.txt"
	go test -run='^$' -bench=. -benchmem -benchtime="$BENCHTIME" "${pkgs[@]}" >>"$OUT/gobench.txt" 2>&1 ||
		problem "go test -bench failed (see gobench.txt)"
fi

# ---------------------------------------------------------------- summary
# checks: the stated targets, each with the figure it rests on.
checks() {
	local rs=$OUT/rounds/summary.json
	jq -r '
		(.[] | select(.scenario == "1-plain-c1" and .target == "mindrouter")) as $m |
		(.[] | select(.scenario == "1-plain-c1" and .target == "nginx")) as $n |
		"- added p99, c=1, not streamed: mindrouter \($m.added.p99) µs (per-round \($m.added_min.p99|round)…\($m.added_max.p99|round)), target ≤ 300 µs: " +
		  (if $m.added.p99 <= 300 then "**met**" else "**not met**" end),
		"- vs nginx added p99 \($n.added.p99) µs: ratio " +
		  (if $n.added.p99 > 0 then "\($m.added.p99 / $n.added.p99 * 100 | round / 100)×, target ≤ 3×: " +
		     (if $m.added.p99 <= 3 * $n.added.p99 then "**met**" else "**not met**" end)
		   else "undefined (nginx added ≤ 0 µs in the median round difference)" end)' "$rs" 2>/dev/null || echo "- latency: no round summary"
	jq -r 'map(select(.backend == "ollama")) | if length == 0 then "- CPU per chunk: no data" else
		([.[].gross_us_per_chunk] | sort | .[length/2|floor]) as $g |
		([.[].marginal_us_per_chunk] | sort | .[length/2|floor]) as $mg |
		"- gateway CPU per streamed chunk, OpenAI client → Ollama backend: \($g) µs gross (marginal \($mg) µs), target ≤ 5 µs: " +
		  (if $g <= 5 then "**met**" elif $mg <= 5 then "**met on the marginal figure only**" else "**not met**" end) end' "$OUT/cpu/summary.json" 2>/dev/null || echo "- CPU per chunk: no data"
	jq -r '"- \(.hold.streams) concurrent streams: \(.ok) completed, \(.errors | add // 0) errors, \(.hold.stalls) stalls in \(.hold.stalled_streams) streams (max gap \(.hold.gap.max_us / 1000 | round) ms): " +
		(if .ok == .hold.streams and .hold.stalls == 0 then "**met**" else "**not met**" end) +
		"; memory \(.hold.rss_per_stream_kib) KiB per stream (RSS \(.proc.rss_before_kib) → \(.proc.rss_peak_kib) KiB)"' "$OUT/hold/mindrouter.json" 2>/dev/null || echo "- many streams: no data"
}

{
	echo "# MindRouter bench run $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo
	echo '```'
	cat "$OUT/machine.txt"
	echo '```'
	echo
	echo "## Latency (added = target - direct in the same round; medians of $ROUNDS rounds of $WARM + $DUR)"
	cat "$OUT/rounds/summary.md"
	echo
	echo "## Gateway CPU per streamed chunk ($CPU_STREAMS streams x $CPU_TOKENS tokens; marginal = vs 10-token streams)"
	echo
	echo "| backend | round | streams | chunks | errors | gateway CPU | gross µs/chunk | µs/request (10-token) | marginal µs/chunk |"
	echo "|---|---|---|---|---|---|---|---|---|"
	jq -r '.[] | "| \(.backend) | \(.round) | \(.streams) | \(.chunks) | \(.errors) | \(.cpu_s)s | \(.gross_us_per_chunk) | \(.us_per_request_short) | \(.marginal_us_per_chunk) |"' "$OUT/cpu/summary.json"
	jq -r 'group_by(.backend)[] | "\nmedian \(.[0].backend): gross \([.[].gross_us_per_chunk]|sort|.[length/2|floor]) µs/chunk, marginal \([.[].marginal_us_per_chunk]|sort|.[length/2|floor]) µs/chunk"' "$OUT/cpu/summary.json"
	echo
	echo "## $HOLD_STREAMS concurrent streams ($HOLD_TOKENS tokens at $HOLD_TPS tok/s; stall = gap > 5 x ${INTERVAL_MS}ms)"
	echo
	echo "| target | ok / streams | errors | peak open | stalls (streams) | gap p50 | gap p99 | gap max | TTFT p99 | RSS before | RSS peak | RSS per stream | CPU |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	for t in mindrouter direct; do
		f=$OUT/hold/$t.json
		[ -s "$f" ] || continue
		jq -r --arg t "$t" 'def ms: (. / 100 | round) / 10 | tostring + " ms";
			"| \($t) | \(.ok) / \(.hold.streams) | \(.errors | to_entries | map("\(.key): \(.value)") | join(", ") | if . == "" then "0" else . end) | \(.hold.peak_active) | \(.hold.stalls) (\(.hold.stalled_streams)) | \(.hold.gap.p50_us|ms) | \(.hold.gap.p99_us|ms) | \(.hold.gap.max_us|ms) | \(.ttft.p99_us|ms) | \(.proc.rss_before_kib) KiB | \(.proc.rss_peak_kib) KiB | \(.hold.rss_per_stream_kib) KiB | \(.proc.cpu_seconds) s (\(.proc.cpu_per_chunk_us) µs/chunk) |"' "$f"
	done
	echo
	echo "## Go micro-benchmarks"
	echo
	echo '```'
	grep -E '^(Benchmark|ok|FAIL|pkg:|---)' "$OUT/gobench.txt" 2>/dev/null || echo "(skipped)"
	echo '```'
	echo
	echo "## Targets"
	echo
	checks
	if [ -s "$OUT/problems.txt" ]; then
		echo
		echo "## Problems"
		echo
		sed 's/^/- /' "$OUT/problems.txt"
	fi
} >"$OUT/summary.md"
cat "$OUT/summary.md"
log "done in $(($(date +%s) - T0)) s; raw results in $OUT"
