#!/usr/bin/env bash
# Several gateway variants side by side, against the same fakellm backends and
# nginx, in interleaved rounds: "the WebAssembly tax" (canonical wasm path vs
# fused bundle vs native plugins) and old-vs-new comparisons (a gateway built
# from an older commit, with its own plugins).
#
#   bench/scripts/tax.sh [OUTDIR]        # default OUTDIR: a new /tmp/mindrouter-tax.XXXXXX
#
# Variants (VARIANTS, space-separated, default "old canon bundle native"):
#   old          OLD_TREE/bin/mindrouter with OLD_TREE/plugins.yaml and its plugins/*.wasm
#                (build it first: git worktree add /tmp/mr-old REV && make -C /tmp/mr-old gateway plugins);
#                skipped when OLD_TREE is unset
#   canon        this tree's gateway, separate openai/vllm/ollama .wasm modules (4 plugin calls a request)
#   bundle       this tree's gateway, plugins/bundle.wasm (kind: bundle; fused calls, 2 a request)
#   native       this tree's gateway, path: native:firstparty (the bundle compiled in, no wasm)
#   native-canon this tree's gateway, native:openai, native:vllm, native:ollama (unfused, no wasm)
#   off          this tree's gateway and plugins.yaml (the default configuration), audit.enabled: false
#   default      this tree's gateway and plugins.yaml, every default (embedded audit with content)
#   clickhouse   as default, the audit to a local ClickHouse (bench/scripts/clickhouse.sh; skipped
#                when clickhouse-server is not installed: deploy/scripts/test-services.sh installs it)
#   portkey      Portkey's gateway (npm @portkey-ai/gateway@PORTKEY_VERSION on Node) to the same
#                backends (x-portkey-provider openai / ollama, x-portkey-custom-host), installed
#                into PORTKEY_DIR with npm the first time; skipped without node and npm
# bench/scripts/table.sh runs direct, nginx, off, default, clickhouse and portkey and prints the
# issue-23 table (c=1 added p50 and p99, c=64 req/s, share of nginx) first (with rows for old and
# native when those variants run: the tree before, and the default configuration without WebAssembly).
# A variant whose gateway does not come up (say, native support not in this build) is dropped,
# and problems.txt says so.
#
# For OpenAI → vLLM and OpenAI → Ollama (scenarios v* and o*): direct (the backend's own API),
# nginx (proxy_pass to that backend) and every variant, for ROUNDS rounds of
# {1-plain-c1, 2-plain-c64, 3-stream-c1}, the variants' order rotating each round; then
# CPU per streamed chunk at full speed (variants and nginx, interleaved); then HOLD_STREAMS
# concurrent slow streams (OpenAI → vLLM) through a fresh gateway of each variant, nginx
# (CPU of its workers, /proc/<pid>/stat, as the gateway's) and direct.
#
# Knobs: ROUNDS (5) DUR (4s) WARM (1s) CPU_STREAMS (200) CPU_TOKENS (200) CPU_ROUNDS (3)
# HOLD_STREAMS (1000) HOLD_TPS (5) HOLD_TOKENS (40) HOLD_ROUNDS (1) PORT_BASE (19200)
# VARIANTS, OLD_TREE, NEW_TREE (where the current gateway and plugins are built: default this
# tree; a clean `git worktree add /tmp/mr-new HEAD` keeps others' uncommitted work out),
# SKIP_BUILD (use NEW_TREE's bin/ and plugins/*.wasm as they are).
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=${1:-$(mktemp -d /tmp/mindrouter-tax.XXXXXX)}
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
HOLD_ROUNDS=${HOLD_ROUNDS:-1}
VARIANTS=${VARIANTS:-old canon bundle native}
PORTKEY_VERSION=${PORTKEY_VERSION:-1.15.2}
PORTKEY_DIR=${PORTKEY_DIR:-$HOME/.cache/mindrouter-bench/portkey-$PORTKEY_VERSION}
OLD_TREE=${OLD_TREE:-}
NEW_TREE=$(cd "${NEW_TREE:-$ROOT}" && pwd)
PB=${PORT_BASE:-19200}
P_VLLM=$((PB + 1)) P_OLLAMA=$((PB + 2)) P_SLOW=$((PB + 3))
P_NG_VLLM=$((PB + 80)) P_NG_OLLAMA=$((PB + 81)) P_NG_SLOW=$((PB + 82))
P_CH=$((PB + 5))
KEY=${ADMIN_API_KEY:-mr2_bench_$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')}
CLK=$(getconf CLK_TCK)
T0=$(date +%s)
PROMPT="Write a short poem about load balancers."

log() { printf '[%4ds] %s\n' $(($(date +%s) - T0)) "$*" | tee -a "$OUT/run.log" >&2; }
problem() { log "PROBLEM: $*"; echo "$*" >>"$OUT/problems.txt"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start() { # NAME CMD...: background, stderr+stdout to logs/NAME.log; sets LAST_PID
	local name=$1
	shift
	"$@" >"$OUT/logs/$name.log" 2>&1 &
	LAST_PID=$!
	PIDS+=("$LAST_PID")
}
stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
wait_http() { # URL [PID]: up to 30 s for a 2xx (false at once if PID exits)
	local i
	for i in $(seq 1 120); do
		curl -fsS -o /dev/null -m 2 "$1" 2>/dev/null && return 0
		[ -n "${2:-}" ] && ! kill -0 "$2" 2>/dev/null && return 1
		sleep 0.25
	done
	return 1
}
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
exit_desc() {
	local rc=0
	wait "$1" 2>/dev/null || rc=$?
	if [ "$rc" -gt 128 ]; then echo "killed by signal $((rc - 128))"; else echo "exit status $rc"; fi
}
# median of numbers on stdin (the mean of the middle two for an even count); "null" for none
median() { sort -g | awk '{a[NR]=$1} END {if (!NR) print "null"; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2] + a[NR/2+1]) / 2}'; }

# SUMMARY_ONLY=1 tax.sh OUTDIR: rewrite OUTDIR/summary.md from the results already there.
if [ -n "${SUMMARY_ONLY:-}" ]; then
	eval "$(sed -n 's/^knobs: //p' "$OUT/machine.txt")"
	read -r -a GWS <<<"$(sed -n 's/^variants up: //p' "$OUT/machine.txt")"
	INTERVAL_MS=$((1000 / HOLD_TPS))
else

# ---------------------------------------------------------------- machine, build, snapshot
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
read -r -a VS <<<"$VARIANTS"
{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "nproc: $(nproc)"
	echo "cpu: $(lscpu | grep 'Model name' | sed 's/Model name:[[:space:]]*//')"
	echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
	echo "kernel: $(uname -r)"
	echo "go: $(go version)"
	echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD 2>/dev/null || echo ' (dirty tree)') (loadgen, fakellm)"
	echo "new: $NEW_TREE at $(git -C "$NEW_TREE" rev-parse --short HEAD)$(git -C "$NEW_TREE" diff --quiet HEAD 2>/dev/null || echo ' (dirty tree)')"
	[ -n "$OLD_TREE" ] && echo "old: $OLD_TREE at $(git -C "$OLD_TREE" rev-parse --short HEAD)$(git -C "$OLD_TREE" diff --quiet HEAD 2>/dev/null || echo ' (dirty tree)')"
	echo "variants: ${VS[*]}"
	echo "knobs: ROUNDS=$ROUNDS DUR=$DUR WARM=$WARM CPU_STREAMS=$CPU_STREAMS CPU_TOKENS=$CPU_TOKENS CPU_ROUNDS=$CPU_ROUNDS HOLD_STREAMS=$HOLD_STREAMS HOLD_TPS=$HOLD_TPS HOLD_TOKENS=$HOLD_TOKENS HOLD_ROUNDS=$HOLD_ROUNDS"
	echo "clk_tck: $CLK"
	echo "open files: $(ulimit -n)"
	echo "uptime at start: $(uptime)"
} | tee "$OUT/machine.txt"

if [ -z "${SKIP_BUILD:-}" ]; then
	log "building (make -C $NEW_TREE gateway plugins; make fakellm)"
	{ make -s -C "$NEW_TREE" gateway plugins && make -s fakellm; } >"$OUT/logs/build.log" 2>&1 || { tail -30 "$OUT/logs/build.log"; exit 1; }
fi
go build -o "$OUT/snap/loadgen" ./bench/loadgen
SNAP=$OUT/snap
mkdir -p "$SNAP/new/plugins"
cp bin/fakellm "$SNAP/"
cp "$NEW_TREE/bin/mindrouter" "$SNAP/new/"
cp "$NEW_TREE"/plugins/*.wasm "$SNAP/new/plugins/"
LG=$SNAP/loadgen
FK=$SNAP/fakellm
if [ -n "$OLD_TREE" ]; then
	mkdir -p "$SNAP/old/plugins"
	cp "$OLD_TREE/bin/mindrouter" "$SNAP/old/"
	cp "$OLD_TREE"/plugins/*.wasm "$SNAP/old/plugins/"
	sed 's|^cache_dir:.*|cache_dir: .cache/wazero-old|' "$OLD_TREE/plugins.yaml" >"$SNAP/old/plugins.yaml"
fi
(cd "$SNAP" && sha256sum new/mindrouter new/plugins/*.wasm $([ -n "$OLD_TREE" ] && echo old/mindrouter old/plugins/*.wasm)) >"$OUT/snap.sha256"

# plugins.yaml of each current-tree variant.
cat >"$SNAP/new/plugins-canon.yaml" <<'EOF'
# The first-party plugins as separate modules: the canonical path (2 calls a direction).
abi: 2
cache_dir: .cache/wazero-canon
plugins:
  - {name: openai, kind: translator, path: plugins/openai.wasm, mode: trusted, pool: {min: 3}}
  - {name: vllm, kind: adapter, path: plugins/vllm.wasm, mode: trusted, pool: {min: 3}}
  - {name: ollama, kind: adapter, path: plugins/ollama.wasm, mode: trusted, pool: {min: 3}}
EOF
cat >"$SNAP/new/plugins-bundle.yaml" <<'EOF'
# The first-party bundle (openai + vllm + ollama in one module): fused calls.
abi: 2
cache_dir: .cache/wazero-bundle
plugins:
  - {name: firstparty, kind: bundle, path: plugins/bundle.wasm, mode: trusted, pool: {min: 3}}
EOF
cat >"$SNAP/new/plugins-native.yaml" <<'EOF'
# The first-party bundle compiled into the gateway (no WebAssembly): fused calls.
abi: 2
plugins:
  - {name: firstparty, kind: bundle, path: "native:firstparty", mode: trusted, pool: {min: 3}}
EOF
cat >"$SNAP/new/plugins-native-canon.yaml" <<'EOF'
# The first-party plugins compiled into the gateway (no WebAssembly), one per component: unfused.
abi: 2
plugins:
  - {name: openai, kind: translator, path: "native:openai", mode: trusted, pool: {min: 3}}
  - {name: vllm, kind: adapter, path: "native:vllm", mode: trusted, pool: {min: 3}}
  - {name: ollama, kind: adapter, path: "native:ollama", mode: trusted, pool: {min: 3}}
EOF
# off, default, clickhouse: the tree's own plugins.yaml (the default configuration), a cache each.
for v in off default clickhouse; do
	sed "s|^cache_dir:.*|cache_dir: .cache/wazero-$v|" "$NEW_TREE/plugins.yaml" >"$SNAP/new/plugins-$v.yaml"
done
bin_of() { if [ "$1" = old ]; then echo "$SNAP/old/mindrouter"; else echo "$SNAP/new/mindrouter"; fi; }
yaml_of() { if [ "$1" = old ]; then echo "$SNAP/old/plugins.yaml"; else echo "$SNAP/new/plugins-$1.yaml"; fi; }

command -v nginx >/dev/null || { echo "nginx not installed (bench/scripts/run.sh installs it)"; exit 1; }
echo "nginx: $(nginx -v 2>&1 | sed 's/.*: //')" | tee -a "$OUT/machine.txt"

declare -A GW_PORT GW_HPORT GW_PID GW_STARTS GW_LOG
i=0
for v in "${VS[@]}"; do
	case $v in
	old) [ -n "$OLD_TREE" ] || { problem "variant old: OLD_TREE not set, skipped"; continue; } ;;
	canon | bundle | native | native-canon | off | default) ;;
	clickhouse)
		command -v clickhouse-server >/dev/null || [ -x /usr/sbin/clickhouse-server ] ||
			{ problem "variant clickhouse: clickhouse-server not installed, skipped"; continue; }
		WANT_CH=1
		;;
	portkey)
		{ command -v node && command -v npm; } >/dev/null || { problem "variant portkey: node or npm not installed, skipped"; continue; }
		if [ ! -f "$PORTKEY_DIR/node_modules/@portkey-ai/gateway/build/start-server.js" ]; then
			log "installing @portkey-ai/gateway@$PORTKEY_VERSION into $PORTKEY_DIR"
			mkdir -p "$PORTKEY_DIR"
			npm install --prefix "$PORTKEY_DIR" --no-audit --no-fund "@portkey-ai/gateway@$PORTKEY_VERSION" >"$OUT/logs/portkey-install.log" 2>&1 ||
				{ problem "variant portkey: npm install failed (logs/portkey-install.log), skipped"; continue; }
		fi
		echo "portkey: @portkey-ai/gateway@$PORTKEY_VERSION, node $(node --version)" >>"$OUT/machine.txt"
		;;
	*) echo "unknown variant $v"; exit 1 ;;
	esac
	GW_PORT[$v]=$((PB + 90 + i)) GW_HPORT[$v]=$((PB + 60 + i)) GW_STARTS[$v]=0
	i=$((i + 1))
done
for p in $P_VLLM $P_OLLAMA $P_SLOW $P_CH $P_NG_VLLM $P_NG_OLLAMA $P_NG_SLOW "${GW_PORT[@]}" "${GW_HPORT[@]}"; do
	port_free "$p" || { echo "port $p is in use (set PORT_BASE)"; exit 1; }
done

# ---------------------------------------------------------------- backends, nginx
start fakellm-vllm "$FK" --addr 127.0.0.1:$P_VLLM --engine vllm --models bench-vllm --tokens "$CPU_TOKENS" --log-level warn
start fakellm-ollama "$FK" --addr 127.0.0.1:$P_OLLAMA --engine ollama --models bench-ollama --tokens "$CPU_TOKENS" --log-level warn
start fakellm-slow "$FK" --addr 127.0.0.1:$P_SLOW --engine vllm --models bench-slow --tps "$HOLD_TPS" --tokens "$HOLD_TOKENS" --log-level warn
FK_SLOW=$LAST_PID

NG=$OUT/conf/nginx
mkdir -p "$NG/tmp"
NGUSER=""
[ "$(id -u)" -eq 0 ] && NGUSER="user root root;"
ngserver() { # PORT UPSTREAM
	cat <<EOF
    server {
        listen 127.0.0.1:$1;
        location / {
            proxy_pass http://$2;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
        }
    }
EOF
}
cat >"$NG/nginx.conf" <<EOF
$NGUSER
worker_processes auto;
worker_rlimit_nofile 65536;
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
    upstream vllm { server 127.0.0.1:$P_VLLM; keepalive 64; keepalive_requests 1000000; }
    upstream ollama { server 127.0.0.1:$P_OLLAMA; keepalive 64; keepalive_requests 1000000; }
    upstream slow { server 127.0.0.1:$P_SLOW; keepalive 64; keepalive_requests 1000000; }
$(ngserver $P_NG_VLLM vllm)
$(ngserver $P_NG_OLLAMA ollama)
$(ngserver $P_NG_SLOW slow)
}
EOF
start nginx nginx -p "$NG" -c "$NG/nginx.conf" -g 'daemon off;'
NGINX=$LAST_PID

for u in http://127.0.0.1:$P_VLLM/health http://127.0.0.1:$P_OLLAMA/api/version http://127.0.0.1:$P_SLOW/health \
	http://127.0.0.1:$P_NG_VLLM/health http://127.0.0.1:$P_NG_OLLAMA/api/version http://127.0.0.1:$P_NG_SLOW/health; do
	wait_http "$u" || { tail -5 "$OUT/logs/nginx-error.log"; echo "$u did not come up"; exit 1; }
done
NG_WORKERS=$(pgrep -P "$NGINX" | paste -sd, -)
[ -n "$NG_WORKERS" ] || { echo "no nginx workers under pid $NGINX"; exit 1; }
echo "nginx workers: $NG_WORKERS" >>"$OUT/machine.txt"

# A local ClickHouse for the clickhouse variant.
if [ -n "${WANT_CH:-}" ]; then
	start clickhouse "$ROOT/bench/scripts/clickhouse.sh" "$OUT/clickhouse" "$P_CH"
	for i in $(seq 1 240); do port_free "$P_CH" || break; sleep 0.25; done
	port_free "$P_CH" && problem "clickhouse-server did not listen on $P_CH (logs/clickhouse.log, clickhouse/server.err.log)"
fi

# Ollama-API bodies for direct and nginx (the gateway gets the OpenAI body built by loadgen).
obody() { # STREAM TOKENS
	printf '{"model":"bench-ollama","messages":[{"role":"user","content":"%s"}],"stream":%s,"options":{"num_predict":%d}}\n' "$PROMPT" "$1" "$2" >"$OUT/conf/ollama-$1-$2.json"
	echo "$OUT/conf/ollama-$1-$2.json"
}

# ---------------------------------------------------------------- gateways
gwconf() { # FILE LISTEN PLUGINS_YAML BACKENDS... (GW_DATA: its data_dir; GW_EXTRA: more top-level YAML)
	local f=$1 listen=$2 py=$3
	shift 3
	{
		echo "listen: $listen"
		echo "plugins: $py"
		echo "data_dir: $GW_DATA"
		[ -z "$GW_EXTRA" ] || echo "$GW_EXTRA"
		echo "backends:"
		printf '  - %s\n' "$@"
		echo "discovery: {interval: 30s, timeout: 5s}"
		echo "log: {level: warn}"
	} >"$f"
}
for v in "${!GW_PORT[@]}"; do
	[ "$v" = portkey ] && continue
	case $v in
	off) GW_EXTRA="audit: {enabled: false}" ;;
	clickhouse) GW_EXTRA="audit: {clickhouse: {addr: [\"127.0.0.1:$P_CH\"], database: mindrouter, username: default}}" ;;
	*) GW_EXTRA= ;;
	esac
	# each gateway its own data_dir: two on one audit spool would refuse to start
	GW_DATA=$OUT/data/$v
	gwconf "$OUT/conf/gateway-$v.yaml" "127.0.0.1:${GW_PORT[$v]}" "$(yaml_of "$v")" \
		"{name: fast-vllm, engine: vllm, url: \"http://127.0.0.1:$P_VLLM\", max_concurrent: 256, models: [bench-vllm]}" \
		"{name: fast-ollama, engine: ollama, url: \"http://127.0.0.1:$P_OLLAMA\", max_concurrent: 256, models: [bench-ollama]}"
	GW_DATA=$OUT/data/hold-$v
	gwconf "$OUT/conf/gateway-hold-$v.yaml" "127.0.0.1:${GW_HPORT[$v]}" "$(yaml_of "$v")" \
		"{name: slow-vllm, engine: vllm, url: \"http://127.0.0.1:$P_SLOW\", max_concurrent: 2000, models: [bench-slow]}"
done

start_gw() { # VARIANT
	local v=$1
	GW_STARTS[$v]=$((GW_STARTS[$v] + 1))
	GW_LOG[$v]=gateway-$v.log
	[ "${GW_STARTS[$v]}" -gt 1 ] && GW_LOG[$v]=gateway-$v.${GW_STARTS[$v]}.log
	if [ "$v" = portkey ]; then
		start "${GW_LOG[$v]%.log}" env NODE_ENV=production node "$PORTKEY_DIR/node_modules/@portkey-ai/gateway/build/start-server.js" --port="${GW_PORT[$v]}" --headless
		GW_PID[$v]=$LAST_PID
		return 0
	fi
	start "${GW_LOG[$v]%.log}" env ADMIN_API_KEY="$KEY" "$(bin_of "$v")" serve --config "$OUT/conf/gateway-$v.yaml"
	GW_PID[$v]=$LAST_PID
}
# pk_headers BACKEND: Portkey's routing headers to that fakellm, loadgen --header form (no spaces)
pk_headers() {
	case $1 in
	vllm) echo "x-portkey-provider:openai x-portkey-custom-host:http://127.0.0.1:$P_VLLM/v1" ;;
	ollama) echo "x-portkey-provider:ollama x-portkey-custom-host:http://127.0.0.1:$P_OLLAMA" ;;
	slow) echo "x-portkey-provider:openai x-portkey-custom-host:http://127.0.0.1:$P_SLOW/v1" ;;
	esac
}
# pk_skip TARGET BACKEND STREAM: true for what Portkey's gateway is not measured on. With
# @portkey-ai/gateway 1.15.2 on Node 20 every stream fails ("TypeError: immutable", HTTP 500), and its
# ollama provider asks fakellm for a route it lacks (404): only non-streamed OpenAI → vLLM is measured.
pk_skip() { [ "$1" = portkey ] && { [ "$2" != vllm ] || [ "$3" = true ]; }; }
# ready_url VARIANT PORT: what answers 2xx once it is up
ready_url() { if [ "$1" = portkey ]; then echo "http://127.0.0.1:$2/"; else echo "http://127.0.0.1:$2/readyz"; fi; }
smoke() { # PORT VARIANT: one request of each kind; false on any non-200
	local m s code ok=0 h hs
	for m in bench-vllm bench-ollama; do
		hs=()
		if [ "$2" = portkey ]; then
			for h in $(pk_headers "${m#bench-}"); do hs+=(-H "$h"); done
		fi
		for s in false true; do
			pk_skip "$2" "${m#bench-}" "$s" && continue
			code=$(curl -s -o "$OUT/logs/smoke-$2-$m-$s.txt" -w '%{http_code}' -m 10 "http://127.0.0.1:$1/v1/chat/completions" \
				-H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' "${hs[@]}" \
				-d "{\"model\":\"$m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":4,\"stream\":$s}") || code=000
			[ "$code" = 200 ] || { problem "variant $2: smoke request model=$m stream=$s -> HTTP $code: $(head -c 300 "$OUT/logs/smoke-$2-$m-$s.txt")"; ok=1; }
		done
	done
	return $ok
}
GWS=()
for v in "${VS[@]}"; do
	[ -n "${GW_PORT[$v]:-}" ] || continue
	start_gw "$v"
	if wait_http "$(ready_url "$v" "${GW_PORT[$v]}")" "${GW_PID[$v]}" && smoke "${GW_PORT[$v]}" "$v"; then
		GWS+=("$v")
	else
		problem "variant $v dropped: gateway not ready or smoke requests failed; last lines of logs/${GW_LOG[$v]}: $(tail -n 5 "$OUT/logs/${GW_LOG[$v]}" | tr '\n' ' ' | cut -c1-600)"
		stop "${GW_PID[$v]}"
	fi
done
[ ${#GWS[@]} -gt 0 ] || { echo "no gateway variant came up"; exit 1; }
echo "$KEY" >"$OUT/conf/key"
echo "variants up: ${GWS[*]}" | tee -a "$OUT/machine.txt"
log "up: fakellm, nginx (workers $NG_WORKERS), gateways: $(for v in "${GWS[@]}"; do printf '%s=%s:%s ' "$v" "${GW_PID[$v]}" "${GW_PORT[$v]}"; done)"

# gw_check VARIANT WHERE: true if that gateway runs; if it died, record how,
# restart it (at most twice) and return false for this one measurement.
gw_check() {
	local v=$1
	kill -0 "${GW_PID[$v]}" 2>/dev/null && return 0
	problem "gateway $v pid ${GW_PID[$v]} found dead before $2: $(exit_desc "${GW_PID[$v]}"); last lines of logs/${GW_LOG[$v]}: $(tail -n 3 "$OUT/logs/${GW_LOG[$v]}" | tr '\n' ' ' | cut -c1-600)"
	if [ "${GW_STARTS[$v]}" -lt 3 ]; then
		start_gw "$v"
		wait_http "$(ready_url "$v" "${GW_PORT[$v]}")" && log "gateway $v restarted as pid ${GW_PID[$v]}" || problem "restarted gateway $v not ready"
	fi
	return 1
}

# target_args BACKEND TARGET STREAM TOKENS: loadgen's --url/--key/--model|--body/--pid for one target.
target_args() {
	local b=$1 t=$2 s=$3 n=$4
	case $t in
	direct | nginx)
		local port
		if [ "$t" = direct ]; then
			[ "$b" = vllm ] && port=$P_VLLM || port=$P_OLLAMA
		else
			[ "$b" = vllm ] && port=$P_NG_VLLM || port=$P_NG_OLLAMA
		fi
		if [ "$b" = vllm ]; then
			echo "--url http://127.0.0.1:$port/v1/chat/completions --model bench-vllm --max-tokens $n"
		else
			echo "--url http://127.0.0.1:$port/api/chat --body $(obody "$s" "$n")"
		fi
		[ "$t" = nginx ] && echo "--pid $NG_WORKERS --clk-tck $CLK"
		;;
	*)
		echo "--url http://127.0.0.1:${GW_PORT[$t]}/v1/chat/completions --key $KEY --model bench-$b --max-tokens $n --pid ${GW_PID[$t]} --clk-tck $CLK"
		if [ "$t" = portkey ]; then
			local h
			for h in $(pk_headers "$b"); do echo "--header $h"; done
		fi
		;;
	esac
	return 0
}

# ---------------------------------------------------------------- 1. latency rounds
scen_args() {
	case $1 in
	1-plain-c1) echo "--concurrency 1" ;;
	2-plain-c64) echo "--concurrency 64" ;;
	3-stream-c1) echo "--concurrency 1 --stream" ;;
	esac
}
NV=${#GWS[@]}
log "latency rounds: $ROUNDS x {vllm,ollama} x {1-plain-c1 2-plain-c64 3-stream-c1} x {direct nginx ${GWS[*]}}, $WARM + $DUR each; load $(load)"
for r in $(seq 1 "$ROUNDS"); do
	# the variants' order rotates each round, so none is always measured right after nginx
	order=()
	for k in $(seq 0 $((NV - 1))); do order+=("${GWS[$(((k + r - 1) % NV))]}"); done
	for b in vllm ollama; do
		for s in 1-plain-c1 2-plain-c64 3-stream-c1; do
			stream=false
			[ "$s" = 3-stream-c1 ] && stream=true
			for t in direct nginx "${order[@]}"; do
				pk_skip "$t" "$b" "$stream" && continue
				if [ "$t" != direct ] && [ "$t" != nginx ]; then gw_check "$t" "round $r $b $s" || continue; fi
				# shellcheck disable=SC2046
				"$LG" $(target_args $b $t $stream 16) $(scen_args $s) \
					--warmup "$WARM" --duration "$DUR" --timeout 10s \
					--target "$t" --scenario "${b:0:1}$s" --round "$r" --out "$OUT/rounds/${b:0:1}$s.$t.r$r.json" \
					>>"$OUT/rounds/loadgen.txt" 2>&1 || problem "loadgen failed: $t $b $s round $r (see rounds/loadgen.txt)"
			done
		done
	done
	log "round $r done (order ${order[*]}; load $(load))"
	echo "round $r: $(uptime)" >>"$OUT/load.txt"
done
if [ "$ROUNDS" -gt 0 ]; then
	"$LG" report --json "$OUT/rounds/summary.json" "$OUT/rounds" >"$OUT/rounds/summary.md" || problem "report failed"
else
	echo '[]' >"$OUT/rounds/summary.json" && : >"$OUT/rounds/summary.md"
fi

# ---------------------------------------------------------------- 2. CPU per streamed chunk
log "CPU per streamed chunk: $CPU_ROUNDS x {ollama vllm} x {nginx ${GWS[*]}} x ($CPU_STREAMS streams x $CPU_TOKENS tokens, and x 10); load $(load)"
cpu_run() { # TARGET BACKEND TOKENS ROUND
	local t=$1 b=$2 n=$3 r=$4 s=true
	pk_skip "$t" "$b" "$s" && return 0
	if [ "$t" != nginx ]; then gw_check "$t" "cpu run $b $n tokens round $r" || return 0; fi
	# shellcheck disable=SC2046
	"$LG" $(target_args "$b" "$t" $s "$n") --stream \
		--concurrency 4 --warmup 0.5s --duration 120s --requests "$CPU_STREAMS" --timeout 30s \
		--target "$t" --scenario "cpu-$b-$n" --out "$OUT/cpu/$t.$b.t$n.r$r.json" >>"$OUT/cpu/loadgen.txt" 2>&1 ||
		problem "loadgen failed: cpu $t $b tokens $n round $r"
}
for r in $(seq 1 "$CPU_ROUNDS"); do
	order=()
	for k in $(seq 0 $((NV - 1))); do order+=("${GWS[$(((k + r - 1) % NV))]}"); done
	for b in ollama vllm; do
		for t in nginx "${order[@]}"; do
			cpu_run "$t" "$b" "$CPU_TOKENS" "$r"
			cpu_run "$t" "$b" 10 "$r"
		done
	done
	echo "cpu round $r: $(uptime)" >>"$OUT/load.txt"
done
for t in nginx "${GWS[@]}"; do
	for b in ollama vllm; do
		for r in $(seq 1 "$CPU_ROUNDS"); do
			L=$OUT/cpu/$t.$b.t$CPU_TOKENS.r$r.json S=$OUT/cpu/$t.$b.t10.r$r.json
			[ -s "$L" ] && [ -s "$S" ] || continue
			jq -n --slurpfile l "$L" --slurpfile s "$S" --arg t "$t" --arg b "$b" --argjson r "$r" '
				($l[0]) as $l | ($s[0]) as $s |
				{target: $t, backend: $b, round: $r, streams: $l.ok, chunks: $l.chunks.sum, chunks_per_stream: $l.chunks.p50,
				 errors: (($l.errors|add // 0) + ($s.errors|add // 0)),
				 cpu_s: $l.proc.cpu_seconds, gross_us_per_chunk: $l.proc.cpu_per_chunk_us,
				 us_per_request_short: $s.proc.cpu_per_request_us,
				 marginal_us_per_chunk: (if ($l.chunks.sum - $s.chunks.sum) > 0
				   then ((($l.proc.cpu_seconds - $s.proc.cpu_seconds) * 1e6 / ($l.chunks.sum - $s.chunks.sum)) * 100 | round / 100)
				   else null end)}'
		done
	done
done | jq -s '.' >"$OUT/cpu/summary.json"

# ---------------------------------------------------------------- 3. many concurrent streams
# Each variant's latency gateway is stopped first (the hold gateways run alone, fresh).
for v in "${GWS[@]}"; do stop "${GW_PID[$v]}"; done
INTERVAL_MS=$((1000 / HOLD_TPS))
hold_run() { # TARGET ROUND
	local t=$1 r=$2 url pid keyarg=() gw=
	case $t in
	direct) url=http://127.0.0.1:$P_SLOW/v1/chat/completions pid=$FK_SLOW ;;
	nginx) url=http://127.0.0.1:$P_NG_SLOW/v1/chat/completions pid=$NG_WORKERS ;;
	*)
		start "gateway-hold-$t.r$r" env ADMIN_API_KEY="$KEY" "$(bin_of "$t")" serve --config "$OUT/conf/gateway-hold-$t.yaml"
		gw=$LAST_PID pid=$LAST_PID url=http://127.0.0.1:${GW_HPORT[$t]}/v1/chat/completions keyarg=(--key "$KEY")
		wait_http "http://127.0.0.1:${GW_HPORT[$t]}/readyz" || { problem "hold gateway $t not ready (logs/gateway-hold-$t.r$r.log)"; stop "$gw"; return 0; }
		;;
	esac
	# Warm (plugin pools, connections) with a few streams, then settle.
	"$LG" --url "$url" "${keyarg[@]}" --model bench-slow --stream --hold-streams 16 --ramp 0s \
		--expect-interval ${INTERVAL_MS}ms --timeout 60s >"$OUT/hold/warm-$t.r$r.txt" 2>&1 || problem "hold warm-up failed: $t"
	sleep 2
	"$LG" --url "$url" "${keyarg[@]}" --model bench-slow --stream --hold-streams "$HOLD_STREAMS" --ramp 2s \
		--expect-interval ${INTERVAL_MS}ms --stall-factor 5 --timeout 120s --pid "$pid" --clk-tck "$CLK" \
		--target "$t" --scenario hold --round "$r" --out "$OUT/hold/$t.r$r.json" >"$OUT/hold/$t.r$r.txt" 2>&1 ||
		problem "loadgen failed: hold $t round $r"
	if [ -n "$gw" ]; then
		kill -0 "$gw" 2>/dev/null || problem "hold gateway $t died: $(exit_desc "$gw")"
		stop "$gw"
	fi
}
log "holding $HOLD_STREAMS streams ($HOLD_TOKENS tokens at $HOLD_TPS tok/s): {${GWS[*]} nginx direct} x $HOLD_ROUNDS; load $(load)"
for r in $(seq 1 "$HOLD_ROUNDS"); do
	for t in "${GWS[@]}" nginx direct; do pk_skip "$t" vllm true || hold_run "$t" "$r"; done
	echo "hold round $r: $(uptime)" >>"$OUT/load.txt"
done
cleanup
PIDS=()
echo "uptime at end: $(uptime)" | tee -a "$OUT/machine.txt"

fi # SUMMARY_ONLY

# ---------------------------------------------------------------- summary
RS=$OUT/rounds/summary.json
CS=$OUT/cpu/summary.json
rv() { # SCENARIO TARGET JQ-PATH (on the row): a figure or "null"
	jq -r --arg s "$1" --arg t "$2" "[.[] | select(.scenario == \$s and .target == \$t) | $3][0] // null" "$RS" 2>/dev/null || echo null
}
cpum() { # TARGET BACKEND FIELD: median over rounds
	jq -r --arg t "$1" --arg b "$2" ".[] | select(.target == \$t and .backend == \$b) | .$3 // empty" "$CS" 2>/dev/null | median
}
procm() { # SCENARIO TARGET FIELD: median over rounds of .proc.FIELD in rounds/*.json
	local f
	for f in "$OUT"/rounds/"$1".$2.r*.json; do if [ -s "$f" ]; then jq -r ".proc.$3 // empty" "$f"; fi; done | median
}
holdm() { # TARGET JQ: median over hold rounds
	local f
	for f in "$OUT"/hold/"$1".r*.json; do if [ -s "$f" ]; then jq -r "$2 // empty" "$f"; fi; done | median
}
us() { [ "$1" = null ] && echo "–" || awk -v v="$1" 'BEGIN { s = (v > 0 ? "+" : ""); if (v >= 10000 || v <= -10000) printf "%s%.1f ms", s, v/1000; else printf "%s%d µs", s, v + (v < 0 ? -0.5 : 0.5) }'; }
abs_us() { [ "$1" = null ] && echo "–" || awk -v v="$1" 'BEGIN { if (v >= 10000) printf "%.1f ms", v/1000; else printf "%d µs", v + 0.5 }'; }
num() { [ "$1" = null ] && echo "–" || awk -v v="$1" 'BEGIN { printf "%.1f", v }'; }
int() { [ "$1" = null ] && echo "–" || awk -v v="$1" 'BEGIN { printf "%d", v + 0.5 }'; }
ratio() { { [ "$1" = null ] || [ "$2" = null ]; } && echo null || awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "null"; else printf "%.2f", a / b }'; }
le() { { [ "$1" = null ] || [ "$2" = null ]; } && echo "n/a" || awk -v a="$1" -v b="$2" 'BEGIN { print (a <= b ? "**met**" : "**not met**") }'; }
ge() { { [ "$1" = null ] || [ "$2" = null ]; } && echo "n/a" || awk -v a="$1" -v b="$2" 'BEGIN { print (a >= b ? "**met**" : "**not met**") }'; }
bname() { [ "$1" = vllm ] && echo "OpenAI → vLLM" || echo "OpenAI → Ollama"; }

tax_table() { # BACKEND
	local b=$1 p=${1:0:1} t cols=(direct nginx "${GWS[@]}")
	echo
	echo "### $(bname "$b") (direct/nginx: the backend's own API; gateway: OpenAI client)"
	echo
	printf '| figure |'; printf ' %s |' "${cols[@]}"; echo
	printf '|---|'; printf -- '---|%.0s' "${cols[@]}"; echo
	printf '| c=1 added p50 |'; for t in "${cols[@]}"; do printf ' %s |' "$(us "$(rv "${p}1-plain-c1" "$t" .added.p50)")"; done; echo
	printf '| c=1 added p99 |'; for t in "${cols[@]}"; do printf ' %s |' "$(us "$(rv "${p}1-plain-c1" "$t" .added.p99)")"; done; echo
	printf '| c=1 added p99 ÷ nginx'"'"'s |'; for t in "${cols[@]}"; do
		case $t in direct | nginx) printf ' – |' ;; *) printf ' %s× |' "$(ratio "$(rv "${p}1-plain-c1" "$t" .added.p99)" "$(rv "${p}1-plain-c1" nginx .added.p99)")" ;; esac
	done; echo
	printf '| c=1 proxy CPU per request |'; for t in "${cols[@]}"; do
		[ "$t" = direct ] && { printf ' – |'; continue; }
		printf ' %s |' "$(abs_us "$(procm "${p}1-plain-c1" "$t" cpu_per_request_us)")"
	done; echo
	local nrps; nrps=$(rv "${p}2-plain-c64" nginx .median.rps)
	printf '| c=64 req/s |'; for t in "${cols[@]}"; do
		local x; x=$(rv "${p}2-plain-c64" "$t" .median.rps)
		case $t in direct | nginx) printf ' %s |' "$(int "$x")" ;; *) printf ' %s (%s %% of nginx) |' "$(int "$x")" "$(int "$(awk -v a="$x" -v b="$nrps" 'BEGIN { if (a == "null" || b == "null" || b == 0) print "null"; else print 100*a/b }')")" ;; esac
	done; echo
	printf '| c=64 p99 |'; for t in "${cols[@]}"; do printf ' %s |' "$(abs_us "$(rv "${p}2-plain-c64" "$t" .median.p99)")"; done; echo
	printf '| streamed c=1 added TTFT p50 |'; for t in "${cols[@]}"; do printf ' %s |' "$(us "$(rv "${p}3-stream-c1" "$t" .added.ttft_p50)")"; done; echo
	printf '| streamed c=1 added TTFT p99 |'; for t in "${cols[@]}"; do printf ' %s |' "$(us "$(rv "${p}3-stream-c1" "$t" .added.ttft_p99)")"; done; echo
	printf '| CPU per chunk, full speed, gross (marginal) |'; for t in "${cols[@]}"; do
		[ "$t" = direct ] && { printf ' – |'; continue; }
		printf ' %s µs (%s) |' "$(num "$(cpum "$t" "$b" gross_us_per_chunk)")" "$(num "$(cpum "$t" "$b" marginal_us_per_chunk)")"
	done; echo
	printf '| CPU per 10-token stream |'; for t in "${cols[@]}"; do
		[ "$t" = direct ] && { printf ' – |'; continue; }
		printf ' %s |' "$(abs_us "$(cpum "$t" "$b" us_per_request_short)")"
	done; echo
	printf '| errors (rounds, cpu) |'; for t in "${cols[@]}"; do
		local e=0 f
		for f in "$OUT"/rounds/"$p"*."$t".r*.json "$OUT"/cpu/"$t"."$b".*.json; do if [ -s "$f" ]; then e=$((e + $(jq '[.errors[]] | add // 0' "$f"))); fi; done
		printf ' %s |' "$e"
	done; echo
}

issue_table() { # the issue-23 table: OpenAI client -> vLLM-flavoured fakellm, non-streamed
	local t x nrps
	nrps=$(rv v2-plain-c64 nginx .median.rps)
	echo
	echo "OpenAI client → vLLM-flavoured fakellm, non-streamed; direct p50 $(abs_us "$(rv v1-plain-c1 direct .median.p50)"); medians of $ROUNDS interleaved rounds"
	echo
	echo "| config | c=1 added p50 | c=1 added p99 | c=64 req/s | share of nginx |"
	echo "|---|---|---|---|---|"
	for t in nginx old off default native clickhouse portkey; do
		[ "$t" = nginx ] || [[ " ${GWS[*]} " == *" $t "* ]] || continue
		x=$(rv v2-plain-c64 "$t" .median.rps)
		printf '| %s | %s | %s | %s | %s %% |\n' "$(issue_name "$t")" "$(us "$(rv v1-plain-c1 "$t" .added.p50)")" "$(us "$(rv v1-plain-c1 "$t" .added.p99)")" \
			"$(int "$x")" "$(int "$(awk -v a="$x" -v b="$nrps" 'BEGIN { if (a == "null" || b == "null" || b == 0) print "null"; else print 100*a/b }')")"
	done
}
issue_name() {
	case $1 in
	off) echo "MindRouter, audit off" ;;
	default) echo "MindRouter, default (embedded audit with content)" ;;
	clickhouse) echo "MindRouter, audit to ClickHouse (local)" ;;
	portkey) echo "Portkey gateway (Node)" ;;
	old) echo "MindRouter at OLD_TREE ($(git -C "$OLD_TREE" rev-parse --short HEAD 2>/dev/null), its default configuration)" ;;
	native) echo "MindRouter, default, first-party plugins compiled in (no WebAssembly)" ;;
	*) echo "$1" ;;
	esac
}

hold_table() {
	local t
	echo
	echo "### $HOLD_STREAMS concurrent streams, OpenAI → vLLM ($HOLD_TOKENS tokens at $HOLD_TPS tok/s; stall = gap > 5 × ${INTERVAL_MS} ms; medians of $HOLD_ROUNDS)"
	echo
	echo "| target | ok / streams | errors | stalls | gap p99 | gap max | TTFT p99 | CPU per chunk | ÷ nginx's | RSS before → peak | per open stream |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|"
	local ng; ng=$(holdm nginx .proc.cpu_per_chunk_us)
	for t in "${GWS[@]}" nginx direct; do
		ls "$OUT"/hold/"$t".r*.json >/dev/null 2>&1 || continue
		local c; c=$(holdm "$t" .proc.cpu_per_chunk_us)
		printf '| %s | %s / %s | %s | %s | %s | %s | %s | %s µs | %s | %s → %s KiB | %s KiB |\n' "$t" \
			"$(int "$(holdm "$t" .ok)")" "$HOLD_STREAMS" "$(int "$(holdm "$t" '(.errors | add // 0)')")" "$(int "$(holdm "$t" .hold.stalls)")" \
			"$(abs_us "$(holdm "$t" .hold.gap.p99_us)")" "$(abs_us "$(holdm "$t" .hold.gap.max_us)")" "$(abs_us "$(holdm "$t" .ttft.p99_us)")" \
			"$(num "$c")" "$(case $t in nginx | direct) echo –;; *) r=$(ratio "$c" "$ng"); [ "$r" = null ] && echo – || echo "${r}×";; esac)" \
			"$(int "$(holdm "$t" .proc.rss_before_kib)")" "$(int "$(holdm "$t" .proc.rss_peak_kib)")" "$(num "$(holdm "$t" .hold.rss_per_stream_kib)")"
	done
}

targets() {
	local b v p x n nat
	nat=
	for v in native native-canon; do [[ " ${GWS[*]} " == *" $v "* ]] && { nat=$v; break; }; done
	for v in "${GWS[@]}"; do
		[ "$v" = old ] && continue
		echo
		echo "**$v**"
		echo
		for b in vllm ollama; do
			p=${b:0:1}
			x=$(rv "${p}1-plain-c1" "$v" .added.p50)
			echo "- $(bname "$b"): c=1 added p50 $(us "$x") ≤ 120 µs: $(le "$x" 120)"
			x=$(rv "${p}1-plain-c1" "$v" .added.p99) n=$(rv "${p}1-plain-c1" nginx .added.p99)
			echo "- $(bname "$b"): c=1 added p99 $(us "$x") ≤ 300 µs: $(le "$x" 300); ≤ 3× nginx's ($(us "$n")): $(ratio "$x" "$n")× $(le "$(ratio "$x" "$n")" 3)"
			x=$(rv "${p}2-plain-c64" "$v" .median.rps) n=$(rv "${p}2-plain-c64" nginx .median.rps)
			local pct; pct=$(awk -v a="$x" -v b="$n" 'BEGIN { if (a == "null" || b == "null" || b == 0) print "null"; else printf "%.1f", 100*a/b }')
			printf -- '- %s: c=64 %s req/s = %s %% of nginx'"'"'s ≥ 50 %%: %s' "$(bname "$b")" "$(int "$x")" "$pct" "$(ge "$pct" 50)"
			if [ -n "$nat" ] && [ "$v" != "$nat" ]; then
				local nr; nr=$(rv "${p}2-plain-c64" "$nat" .median.rps)
				printf '; %s ÷ this = %s× ≤ 1.3×: %s' "$nat" "$(ratio "$nr" "$x")" "$(le "$(ratio "$nr" "$x")" 1.3)"
			fi
			echo
			local lim=5; [ "$b" = vllm ] && lim=3
			x=$(cpum "$v" "$b" gross_us_per_chunk)
			echo "- $(bname "$b"): CPU per streamed chunk $(num "$x") µs gross (marginal $(num "$(cpum "$v" "$b" marginal_us_per_chunk)") µs) ≤ $lim µs: $(le "$x" $lim)"
		done
		if ls "$OUT"/hold/"$v".r*.json >/dev/null 2>&1; then
			x=$(holdm "$v" .proc.cpu_per_chunk_us) n=$(holdm nginx .proc.cpu_per_chunk_us)
			echo "- $HOLD_STREAMS streams at $HOLD_TPS tok/s: CPU per chunk $(num "$x") µs vs nginx $(num "$n") µs = $(ratio "$x" "$n")× ≤ 2.5×: $(le "$(ratio "$x" "$n")" 2.5)"
			x=$(holdm "$v" .hold.stalls)
			echo "- $HOLD_STREAMS streams: $(int "$(holdm "$v" .ok)") completed, $(int "$x") stalls: $(le "$x" 0)"
			x=$(holdm "$v" .hold.rss_per_stream_kib)
			echo "- memory per open stream $(num "$x") KiB ≤ 64 KiB: $(le "$x" 64)"
		fi
	done
}

old_vs_new() {
	local b p
	[[ " ${GWS[*]} " == *" old "* ]] && [[ " ${GWS[*]} " == *" canon "* ]] || { echo; echo "(old or canon not measured)"; return 0; }
	echo
	echo "| figure | backend | old | canon (new) | new − old |"
	echo "|---|---|---|---|---|"
	for b in vllm ollama; do
		p=${b:0:1}
		local f o c
		for f in "c=1 added p50:${p}1-plain-c1:.added.p50" "c=1 added p99:${p}1-plain-c1:.added.p99" \
			"streamed c=1 added TTFT p50:${p}3-stream-c1:.added.ttft_p50" "streamed c=1 added TTFT p99:${p}3-stream-c1:.added.ttft_p99"; do
			IFS=: read -r name sc path <<<"$f"
			o=$(rv "$sc" old "$path") c=$(rv "$sc" canon "$path")
			echo "| $name | $b | $(us "$o") | $(us "$c") | $(us "$(awk -v a="$c" -v b="$o" 'BEGIN { if (a == "null" || b == "null") print "null"; else print a - b }')") |"
		done
		o=$(rv "${p}2-plain-c64" old .median.rps) c=$(rv "${p}2-plain-c64" canon .median.rps)
		echo "| c=64 req/s | $b | $(int "$o") | $(int "$c") | $(ratio "$c" "$o")× |"
		o=$(procm "${p}1-plain-c1" old cpu_per_request_us) c=$(procm "${p}1-plain-c1" canon cpu_per_request_us)
		echo "| CPU per request, c=1 | $b | $(abs_us "$o") | $(abs_us "$c") | $(us "$(awk -v a="$c" -v b="$o" 'BEGIN { if (a == "null" || b == "null") print "null"; else print a - b }')") |"
		o=$(cpum old "$b" gross_us_per_chunk) c=$(cpum canon "$b" gross_us_per_chunk)
		echo "| CPU per streamed chunk, gross | $b | $(num "$o") µs | $(num "$c") µs | $(ratio "$c" "$o")× |"
		o=$(cpum old "$b" marginal_us_per_chunk) c=$(cpum canon "$b" marginal_us_per_chunk)
		echo "| CPU per streamed chunk, marginal | $b | $(num "$o") µs | $(num "$c") µs | $(ratio "$c" "$o")× |"
	done
}

{
	echo "# MindRouter gateway variants, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo
	echo '```'
	cat "$OUT/machine.txt"
	cat "$OUT/load.txt" 2>/dev/null
	echo '```'
	echo
	echo "## The issue-23 table"
	issue_table
	echo
	echo "## Old vs new (same plugin layout: separate openai/vllm/ollama modules)"
	old_vs_new
	echo
	echo "## Variants (medians of $ROUNDS rounds of $WARM + $DUR; added = target − direct, same round; CPU per chunk: $CPU_STREAMS streams × $CPU_TOKENS tokens, median of $CPU_ROUNDS, marginal vs 10-token streams)"
	tax_table vllm
	tax_table ollama
	hold_table
	echo
	echo "## Targets"
	targets
	echo
	echo "## All rows (loadgen report)"
	cat "$OUT/rounds/summary.md"
	if [ -s "$OUT/problems.txt" ]; then
		echo
		echo "## Problems"
		echo
		sed 's/^/- /' "$OUT/problems.txt"
	fi
} >"$OUT/summary.md"
cat "$OUT/summary.md"
log "done in $(($(date +%s) - T0)) s; raw results in $OUT"
