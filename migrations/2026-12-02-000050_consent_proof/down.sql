ALTER TABLE submissions DROP COLUMN consent_json;
