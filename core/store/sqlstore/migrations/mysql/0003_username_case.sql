-- 0003: usernames are unique and looked up ignoring case ("Alice" is
-- "alice"), as people and directory services expect. Keep it equivalent
-- to migrations/sqlite/0003_username_case.sql (SQLite folds ASCII letters
-- only; MySQL's general collation folds others too). Fails, changing
-- nothing, if two existing usernames differ only in case: rename one
-- and run `mindrouter migrate` again. Re-runnable.

ALTER TABLE users MODIFY username VARCHAR(190) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NOT NULL;
