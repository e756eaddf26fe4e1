// Package sqlstore implements store.Store over database/sql for two
// dialects: MySQL/MariaDB (go-sql-driver/mysql), the production store
// shared by every replica, and SQLite (modernc.org/sqlite, pure Go, so
// the gateway still builds with CGO_ENABLED=0), the embedded store of
// `make run`. Both pass storetest.Run.
//
// # Tables
//
//   - schema_migrations: the versions applied (Migrate, Version).
//   - user_groups: groups and their default limits ("groups" is reserved
//     in MySQL 8). Unique name.
//   - users: accounts; group_id → user_groups (a group with users cannot
//     be deleted: ErrConflict). Null override columns mean "the group's".
//   - api_keys: credentials, never the key: hash is the SHA-256 of an
//     issued key (unique), argon2 the PHC string of an imported one;
//     prefix is indexed for the imported keys' lookup. user_id → users ON
//     DELETE CASCADE.
//   - user_usage: one row of token counters per user ("usage" is reserved
//     in MySQL); user_id → users ON DELETE CASCADE.
//   - nodes, backends: unique names; backends.node_id → nodes (a node
//     with backends cannot be deleted: ErrConflict). models and
//     gpu_indices are JSON arrays in TEXT.
//   - admin_events: the admin audit log, read newest first.
//   - stored_responses, conversations, conversation_items (migration
//     0002, store.ResponseStore): the OpenAI Responses and Conversations
//     state, keyed by owner and id; JSON in TEXT (LONGTEXT in MySQL).
//     response_blobs holds large data (images) once by SHA-256, and
//     response_blob_refs / conversation_blob_refs who refers to each
//     (cascading with their owner row); DeleteExpired drops untouched
//     state and the blobs nothing refers to.
//
// # Dialects
//
// Migrations are embedded per dialect (migrations/mysql, migrations/sqlite,
// NNNN_what.sql, kept equivalent). Times are written by this package as
// fixed-width UTC text with microseconds: DATETIME(6) in MySQL, TEXT in
// SQLite, where the fixed width makes text order time order. Text in MySQL
// is utf8mb4_bin so that names compare byte for byte as in SQLite, except
// usernames: since migration 0003 they are unique and looked up ignoring
// case ("Alice" is "alice": utf8mb4_general_ci in MySQL, a NOCASE unique
// index in SQLite, which folds ASCII letters only). Upserts use ON
// DUPLICATE KEY UPDATE in MySQL and ON CONFLICT … DO UPDATE in SQLite.
// Migrate excludes concurrent migrators with GET_LOCK in MySQL (whose DDL
// is not transactional, so every migration is re-runnable) and with one
// IMMEDIATE transaction in SQLite. A SQLite ":memory:" database lives in
// one connection that every call shares.
//
// Errors wrap store.ErrNotFound for a missing row and store.ErrConflict
// for a unique or foreign-key violation, with what was being done.
//
// # Seeded groups
//
// SeedGroups creates these when no group exists (DefaultGroups); a zero
// limit is unlimited, the budget period is 30 days for all:
//
//	group        tokens/period  RPM  concurrent  weight  key expiry  max keys
//	students           100,000   30           2       1     90 days        16
//	staff              500,000   60           4       2     90 days        16
//	faculty          1,000,000   60           4       3     90 days        16
//	researchers      5,000,000  120           8       4     90 days        16
//	admin            unlimited    —           —       4       never         —   (IsAdmin)
//	auditor            100,000   30           2       1     90 days         4   (IsAuditor)
package sqlstore
