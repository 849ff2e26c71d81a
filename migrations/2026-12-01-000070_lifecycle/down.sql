DROP TABLE purge_totals;
DROP TABLE purge_passes;
DROP INDEX submissions_content_kept;
DROP INDEX submissions_journey;
ALTER TABLE submissions DROP COLUMN journey_id;
