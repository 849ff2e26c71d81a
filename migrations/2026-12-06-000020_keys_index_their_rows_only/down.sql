DROP INDEX submissions_journey;
CREATE INDEX submissions_journey ON submissions (journey_id);
DROP INDEX submissions_phone_digest;
CREATE INDEX submissions_phone_digest ON submissions (form, phone_digest, received_at);
