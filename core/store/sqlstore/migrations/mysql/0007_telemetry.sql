-- 0007: telemetry history (core/telemetry), when the audit does not write
-- to ClickHouse: one row per GPU per sidecar poll and one per backend per
-- discovery round and replica; at is Unix seconds. The gateway deletes
-- rows older than telemetry.retention hourly. A figure a GPU did not
-- report is NULL. Keep it equivalent to migrations/sqlite/0007_telemetry.sql.
-- Re-runnable (MySQL DDL is not transactional): indexes are created with
-- their tables.

CREATE TABLE IF NOT EXISTS telemetry_gpus (
  at        BIGINT       NOT NULL,
  node      VARCHAR(190) NOT NULL,
  gpu       INT          NOT NULL,
  name      VARCHAR(255) NOT NULL,
  util_pct  DOUBLE       NULL,
  mem_used  DOUBLE       NULL,
  mem_total DOUBLE       NULL,
  temp_c    DOUBLE       NULL,
  power_w   DOUBLE       NULL,
  KEY telemetry_gpus_node_at (node, at),
  KEY telemetry_gpus_at (at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE IF NOT EXISTS telemetry_backends (
  at             BIGINT       NOT NULL,
  replica        VARCHAR(190) NOT NULL,
  backend        VARCHAR(190) NOT NULL,
  healthy        TINYINT      NOT NULL,
  state          VARCHAR(32)  NOT NULL,
  breaker        VARCHAR(32)  NOT NULL,
  in_flight      BIGINT       NOT NULL,
  max_concurrent INT          NOT NULL,
  waiting        BIGINT       NOT NULL,
  latency_ms     DOUBLE       NOT NULL,
  KEY telemetry_backends_backend_at (backend, at),
  KEY telemetry_backends_at (at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
