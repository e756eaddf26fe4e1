-- MindRouter audit: example queries, one per question an analyst asks,
-- over the views of views.sql and the requests table. Run them with
--   clickhouse-client --database mindrouter --multiquery < queries.sql
-- or paste one. The dates are examples: March 2026. A test
-- (core/audit/query_views_test.go) runs every query here, by its name
-- line, against generated events and checks the answers.
--
-- The requests table can hold a row twice until ClickHouse merges it
-- away (a batch retried after an unclear failure), and holds two rows for
-- a request that was admitted in one batch and finished in a later one
-- (state started, then finished): read it with FINAL, as the views do,
-- and FINAL shows the latest. Rows whose state is not finished were
-- never completed: in flight (started), interrupted, panic.

-- name: unfinished
-- Requests of March 2026 the gateway never finished: admitted (the row
-- written before the backend call), then the gateway was killed
-- (interrupted), or the handler panicked; started rows are in flight or
-- their gateway has not been restarted on its spool since.
SELECT state, replica, count() AS requests, min(time) AS first, max(time) AS last
FROM requests FINAL
WHERE state != 'finished' AND time >= toDateTime('2026-03-01 00:00:00') AND time < toDateTime('2026-04-01 00:00:00')
GROUP BY state, replica
ORDER BY state, replica;

-- name: usage_per_user
-- Tokens and requests per user in March 2026, most tokens first.
SELECT user, `group`, sum(requests) AS total_requests, sum(failed) AS total_failed, sum(tokens) AS total_tokens
FROM usage_daily
WHERE day >= toDate('2026-03-01') AND day < toDate('2026-04-01')
GROUP BY user, `group`
ORDER BY total_tokens DESC, user;

-- name: usage_per_model_day
-- Requests and tokens per model and day.
SELECT day, model, sum(requests) AS total_requests, sum(tokens) AS total_tokens
FROM usage_daily
WHERE day >= toDate('2026-03-01') AND day < toDate('2026-04-01')
GROUP BY day, model
ORDER BY day, model;

-- name: group_limits_table
-- Budgets and scheduler weights live in the accounts database (MySQL or
-- the embedded SQLite file, table user_groups), which ClickHouse cannot
-- see from a view. Copy them into ClickHouse when they change:
--   mysql -N -e 'SELECT name, token_budget, budget_period_days, weight FROM user_groups' mindrouter |
--     clickhouse-client --database mindrouter -q 'INSERT INTO group_limits FORMAT TabSeparated'
-- (empty the table first: TRUNCATE TABLE exists from 20.x; before that
-- DROP and create it again). From ClickHouse 19.x a MySQL dictionary or
-- the mysql() table function can read user_groups live instead.
CREATE TABLE IF NOT EXISTS group_limits (
    `group` String,
    token_budget UInt64,
    budget_period_days UInt32,
    weight Float64
) ENGINE = TinyLog;

-- name: group_budget
-- Tokens per group against budget, March 2026. A budget is per user and
-- per budget period (0: unlimited); the period is anchored per user, so a
-- calendar month matches it only roughly (exactly for 30-day periods
-- anchored on the 1st, in a 30-day month). max_user_fraction near 1 means
-- some member ran out; group_fraction is the group's use of what all its
-- active members together could have spent.
SELECT
    `group`,
    users,
    tokens,
    max_user_tokens,
    token_budget,
    if(token_budget > 0, max_user_tokens / token_budget, 0) AS max_user_fraction,
    if(token_budget > 0, tokens / (users * token_budget), 0) AS group_fraction
FROM group_usage_monthly
ANY LEFT JOIN group_limits USING `group`
WHERE month = toDate('2026-03-01')
ORDER BY `group`;

-- name: latency_per_backend_model
-- Latency percentiles (ms) per backend and model over March 2026, from
-- the table (percentiles of days do not combine into a month's).
SELECT
    backend,
    model,
    count() AS requests,
    quantiles(0.5, 0.95, 0.99)(total_us / 1000) AS total_ms,
    quantilesIf(0.5, 0.95)(ttft_us / 1000, stream = 1) AS ttft_ms
FROM requests FINAL
WHERE state = 'finished' AND status < 400 AND time >= toDateTime('2026-03-01 00:00:00') AND time < toDateTime('2026-04-01 00:00:00')
GROUP BY backend, model
ORDER BY backend, model;

-- name: gateway_overhead
-- The gateway's own time per request and endpoint kind over March 2026:
-- mean of every stage and of the overhead (total less queue and backend).
SELECT
    kind,
    sum(requests) AS total_requests,
    sum(auth_avg_us * requests) / total_requests AS auth_us,
    sum(decode_avg_us * requests) / total_requests AS decode_us,
    sum(encode_avg_us * requests) / total_requests AS encode_us,
    sum(queue_avg_us * requests) / total_requests AS queue_us,
    sum(overhead_avg_us * requests) / total_requests AS overhead_us
FROM stage_overhead_daily
WHERE day >= toDate('2026-03-01') AND day < toDate('2026-04-01')
GROUP BY kind
ORDER BY kind;

-- name: fairness
-- Share of each day's completed tokens per group against its
-- weight-proportional share among the groups active that day, with the
-- queue wait. Weighted fair sharing owes a group its weight's share only
-- while it has requests waiting; a group that asked for little is
-- rightly below its entitlement, so read a shortfall together with
-- queue_p95_ms (long waits and a low share: unfair; short waits: no demand).
SELECT
    day,
    `group`,
    token_share,
    weight / day_weight AS entitled_share,
    queue_avg_ms,
    queue_p95_ms
FROM
(
    SELECT day, `group`, token_share, queue_avg_ms, queue_p95_ms, weight
    FROM fairness_daily
    ANY LEFT JOIN group_limits USING `group`
)
ANY LEFT JOIN
(
    SELECT day, sum(weight) AS day_weight
    FROM fairness_daily
    ANY LEFT JOIN group_limits USING `group`
    GROUP BY day
) USING day
ORDER BY day, `group`;

-- name: error_rates
-- Error rate per model over March 2026, worst first.
SELECT
    model,
    sum(requests) AS total_requests,
    sum(errors) AS total_errors,
    total_errors / total_requests AS error_rate,
    sum(rate_limited) AS total_rate_limited,
    sum(server_errors) AS total_server_errors
FROM errors_daily
WHERE day >= toDate('2026-03-01') AND day < toDate('2026-04-01')
GROUP BY model
ORDER BY error_rate DESC, model;

-- name: top_users
-- The five users who spent the most tokens in March 2026.
SELECT user, `group`, requests, tokens, joules
FROM top_users_monthly
WHERE month = toDate('2026-03-01')
ORDER BY tokens DESC, user
LIMIT 5;

-- name: energy_per_user
-- GPU energy per user over March 2026 (joules; measured: requests whose
-- node reported power).
SELECT
    user,
    sum(joules) AS total_joules,
    sum(measured) AS total_measured,
    sum(measured_tokens) AS total_measured_tokens,
    sum(requests) AS total_requests,
    if(total_measured_tokens > 0, total_joules * 1000 / total_measured_tokens, 0) AS joules_per_1k_tokens
FROM energy_daily
WHERE day >= toDate('2026-03-01') AND day < toDate('2026-04-01')
GROUP BY user
ORDER BY total_joules DESC, user;

-- name: one_request
-- One request in full, by the id the client saw in X-Request-ID.
SELECT *
FROM requests FINAL
WHERE request_id = 'req-000042';
