ALTER TABLE submissions DROP COLUMN spam_reason;
