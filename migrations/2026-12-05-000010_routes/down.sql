ALTER TABLE submissions DROP COLUMN route;
