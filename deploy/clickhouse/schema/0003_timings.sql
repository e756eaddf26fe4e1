-- MindRouter audit: two timings split out of wider stages.
--   fairness_delay_us: the part of queue_us the fair-share order cost the
--     request (sched.Decision's fairness wait; 0 when the scheduler
--     recorded no decision).
--   stream_plugin_us: the part of a stream's respond_us spent in plugin
--     calls (adapter decode, translator encode); the rest is framing and
--     client writes. 0 when not a stream.
-- Rows written before this migration read 0 in both.
-- IF NOT EXISTS: two gateways may race to apply it. ClickHouse 18.16 lacks
-- it: the gateway (audit.MigrateClickHouse) checks system.columns first
-- there; by hand on 18.16, drop "IF NOT EXISTS".
ALTER TABLE mindrouter.requests ADD COLUMN IF NOT EXISTS fairness_delay_us UInt32 DEFAULT 0 AFTER ttft_us;
ALTER TABLE mindrouter.requests ADD COLUMN IF NOT EXISTS stream_plugin_us UInt32 DEFAULT 0 AFTER fairness_delay_us;
