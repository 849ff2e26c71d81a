ALTER TABLE submissions DROP COLUMN locale;
