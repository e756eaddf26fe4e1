#!/usr/bin/env bash
# gpu-check.sh: run the built sidecar on a real GPU machine and capture its
# answers as fixtures for sidecar/wire/testdata/recorded/.
#
# Usage (from the repository root, binary built beforehand with cgo):
#   CGO_ENABLED=1 CGO_CFLAGS=-Wno-deprecated-declarations \
#     go build -o bin/mindrouter-sidecar ./sidecar/cmd/mindrouter-sidecar
#   OUT=/tmp/out sidecar/scripts/gpu-check.sh [path/to/mindrouter-sidecar]
#
# Writes to $OUT:
#   $PREFIX-health.json     GET /health         (PREFIX defaults to h200)
#   $PREFIX-gpu-info.json   GET /gpu-info, hostname replaced by "gpu-node"
#   $PREFIX-metrics.txt     GET /metrics
#   status.txt              HTTP codes, including the 401 checks
#   timing.txt              100 sequential /gpu-info requests (cache off)
#   nvidia-smi.csv          nvidia-smi's view, to cross-check values
#   sidecar.log             the sidecar's JSON log (the key is never logged)
# Copy the three $PREFIX-* files to sidecar/wire/testdata/recorded/ and run
# `go test ./sidecar/server -run TestRecordedFixture`.
set -euo pipefail

BIN=${1:-bin/mindrouter-sidecar}
OUT=${OUT:?set OUT to a directory for the results}
PORT=${PORT:-18007}
PREFIX=${PREFIX:-h200}
KEY="gpu-check-$$-$RANDOM$RANDOM"
BASE="http://127.0.0.1:$PORT"

mkdir -p "$OUT"
if [[ ! -x $BIN ]]; then
	echo "gpu-check: no executable at $BIN; build it first (see the header of this script)" >&2
	exit 2
fi

# Start the sidecar; the overall timeout guarantees it never outlives us.
SIDECAR_SECRET_KEY=$KEY timeout 180 "$BIN" --addr "127.0.0.1:$PORT" --log-level debug \
	2>"$OUT/sidecar.log" &
PID=$!
cleanup() {
	if kill -0 "$PID" 2>/dev/null; then
		kill -TERM "$PID" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$PID" 2>/dev/null || true
	fi
}
trap cleanup EXIT

ready=0
for _ in $(seq 100); do
	if curl -s -o /dev/null --max-time 1 "$BASE/health"; then ready=1; break; fi
	sleep 0.1
done
if [[ $ready != 1 ]]; then
	echo "gpu-check: sidecar did not start; log:" >&2
	cat "$OUT/sidecar.log" >&2
	exit 1
fi

get() { # get PATH FILE [KEY] -> prints the HTTP status
	curl -sS --max-time 10 -H "X-Sidecar-Key: ${3-$KEY}" -o "$2" -w '%{http_code}' "$BASE$1"
}

{
	echo "health $(get /health "$OUT/$PREFIX-health.json")"
	echo "gpu-info $(get /gpu-info "$OUT/$PREFIX-gpu-info.raw.json")"
	echo "metrics $(get /metrics "$OUT/$PREFIX-metrics.txt")"
	echo "health-without-key $(curl -sS --max-time 10 -o /dev/null -w '%{http_code}' "$BASE/health")"
	echo "gpu-info-wrong-key $(get /gpu-info /dev/null wrong-key)"
} | tee "$OUT/status.txt"

sed -E 's/"hostname":"[^"]*"/"hostname":"gpu-node"/' "$OUT/$PREFIX-gpu-info.raw.json" >"$OUT/$PREFIX-gpu-info.json"
rm -f "$OUT/$PREFIX-gpu-info.raw.json"

# Cost of fresh readings: a second sidecar with the cache off (--cache -1ns)
# answers 100 sequential /gpu-info requests (includes curl start-up time).
SIDECAR_SECRET_KEY=$KEY timeout 60 "$BIN" --addr "127.0.0.1:$((PORT + 1))" --cache -1ns 2>>"$OUT/sidecar.log" &
PID2=$!
for _ in $(seq 100); do curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$((PORT + 1))/health" && break; sleep 0.1; done
start=$(date +%s%N)
for _ in $(seq 100); do
	curl -s -o /dev/null --max-time 5 -H "X-Sidecar-Key: $KEY" "http://127.0.0.1:$((PORT + 1))/gpu-info"
done
end=$(date +%s%N)
kill -TERM "$PID2" 2>/dev/null || true
wait "$PID2" 2>/dev/null || true
echo "100 uncached /gpu-info requests over HTTP: $(((end - start) / 1000000)) ms" | tee "$OUT/timing.txt"

if command -v nvidia-smi >/dev/null; then
	timeout 20 nvidia-smi --format=csv --query-gpu=index,name,uuid,pci.bus_id,driver_version,memory.total,memory.used,utilization.gpu,temperature.gpu,power.draw,power.limit,fan.speed,clocks.sm,clocks.mem,mig.mode.current \
		>"$OUT/nvidia-smi.csv" 2>&1 || true
fi

# Graceful stop: SIGTERM must end the sidecar with status 0.
kill -TERM "$PID"
rc=0
wait "$PID" || rc=$?
echo "sidecar exit status after SIGTERM: $rc" | tee -a "$OUT/status.txt"
if grep -q "$KEY" "$OUT/sidecar.log"; then
	echo "gpu-check: the key appears in the log" | tee -a "$OUT/status.txt" >&2
	exit 1
fi
grep -q '^health 200$' "$OUT/status.txt"
