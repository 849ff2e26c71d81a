ALTER TABLE submissions DROP COLUMN form_version;
DROP TABLE form_versions;
