-- MindRouter audit: one row per request (core/audit.Event, columns in
-- audit.Columns order). The gateway applies this file itself
-- (audit.MigrateClickHouse, with mindrouter replaced by the configured
-- database); deploy/clickhouse/schema/ holds the same file for review and
-- for applying by hand (clickhouse-client --multiquery < 0001_requests.sql).
--
-- time is DateTime64(6): microseconds. ClickHouse releases before 20.1
-- (the Debian package, 18.16) have no DateTime64; there the migration
-- creates time as DateTime (whole seconds) and nothing else changes.
--
-- Partitions are months: retention drops whole partitions, e.g.
--   ALTER TABLE mindrouter.requests DROP PARTITION 202601
-- (releases from 19.6 may add TTL time + INTERVAL 13 MONTH instead).
--
-- Sorted by (user, time, request_id): per-user queries read a range of
-- the primary key, per-model and per-day queries prune by partition.
--
-- Idempotency: the writer never retries blind. When a batch's fate is
-- unknown (an error after sending, or the first batch after a crash) it
-- first asks which of the batch's request ids are already stored and
-- sends only the others. ReplacingMergeTree on the sorting key is the
-- second guard: an identical row that slipped through anyway (a server
-- that finished an insert after the client gave up on it) collapses at
-- the next merge, and SELECT ... FINAL never shows it twice.
CREATE DATABASE IF NOT EXISTS mindrouter;

CREATE TABLE IF NOT EXISTS mindrouter.requests (
    request_id        String,
    time              DateTime64(6, 'UTC'),
    replica           String,
    user_id           Int64,
    user              String,
    `group`           String,
    key_id            String,
    client_ip         String,
    user_agent        String,
    dialect           String,
    route             String,
    kind              String,
    model             String,
    stream            UInt8,
    backend           String,
    node              String,
    gpus              String,
    attempts          UInt8,
    status            UInt16,
    error_code        String,
    error             String,
    finish_reason     String,
    client_gone       UInt8,
    prompt_tokens     UInt32,
    completion_tokens UInt32,
    reasoning_tokens  UInt32,
    cached_tokens     UInt32,
    tokens_estimated  UInt8,
    total_us          UInt32,
    auth_us           UInt32,
    limit_us          UInt32,
    read_us           UInt32,
    check_us          UInt32,
    decode_us         UInt32,
    queue_us          UInt32,
    encode_us         UInt32,
    backend_us        UInt32,
    respond_us        UInt32,
    ttft_us           UInt32,
    chunks            UInt32,
    bytes_in          UInt64,
    bytes_out         UInt64,
    request_body      String,
    response_body     String,
    content_truncated UInt8,
    decision          String,
    energy_j          Float64
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(time)
ORDER BY (user, time, request_id);
