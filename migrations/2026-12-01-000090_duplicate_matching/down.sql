DROP INDEX submissions_name_digest;
ALTER TABLE submissions DROP COLUMN name_digest;
