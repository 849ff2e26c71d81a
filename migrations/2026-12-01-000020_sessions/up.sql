-- Sessions with a lifecycle: an idle timeout (last_seen_at), disabled users, and a
-- password that must be changed at the next sign-in (the generated first-start one).

ALTER TABLE sessions ADD COLUMN last_seen_at TIMESTAMP;
UPDATE sessions SET last_seen_at = created_at;
CREATE INDEX sessions_user ON sessions (user_id);

ALTER TABLE users ADD COLUMN disabled_at TIMESTAMP;
ALTER TABLE users ADD COLUMN must_change_password BOOLEAN NOT NULL DEFAULT FALSE;
