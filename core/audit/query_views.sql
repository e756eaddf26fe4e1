-- MindRouter audit: views for analysts over the requests table
-- (deploy/clickhouse/schema/). The gateway creates them at start
-- (audit.ApplyViews, which qualifies every name with the configured
-- database; core/audit/query_views.sql is a byte-identical copy); by hand:
--   clickhouse-client --database mindrouter --multiquery < views.sql
--
-- Every view reads requests FINAL: the table is a ReplacingMergeTree, and
-- FINAL collapses a row the writer may have stored twice (a batch retried
-- after an unclear failure) before the background merge does. Days and
-- months are UTC. Times in the table are microseconds (*_us); the views
-- give milliseconds (*_ms) where a person reads them.
--
-- A request's row is written when it is admitted and again when it ends
-- (state: started, then finished or panic; interrupted when its gateway
-- was killed before it ended, written by the next start on its spool);
-- FINAL shows the latest. Rows not finished are counted apart
-- (in_flight, interrupted) and left out of latency and stage figures.
--
-- Works on ClickHouse 18.16 (the Debian package) and current releases: no
-- window functions, no WITH, no OR REPLACE. A view changed by an upgrade
-- is re-created by dropping it (DROP TABLE mindrouter.usage_daily) and
-- applying this file again.

-- Usage per day, user, group and model: requests, their outcome, tokens
-- and GPU energy. Sum it over any of its keys for coarser figures.
CREATE VIEW IF NOT EXISTS usage_daily AS
SELECT
    toDate(time) AS day,
    user,
    `group`,
    model,
    count() AS requests,
    countIf(state = 'finished' AND status < 400) AS completed,
    countIf(status >= 400 OR state IN ('interrupted', 'panic')) AS failed,
    countIf(state = 'started') AS in_flight,
    countIf(state = 'interrupted') AS interrupted,
    sum(prompt_tokens) AS prompt,
    sum(completion_tokens) AS completion,
    sum(reasoning_tokens) AS reasoning,
    sum(prompt_tokens + completion_tokens) AS tokens,
    countIf(tokens_estimated = 1) AS estimated,
    sum(energy_j) AS joules
FROM requests FINAL
GROUP BY day, user, `group`, model;

-- Tokens per group and calendar month, with the number of users who spent
-- them and the most any one of them spent. Budgets are per user and per
-- budget period and live in the accounts database (MySQL), which a view
-- cannot read: queries.sql shows how to load them into group_limits and
-- compare (max_user_tokens against token_budget).
CREATE VIEW IF NOT EXISTS group_usage_monthly AS
SELECT
    month,
    `group`,
    count() AS users,
    sum(user_requests) AS requests,
    sum(user_tokens) AS tokens,
    max(user_tokens) AS max_user_tokens
FROM
(
    SELECT
        toStartOfMonth(time) AS month,
        `group`,
        user,
        count() AS user_requests,
        sum(prompt_tokens + completion_tokens) AS user_tokens
    FROM requests FINAL
    GROUP BY month, `group`, user
)
GROUP BY month, `group`;

-- Latency percentiles per day, backend and model, over completed
-- requests: the whole request and, for streams, time to first token.
-- ClickHouse's quantile samples (exact below 8192 values per group).
-- Percentiles do not add up across days: for a longer range run the
-- query in queries.sql over requests directly.
CREATE VIEW IF NOT EXISTS latency_daily AS
SELECT
    toDate(time) AS day,
    backend,
    model,
    count() AS requests,
    quantile(0.5)(total_us / 1000) AS total_p50_ms,
    quantile(0.95)(total_us / 1000) AS total_p95_ms,
    quantile(0.99)(total_us / 1000) AS total_p99_ms,
    quantileIf(0.5)(ttft_us / 1000, stream = 1) AS ttft_p50_ms,
    quantileIf(0.95)(ttft_us / 1000, stream = 1) AS ttft_p95_ms
FROM requests FINAL
WHERE state = 'finished' AND status < 400
GROUP BY day, backend, model;

