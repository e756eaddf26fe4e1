-- 0007: telemetry history (core/telemetry), when the audit does not write
-- to ClickHouse: one row per GPU per sidecar poll and one per backend per
-- discovery round and replica; at is Unix seconds. The gateway deletes
-- rows older than telemetry.retention hourly. A figure a GPU did not
-- report is NULL. Keep it equivalent to migrations/mysql/0007_telemetry.sql.

CREATE TABLE IF NOT EXISTS telemetry_gpus (
  at        INTEGER NOT NULL,
  node      TEXT    NOT NULL,
  gpu       INTEGER NOT NULL,
  name      TEXT    NOT NULL,
  util_pct  REAL,
  mem_used  REAL,
  mem_total REAL,
  temp_c    REAL,
  power_w   REAL
);

CREATE INDEX IF NOT EXISTS telemetry_gpus_node_at ON telemetry_gpus (node, at);

CREATE INDEX IF NOT EXISTS telemetry_gpus_at ON telemetry_gpus (at);

CREATE TABLE IF NOT EXISTS telemetry_backends (
  at             INTEGER NOT NULL,
  replica        TEXT    NOT NULL,
  backend        TEXT    NOT NULL,
  healthy        INTEGER NOT NULL,
  state          TEXT    NOT NULL,
  breaker        TEXT    NOT NULL,
  in_flight      INTEGER NOT NULL,
  max_concurrent INTEGER NOT NULL,
  waiting        INTEGER NOT NULL,
  latency_ms     REAL    NOT NULL
);

CREATE INDEX IF NOT EXISTS telemetry_backends_backend_at ON telemetry_backends (backend, at);

CREATE INDEX IF NOT EXISTS telemetry_backends_at ON telemetry_backends (at);
