-- A submission being screened has one pair row, not one per candidate: `original_id` is its
-- most recent candidate and `candidates` the others' IDs, comma-separated, most recent first.
-- The screener keeps one of them (or none) and clears the column. NULL once screened, and on
-- the rows written before this column (one row per candidate).
ALTER TABLE duplicate_pairs ADD COLUMN candidates TEXT;
