ALTER TABLE users DROP COLUMN must_change_password;
ALTER TABLE users DROP COLUMN disabled_at;
DROP INDEX sessions_user;
ALTER TABLE sessions DROP COLUMN last_seen_at;
