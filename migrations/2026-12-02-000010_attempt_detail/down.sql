ALTER TABLE effect_attempts DROP COLUMN detail;
