ALTER TABLE duplicate_pairs DROP COLUMN candidates;