-- The gateway's own cost per day and endpoint kind: the mean of each
-- pipeline stage (microseconds) and the overhead, the whole request less
-- the wait for a backend slot and the backend's own time.
CREATE VIEW IF NOT EXISTS stage_overhead_daily AS
SELECT
    toDate(time) AS day,
    kind,
    count() AS requests,
    avg(auth_us) AS auth_avg_us,
    avg(limit_us) AS limit_avg_us,
    avg(read_us) AS read_avg_us,
    avg(check_us) AS check_avg_us,
    avg(decode_us) AS decode_avg_us,
    avg(queue_us) AS queue_avg_us,
    avg(encode_us) AS encode_avg_us,
    avg(backend_us) AS backend_avg_us,
    avg(respond_us) AS respond_avg_us,
    avg(toInt64(total_us) - queue_us - backend_us) AS overhead_avg_us,
    quantile(0.99)((toInt64(total_us) - queue_us - backend_us) / 1000) AS overhead_p99_ms
FROM requests FINAL
WHERE state IN ('finished', 'panic')
GROUP BY day, kind;

-- Queue wait and fairness per day and group: the group's share of the
-- day's completed tokens, its wait for a backend slot, and the part of
-- that wait the fair-share order cost it (fairness_delay_us: waiting
-- after a later request was served first; 0 in rows from before that
-- column). The share a
-- group is entitled to is its scheduler weight over the weights of the
-- groups that wanted service at the time; weights live in the accounts
-- database (queries.sql compares them through group_limits).
CREATE VIEW IF NOT EXISTS fairness_daily AS
SELECT
    day,
    `group`,
    requests,
    completed_tokens,
    completed_tokens / day_tokens AS token_share,
    queue_avg_ms,
    queue_p95_ms,
    fairness_delay_p50_ms,
    fairness_delay_p95_ms,
    fairness_delay_p99_ms
FROM
(
    SELECT
        toDate(time) AS day,
        `group`,
        count() AS requests,
        sumIf(prompt_tokens + completion_tokens, state = 'finished' AND status < 400) AS completed_tokens,
        avg(queue_us) / 1000 AS queue_avg_ms,
        quantile(0.95)(queue_us / 1000) AS queue_p95_ms,
        quantile(0.5)(fairness_delay_us / 1000) AS fairness_delay_p50_ms,
        quantile(0.95)(fairness_delay_us / 1000) AS fairness_delay_p95_ms,
        quantile(0.99)(fairness_delay_us / 1000) AS fairness_delay_p99_ms
    FROM requests FINAL
    GROUP BY day, `group`
)
ANY LEFT JOIN
(
    SELECT
        toDate(time) AS day,
        sumIf(prompt_tokens + completion_tokens, state = 'finished' AND status < 400) AS day_tokens
    FROM requests FINAL
    GROUP BY day
) USING day;

-- Error rates per day, model and backend (backend is empty for requests
-- refused before one was chosen).
CREATE VIEW IF NOT EXISTS errors_daily AS
SELECT
    toDate(time) AS day,
    model,
    backend,
    count() AS requests,
    countIf(status >= 400 OR state IN ('interrupted', 'panic')) AS errors,
    countIf(status >= 400 OR state IN ('interrupted', 'panic')) / count() AS error_rate,
    countIf(state = 'interrupted') AS interrupted,
    countIf(status = 429) AS rate_limited,
    countIf(status >= 400 AND status < 500) AS client_errors,
    countIf(status >= 500) AS server_errors,
    countIf(client_gone = 1) AS client_gone
FROM requests FINAL
GROUP BY day, model, backend;

-- Per user and calendar month, for top-N lists (queries.sql).
CREATE VIEW IF NOT EXISTS top_users_monthly AS
SELECT
    toStartOfMonth(time) AS month,
    user,
    `group`,
    count() AS requests,
    sum(prompt_tokens + completion_tokens) AS tokens,
    sum(energy_j) AS joules
FROM requests FINAL
GROUP BY month, user, `group`;

-- GPU energy per day and user: joules (estimated from the nodes' power
-- readings; 0 where a node reports none, so measured says how many
-- requests the figure covers) and joules per thousand tokens.
CREATE VIEW IF NOT EXISTS energy_daily AS
SELECT
    toDate(time) AS day,
    user,
    `group`,
    count() AS requests,
    countIf(energy_j > 0) AS measured,
    sum(energy_j) AS joules,
    sumIf(prompt_tokens + completion_tokens, energy_j > 0) AS measured_tokens,
    if(measured_tokens > 0, joules * 1000 / measured_tokens, 0) AS joules_per_1k_tokens
FROM requests FINAL
GROUP BY day, user, `group`;
