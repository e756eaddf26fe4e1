// Package telemetry keeps the history of the fleet's readings: each GPU's
// utilisation, memory, temperature and power from the node sidecars, and
// each backend's health, requests in flight against its max_concurrent,
// waiters and latency average, sampled once per discovery round (the
// discovery interval) and kept for telemetry.retention (default 7 days).
//
// Without history the admin API only knows the last sidecar reading and
// the live counters; the console's cluster page draws these series.
//
// Storage: ClickHouse when the audit writes there (tables telemetry_gpus
// and telemetry_backends, created by audit.MigrateClickHouse from
// schema/0006_telemetry.sql, pruned by ALTER TABLE … DELETE), else the
// accounts store (SQLite or MySQL/MariaDB, migration 0007_telemetry,
// pruned by DELETE). Every replica writes its own samples: the backend
// series carry the replica, since in-flight counts are per replica unless
// the fleet scheduler shares slots; GPU readings are the same from every
// replica and a query averages them into its step.
//
// Reads bucket the samples into steps (at least the sampling interval)
// and average each figure over its bucket, so a week fits in a chart of a
// few hundred points; a figure a GPU did not report is null, not zero.
package telemetry
