-- Proof of consent kept on a tombstone: when a submission's content is purged (retention) or
-- erased, the values of its form's `consent` fields (the versions of the texts agreed to, no
-- personal data) move here as a JSON object {field: version}; the time of consent is the
-- row's `received_at`. NULL while the content is stored, and for forms without consent.
ALTER TABLE submissions ADD COLUMN consent_json TEXT;
