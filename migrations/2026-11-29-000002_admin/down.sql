ALTER TABLE side_effects DROP COLUMN held;
ALTER TABLE submissions DROP COLUMN duplicate_of;
DROP TABLE duplicate_pairs;
DROP TABLE audit_log;
DROP TABLE sessions;
DROP TABLE users;
