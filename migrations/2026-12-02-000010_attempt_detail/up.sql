-- What the vendor said of a refused attempt (its error message or the start of its body,
-- at most 500 bytes, one line): shown on the admin's submission and event pages.
ALTER TABLE effect_attempts ADD COLUMN detail TEXT;
