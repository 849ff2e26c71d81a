ALTER TABLE submissions DROP COLUMN test;
