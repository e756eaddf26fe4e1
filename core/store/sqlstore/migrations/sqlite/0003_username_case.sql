-- 0003: usernames are unique and looked up ignoring (ASCII) case;
-- equivalent to migrations/mysql/0003_username_case.sql. Fails, changing
-- nothing, if two existing usernames differ only in case. Re-runnable.

CREATE UNIQUE INDEX IF NOT EXISTS uq_users_username_nocase ON users (username COLLATE NOCASE);
