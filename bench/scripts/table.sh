#!/usr/bin/env bash
# Issue 23's table in one run: direct, nginx, MindRouter with the audit off, with every default
# (embedded audit with content) and with the audit to a local ClickHouse, and Portkey's gateway
# (npm, Node), in interleaved rounds (tax.sh with those variants); summary.md starts with the table.
#
#   bench/scripts/table.sh [OUTDIR]      # knobs as tax.sh; VARIANTS to choose fewer
set -euo pipefail
export VARIANTS=${VARIANTS:-off default clickhouse portkey}
exec "$(dirname "$0")/tax.sh" "$@"
