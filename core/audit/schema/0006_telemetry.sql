-- MindRouter telemetry history (core/telemetry): one row per GPU per
-- sidecar poll and one per backend per discovery round and replica,
-- written once per discovery interval. Old rows are deleted by the
-- gateway (ALTER TABLE … DELETE WHERE at < now() - telemetry.retention,
-- hourly); partitions are days, so dropping a day by hand is cheap:
--   ALTER TABLE mindrouter.telemetry_gpus DROP PARTITION 20260310
-- A figure a GPU did not report is NULL.
CREATE TABLE IF NOT EXISTS mindrouter.telemetry_gpus (
    at        DateTime('UTC'),
    node      String,
    gpu       UInt16,
    name      String,
    util_pct  Nullable(Float64),
    mem_used  Nullable(Float64),
    mem_total Nullable(Float64),
    temp_c    Nullable(Float64),
    power_w   Nullable(Float64)
) ENGINE = MergeTree()
PARTITION BY toYYYYMMDD(at)
ORDER BY (node, gpu, at);

CREATE TABLE IF NOT EXISTS mindrouter.telemetry_backends (
    at             DateTime('UTC'),
    replica        String,
    backend        String,
    healthy        UInt8,
    state          String,
    breaker        String,
    in_flight      Int64,
    max_concurrent Int64,
    waiting        Int64,
    latency_ms     Float64
) ENGINE = MergeTree()
PARTITION BY toYYYYMMDD(at)
ORDER BY (backend, at);
