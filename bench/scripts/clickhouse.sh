#!/usr/bin/env bash
# A throwaway ClickHouse server for the benchmarks: loopback only, one native port, data in DIR
# (the same minimal configuration as core/internal/testsvc). Runs in the foreground.
#
#   bench/scripts/clickhouse.sh DIR PORT
set -euo pipefail
DIR=$1 PORT=$2
BIN=$(command -v clickhouse-server || true)
[ -n "$BIN" ] || [ ! -x /usr/sbin/clickhouse-server ] || BIN=/usr/sbin/clickhouse-server
[ -n "$BIN" ] || { echo "clickhouse-server not installed (deploy/scripts/test-services.sh installs it)" >&2; exit 1; }
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
cat >"$DIR/config.xml" <<EOF
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$DIR/server.log</log><errorlog>$DIR/server.err.log</errorlog><size>10M</size><count>1</count></logger>
  <listen_host>127.0.0.1</listen_host>
  <tcp_port>$PORT</tcp_port>
  <path>$DIR/data/</path>
  <tmp_path>$DIR/tmp/</tmp_path>
  <user_files_path>$DIR/user_files/</user_files_path>
  <format_schema_path>$DIR/format_schemas/</format_schema_path>
  <users_config>users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <mark_cache_size>67108864</mark_cache_size>
  <uncompressed_cache_size>67108864</uncompressed_cache_size>
  <mlock_executable>false</mlock_executable>
</yandex>
EOF
cat >"$DIR/users.xml" <<'EOF'
<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval></default></quotas>
</yandex>
EOF
cd "$DIR"
exec "$BIN" --config-file="$DIR/config.xml"
