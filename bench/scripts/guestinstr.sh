#!/usr/bin/env bash
# guestinstr.sh TESTBIN PATTERN: instructions a call of a plugins/bundle
# benchmark under callgrind, load-independent: N=100 and N=400 calls, the
# difference divided by 300 (start-up cancels; N1 and N2 change the counts). TESTBIN: go test -c -o
# TESTBIN ./plugins/bundle. WASMDIR: the directory with bundle.wasm
# (default: plugins/). GOGC=off: the host's own collections otherwise move
# the counts by ±10 %. See bench/README.md, "Guest instructions".
set -euo pipefail
B=$1 PAT=$2
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=${WASMDIR:-$ROOT/plugins}
cd "$ROOT/plugins/bundle"
# The first run compiles the .wasm into the shared cache, outside valgrind.
MINDROUTER_TEST_WASM=$W "$B" -test.run '^$' -test.bench "$PAT" -test.benchtime 10x >/dev/null 2>&1
for n in ${N1:-100} ${N2:-400}; do
	MINDROUTER_TEST_WASM=$W GOGC=off GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 valgrind --tool=callgrind \
		--callgrind-out-file=/dev/null "$B" -test.run '^$' -test.bench "$PAT" -test.benchtime ${n}x 2>&1 |
		awk '/Collected/ {print $4}'
done | paste -sd' ' | awk -v k=$((${N2:-400} - ${N1:-100})) '{printf "%.0f instructions/call\n", ($2-$1)/k}'
