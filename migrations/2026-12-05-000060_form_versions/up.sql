-- Every version of every form seen in force (`config::definition`): its definition as
-- canonical JSON, kept so that a retry of a submission accepted under an older version is
-- judged under it, and so that the admin shows what changed. Written insert-or-ignore at
-- each start and reload; never updated.
CREATE TABLE form_versions (
    form TEXT NOT NULL,
    version TEXT NOT NULL,
    definition TEXT NOT NULL,
    first_seen_at TIMESTAMP NOT NULL,
    PRIMARY KEY (form, version)
);

-- The version of its form a submission was accepted under. NULL: accepted before versions
-- were kept (unknown).
ALTER TABLE submissions ADD COLUMN form_version TEXT;
