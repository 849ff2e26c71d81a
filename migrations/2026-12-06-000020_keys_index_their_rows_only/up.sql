-- A phone's and a journey's index hold only the submissions that have one: most have
-- neither (the phone is optional on most forms, the journey a static site's choice), and
-- every accept wrote an entry for its NULLs into both. Every query of these indexes names
-- a value (`phone_digest = …`, `journey_id = …`), which implies IS NOT NULL, so SQLite and
-- PostgreSQL both still choose them.
DROP INDEX submissions_phone_digest;
CREATE INDEX submissions_phone_digest ON submissions (form, phone_digest, received_at)
    WHERE phone_digest IS NOT NULL;
DROP INDEX submissions_journey;
CREATE INDEX submissions_journey ON submissions (journey_id) WHERE journey_id IS NOT NULL;
