#!/bin/sh
# The tests built only without the race detector (files tagged
# //go:build !race: allocation budgets, wasm parity, timing under load).
# Every other test runs once, under -race; these run once, without it.
#
#   .ci/norace-tests.sh                  prints `DIR REGEX` per package
#   .ci/norace-tests.sh run GO FLAGS...  runs them: go test -json, for gotestsum
set -eu
cd "$(dirname "$0")/.."
list() {
	git ls-files -co --exclude-standard '*_test.go' | while read -r f; do
		head -n 3 "$f" | grep -q '^//go:build .*!race' || continue
		for n in $(grep -oE '^func (Test|Fuzz)[A-Za-z0-9_]+' "$f" | sed 's/^func //'); do
			echo "$(dirname "$f") $n"
		done
	done | sort | awk '
		$1 != dir { if (dir != "") print dir, "^(" re ")$"; dir = $1; re = $2; next }
		{ re = re "|" $2 }
		END { if (dir != "") print dir, "^(" re ")$" }'
}
[ "${1:-}" = run ] || { list; exit 0; }
shift
GO=$1
shift
st=0
list > "${TMPDIR:-/tmp}/norace.$$"
while read -r dir re; do
	case $dir in
	sdk) "$GO" -C sdk test -json "$@" -run "$re" . || st=1 ;;
	sdk/*) "$GO" -C sdk test -json "$@" -run "$re" "./${dir#sdk/}" || st=1 ;;
	*) "$GO" test -json "$@" -run "$re" "./$dir" || st=1 ;;
	esac
done < "${TMPDIR:-/tmp}/norace.$$"
rm -f "${TMPDIR:-/tmp}/norace.$$"
exit $st
