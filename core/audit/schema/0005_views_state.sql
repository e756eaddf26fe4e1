-- MindRouter audit: the analysts' views (views.sql) that count requests
-- by outcome learned the row state (0004_state.sql): a started or
-- interrupted row is neither completed nor in the latency figures. The
-- gateway creates missing views after migrating (audit.ApplyViews), so
-- dropping the old definitions here has them re-created from the new.
DROP TABLE IF EXISTS mindrouter.usage_daily;
DROP TABLE IF EXISTS mindrouter.latency_daily;
DROP TABLE IF EXISTS mindrouter.stage_overhead_daily;
DROP TABLE IF EXISTS mindrouter.fairness_daily;
DROP TABLE IF EXISTS mindrouter.errors_daily;
