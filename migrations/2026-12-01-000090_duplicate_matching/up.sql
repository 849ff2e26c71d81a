-- The keyed digest of the sender's canonical name plus company (both given), matched like
-- the email and phone digests (which from now on digest the canonical forms: E.164 phone,
-- folded email without +tag). `onceform duplicates rescreen` brings older rows' digests up to date.
ALTER TABLE submissions ADD COLUMN name_digest TEXT;
CREATE INDEX submissions_name_digest ON submissions (form, name_digest, received_at);
